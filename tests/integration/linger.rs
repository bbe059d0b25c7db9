//! The lingering reader (`--linger`, crates/cli/src/linger.rs): a read command leaves a
//! reader behind that answers the next ones through the data dir's socket; a command that
//! opens the store itself makes it step aside first; it ends when idle and when its data dir
//! is gone; a writing daemon does not step aside. The rest of the suite runs with
//! `INGEST_LINGER=0` (.cargo/config.toml): each test here sets it itself.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use crate::util::{search_hits, told, wait_for, Daemon, Sandbox};

/// `ingest ARGS --data-dir D` with `INGEST_LINGER=secs`.
fn lingering(sb: &Sandbox, secs: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(args)
        .arg("--data-dir")
        .arg(sb.data_dir())
        .env("INGEST_LINGER", secs)
        .output()
        .expect("run ingest")
}

/// The reader holding the data dir, from `status --json` (asked through its socket).
fn reader_pid(sb: &Sandbox) -> Option<u64> {
    let status = sb.try_status()?;
    (status.pointer("/daemon/lingering") == Some(&serde_json::Value::Bool(true)))
        .then(|| status.pointer("/daemon/pid").and_then(|v| v.as_u64()))
        .flatten()
}

/// Gone, or a zombie no one reaped (its parent, the read command, has ended).
fn ended(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                == Some("Z")
        }
    }
}

fn indexed(sb: &Sandbox, dir: &Path) {
    let (_, summary, code) = sb.ingest(&[dir]);
    assert_eq!(code, 0, "{summary}");
}

