//! A person's day with the CLI: readers answered while a writer runs, a second writer told who
//! holds the data dir, links, and a mistyped path that leaves nothing behind.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{json_lines, told, wait_for, Sandbox};

/// A long ingest (every batch of points paused 4 s by a failpoint, so that it outlasts the checks below
/// on a loaded machine, as a big book would take
/// its time) is the data dir's writer: `status` shows its command and progress, `search`
/// answers from what is committed, another `ingest` is refused naming the holder (exit 75),
/// and one with `--wait` runs once the first ends.
#[test]
fn readers_answer_during_a_write_and_a_second_writer_is_told_who_holds_it() {
    let sb = Sandbox::new();
    let first = sb.write(
        "first/tides.txt",
        b"The harbour master publishes the spring tide tables every March.\n",
    );
    let (_, summary, code) = sb.ingest(&[first.parent().unwrap()]);
    assert_eq!(code, 0, "{summary}");
    for n in 0..40 {
        sb.write(
            &format!("more/note-{n:02}.txt"),
            format!("Logbook note {n}: the lighthouse keeper checked lamp number {n} at dusk.\n")
                .repeat(30)
                .as_bytes(),
        );
    }
    let mut writer = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--checkpoint-ms", "100"])
        .arg(sb.path("more"))
        .arg("--data-dir")
        .arg(sb.data_dir())
        .env(ingest_base::failpoint::ENV, "store.upsert=1:pause4000")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The writer's status: its command and its progress, through its socket.
    let mut held = serde_json::Value::Null;
    let seen = wait_for(Duration::from_secs(120), || {
        held = sb.try_status().unwrap_or_default();
        held.pointer("/daemon/progress/files_found")
            .and_then(|v| v.as_u64())
            .is_some_and(|n| n > 0)
    });
    assert!(seen.is_some(), "no progress in status: {held}");
    let command = held["daemon"]["command"].as_str().unwrap();
    assert!(
        command.starts_with("ingest ") && command.ends_with("more"),
        "{held}"
    );
    let pid = held["daemon"]["pid"].as_u64().unwrap();
    assert_eq!(pid, u64::from(writer.id()), "{held}");
    let text = sb.run(&["status"]);
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(shown.contains("writing:   `ingest "), "{}", told(&text));
    assert!(shown.contains("progress:  "), "{}", told(&text));

    // A search answers from what is committed, while the writer still runs.
    let out = sb.run(&["search", "--json", "--min-score", "0", "spring tide tables"]);
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let hits = crate::util::search_hits(&out);
    assert!(
        hits.iter()
            .any(|h| h["locator"].as_str().unwrap().ends_with("tides.txt")),
        "{hits:?}"
    );
    assert!(
        writer.try_wait().unwrap().is_none(),
        "the writer ended too soon"
    );

    // A second writer is told who holds the data dir, and touches nothing.
    let other = sb.write("other/a.txt", b"A second writer's file.\n");
    let out = sb.run(&[other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(75), "{}", told(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("(pid {pid}, for ")) && err.contains("`ingest "),
        "{}",
        told(&out)
    );
    assert!(!err.contains("WouldBlock") && !err.contains("WAL"), "{err}");
    // With --wait it queues behind the writer and runs when it ends.
    let waiter = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--wait"])
        .arg(&other)
        .arg("--data-dir")
        .arg(sb.data_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let wrote = writer.wait_with_output().unwrap();
    assert!(wrote.status.success(), "{}", told(&wrote));
    let waited = waiter.wait_with_output().unwrap();
    assert!(waited.status.success(), "{}", told(&waited));
    assert!(
        String::from_utf8_lossy(&waited.stderr).contains("waiting: "),
        "{}",
        told(&waited)
    );
    let lines = json_lines(&waited);
    assert!(
        lines.iter().any(|l| l["locator"]
            .as_str()
            .is_some_and(|s| s.ends_with("other/a.txt"))
            && l["status"] == "indexed"),
        "{}",
        told(&waited)
    );
}

/// `ingest typo.pdf`: said, exit 3, and no data dir made.
#[test]
fn a_path_that_is_not_there_leaves_no_data_dir_behind() {
    let sb = Sandbox::new();
    let out = sb.run(&[sb.path("nonexistent.pdf").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3), "{}", told(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no such file or folder"),
        "{}",
        told(&out)
    );
    assert!(!sb.data_dir().exists());
}

/// A folder with links exits 0 (each link `ignored`, saying how to follow it); with
/// --follow-links the links inside the folder are read and one leading out is not.
#[test]
fn links_in_a_folder_are_ignored_or_followed_inside_it() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write("docs/real/pier.txt", b"The pier lamps are lit at dusk.\n");
    sb.write("outside.txt", b"Nothing for this index.\n");
    std::os::unix::fs::symlink(docs.join("real/pier.txt"), docs.join("pier-link.txt")).unwrap();
    std::os::unix::fs::symlink(sb.path("outside.txt"), docs.join("out.txt")).unwrap();
    let (lines, summary, code) = sb.ingest(&[&docs]);
    assert_eq!(code, 0, "{summary}");
    let status_of = |lines: &[serde_json::Value], name: &str| -> String {
        lines
            .iter()
            .find(|l| l["locator"].as_str().is_some_and(|s| s.ends_with(name)))
            .map(|l| format!("{} {}", l["status"].as_str().unwrap(), l["reason"]))
            .unwrap_or_default()
    };
    assert!(
        status_of(&lines, "pier-link.txt").starts_with("ignored \"link: not followed"),
        "{lines:?}"
    );
    let (lines, summary, code) = sb.ingest_with(&["--follow-links"], &[&docs]);
    assert_eq!(code, 0, "{summary}");
    // Read as its target: the same content, so a duplicate of it.
    assert!(
        status_of(&lines, "pier-link.txt").starts_with("duplicate"),
        "{lines:?}"
    );
    assert!(
        status_of(&lines, "out.txt").starts_with("ignored \"link: leads outside"),
        "{lines:?}"
    );
}