#[test]
fn a_search_leaves_a_reader_that_answers_the_next_and_steps_aside_for_a_writer() {
    let sb = Sandbox::new();
    let tides = sb.write(
        "docs/tides.txt",
        b"The harbour master publishes the spring tide tables every March.\n",
    );
    // The suite's own setting (.cargo/config.toml), which keeps the other tests' read
    // commands from leaving readers behind.
    assert_eq!(std::env::var("INGEST_LINGER").as_deref(), Ok("0"));
    indexed(&sb, tides.parent().unwrap());
    let out = sb.run(&["search", "--json", "spring tide tables"]);
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    assert_eq!(reader_pid(&sb), None, "INGEST_LINGER=0 leaves no reader");

    // The first search opens the index in a reader it leaves behind, and is answered by it.
    let out = lingering(
        &sb,
        "120",
        &["search", "--json", "-v", "spring tide tables"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let hits = search_hits(&out);
    assert!(
        hits[0]["locator"].as_str().unwrap().contains("tides.txt"),
        "{hits:?}"
    );
    let pid =
        reader_pid(&sb).unwrap_or_else(|| panic!("no reader after the search: {}", told(&out)));
    let text = sb.run(&["status"]);
    assert!(
        String::from_utf8_lossy(&text.stdout).contains(&format!("reader:    pid {pid}, ")),
        "{}",
        told(&text)
    );
    // The next read commands are answered by it (even with lingering off for them).
    let again = lingering(
        &sb,
        "0",
        &["search", "--json", "-v", "tide tables in March"],
    );
    assert_eq!(again.status.code(), Some(0), "{}", told(&again));
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(
        log.contains("answered_by") && log.contains("daemon"),
        "{}",
        told(&again)
    );
    let browse = lingering(&sb, "120", &["browse", "--json"]);
    assert_eq!(browse.status.code(), Some(0), "{}", told(&browse));
    assert_eq!(reader_pid(&sb), Some(pid), "one reader, still the same");

    // `files` opens the store itself: the reader steps aside (and has ended by then).
    let files = lingering(&sb, "120", &["files", "--json"]);
    assert_eq!(files.status.code(), Some(0), "{}", told(&files));
    assert!(ended(pid), "the reader {pid} still runs after `files`");

    // A writer after another search: the new reader steps aside, the writer indexes.
    let out = lingering(&sb, "120", &["search", "--json", "harbour master"]);
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let second = reader_pid(&sb).expect("a reader after the second search");
    let moon = sb.write(
        "docs/moon.txt",
        b"Neap tides follow the first and third quarter of the moon.\n",
    );
    let (lines, summary, code) = sb.ingest(&[moon.parent().unwrap()]);
    assert_eq!(code, 0, "{summary}");
    assert!(
        lines.iter().any(|l| l["locator"]
            .as_str()
            .is_some_and(|s| s.ends_with("moon.txt"))
            && l["status"] == "indexed"),
        "{lines:?}"
    );
    assert!(
        ended(second),
        "the reader {second} still runs after the writer"
    );
    let found = sb.search("quarter of the moon", 3);
    assert!(
        found[0]["locator"].as_str().unwrap().contains("moon.txt"),
        "{found:?}"
    );
}

#[test]
fn a_reader_ends_when_idle_and_when_its_data_dir_is_gone() {
    let sb = Sandbox::new();
    let tides = sb.write(
        "docs/tides.txt",
        b"Spring tide tables are published in March.\n",
    );
    indexed(&sb, tides.parent().unwrap());
    let out = lingering(&sb, "2", &["search", "--json", "spring tide"]);
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let pid = reader_pid(&sb).expect("a reader after the search");
    let gone = wait_for(Duration::from_secs(60), || ended(pid));
    assert!(
        gone.is_some(),
        "the reader {pid} did not end after 2 s idle"
    );
    assert!(
        !ingest_serve::daemon::socket_path(&sb.data_dir()).exists(),
        "the reader left its socket behind"
    );

    let out = lingering(&sb, "600", &["search", "--json", "spring tide"]);
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let pid = reader_pid(&sb).expect("a reader after the search");
    std::fs::remove_dir_all(sb.data_dir()).unwrap();
    let gone = wait_for(Duration::from_secs(30), || ended(pid));
    assert!(gone.is_some(), "the reader {pid} outlived its data dir");
}

/// A reader killed while it answers (here by a failpoint at its second tool call, as the
/// out-of-memory killer would) costs the command nothing: it is answered locally.
#[test]
fn a_reader_that_dies_before_answering_is_answered_around() {
    let sb = Sandbox::new();
    let tides = sb.write(
        "docs/tides.txt",
        b"The harbour master publishes the spring tide tables every March.\n",
    );
    indexed(&sb, tides.parent().unwrap());
    // The reader inherits the failpoint from the search that starts it.
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["search", "--json", "spring tide tables", "--data-dir"])
        .arg(sb.data_dir())
        .env("INGEST_LINGER", "120")
        .env(ingest_base::failpoint::ENV, "tool.run=2")
        .output()
        .expect("run ingest");
    assert_eq!(out.status.code(), Some(0), "{}", told(&out));
    let pid = reader_pid(&sb).unwrap_or_else(|| panic!("no reader: {}", told(&out)));
    let again = lingering(
        &sb,
        "120",
        &["search", "--json", "-v", "tide tables in March"],
    );
    assert_eq!(again.status.code(), Some(0), "{}", told(&again));
    let hits = search_hits(&again);
    assert!(
        hits[0]["locator"].as_str().unwrap().contains("tides.txt"),
        "{hits:?}"
    );
    let log = String::from_utf8_lossy(&again.stderr);
    assert!(
        log.contains("ended before answering") && log.contains("local"),
        "{}",
        told(&again)
    );
    assert!(
        ended(pid),
        "the reader {pid} was to be killed at its second call"
    );
}

/// `StepAside` is a lingering reader's request only: a writing daemon refuses it and keeps
/// its place (a client cannot make `ingest watch` let go of the index).
#[test]
fn a_writing_daemon_does_not_step_aside() {
    let sb = Sandbox::new();
    let docs = sb.write(
        "docs/tides.txt",
        b"Spring tide tables are published in March.\n",
    );
    let daemon = Daemon::start(&sb, &[docs.parent().unwrap()]);
    let socket = ingest_serve::daemon::socket_path(&sb.data_dir());
    let up = wait_for(Duration::from_secs(120), || {
        sb.try_status()
            .is_some_and(|s| s.pointer("/daemon/pid").is_some())
    });
    assert!(up.is_some(), "the daemon did not answer status");
    let asked = ingest_serve::daemon::ask(&socket, &ingest_serve::daemon::Request::StepAside);
    let refused = format!("{asked:?}");
    assert!(
        refused.contains("does not step aside"),
        "a writing daemon answered {refused}"
    );
    let status = sb.status();
    assert_eq!(
        status.pointer("/daemon/pid").and_then(|v| v.as_u64()),
        Some(u64::try_from(daemon.pid()).unwrap()),
        "{status}"
    );
}
