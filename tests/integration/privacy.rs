//! Owner-only data and no leftovers: the data directory, everything in it and the daemon's
//! socket are the owner's alone; content indexes leave with their content; a daemon whose
//! sync fails retries instead of ending; the daemon answers a bounded number of clients.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use crate::util::*;

const WITHIN: Duration = Duration::from_secs(30);

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every entry under `dir` (itself included) with its mode and whether it is a folder;
/// sockets are left out (their mode is checked on their own).
fn modes_under(dir: &Path) -> Vec<(std::path::PathBuf, u32, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.file_type().is_socket() {
            continue;
        }
        out.push((p.clone(), meta.permissions().mode() & 0o777, meta.is_dir()));
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    out
}

/// Folders `0700`, files `0600`, everywhere under `dir`.
fn assert_owner_only(dir: &Path) {
    let entries = modes_under(dir);
    let wrong: Vec<_> = entries
        .iter()
        .filter(|(_, m, is_dir)| *m != if *is_dir { 0o700 } else { 0o600 })
        .collect();
    assert!(wrong.is_empty(), "not owner-only: {wrong:#?}");
}

/// The number of content indexes (`content/*.json`) in the data directory.
fn content_files(sb: &Sandbox) -> usize {
    std::fs::read_dir(sb.data_dir().join("content"))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0)
}

/// A daemon answers: its status carries a `daemon` part.
fn daemon_status(sb: &Sandbox) -> Option<serde_json::Value> {
    sb.try_status().filter(|st| st.get("daemon").is_some())
}

#[test]
fn data_dir_files_and_socket_are_owner_only() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write("docs/a.txt", b"The ferry to the island leaves at noon.\n");
    sb.write(
        "docs/sub/b.md",
        b"# Tides\nLow tide uncovers the causeway.\n",
    );
    let (_, summary, code) = sb.ingest(&[&docs]);
    assert_eq!((code, summary["indexed"].as_u64()), (0, Some(2)));
    let data = sb.data_dir();
    let entries = modes_under(&data);
    // What the check covers: the catalog, content indexes and the shard's own files.
    assert!(data.join("catalog.sqlite").is_file());
    assert_eq!(content_files(&sb), 2);
    let shard_files = entries
        .iter()
        .filter(|(p, _, d)| !d && p.starts_with(data.join("shard")))
        .count();
    assert!(shard_files >= 3, "shard files: {entries:#?}");
    assert_owner_only(&data);

    // A data directory that others can read (an older version, a hand-made copy) is closed
    // on the next open, everything below it too, with a warning.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        data.join("catalog.sqlite"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    std::fs::set_permissions(data.join("shard"), std::fs::Permissions::from_mode(0o775)).unwrap();
    let out = sb.run(&["status", "--json"]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("readable by other users"),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_owner_only(&data);

    // The daemon's socket, while it runs.
    let daemon = Daemon::start(&sb, &[&docs]);
    wait_for(WITHIN, || daemon_status(&sb).is_some()).expect("the daemon answers");
    let socket = data.join("daemon.sock");
    assert!(std::fs::symlink_metadata(&socket)
        .unwrap()
        .file_type()
        .is_socket());
    assert_eq!(mode(&socket), 0o600);
    assert_owner_only(&data);
    assert!(daemon.stop().success());
}

#[test]
fn content_indexes_leave_with_their_content() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    let text = |s: &str| format!("{s} is written on this page and nowhere else.\n");
    sb.write("docs/a.txt", text("Alpha").as_bytes());
    sb.write("docs/b.txt", text("Bravo").as_bytes());
    sb.write("docs/c.txt", text("Charlie").as_bytes());
    sb.write("docs/d.txt", text("Alpha").as_bytes()); // the same bytes as a.txt
    let data = sb.data_dir();
    let check = |step: &str, expected: usize| {
        let (_, summary, code) = sb.ingest(&[&docs]);
        assert_eq!(code, 0, "{step}: {summary}");
        let st = sb.status();
        assert_eq!(
            st["catalog"]["distinct_contents"].as_u64(),
            Some(expected as u64),
            "{step}: {st}"
        );
        assert_eq!(content_files(&sb), expected, "{step}: content/*.json");
        assert_store_matches_catalog(&sb);
    };
    check("first ingest", 3);
    std::fs::write(docs.join("a.txt"), text("Alpha two")).unwrap();
    check("a changed (d keeps the old bytes)", 4);
    std::fs::remove_file(docs.join("d.txt")).unwrap();
    check("d deleted (the old bytes are held by no file)", 3);
    std::fs::rename(docs.join("b.txt"), docs.join("e.txt")).unwrap();
    check("b renamed to e", 3);
    std::fs::remove_file(docs.join("c.txt")).unwrap();
    check("c deleted", 2);
    std::fs::write(docs.join("e.txt"), text("Alpha two")).unwrap();
    check("e given a's bytes", 1);
    std::fs::write(docs.join("a.txt"), text("Delta")).unwrap();
    std::fs::write(docs.join("e.txt"), text("Echo")).unwrap();
    check("both changed at once", 2);

    // Content indexes are keyed by hash alone, shared by scopes: one goes when no scope
    // holds its bytes.
    let ingest_as = |user: &str| {
        let out = sb.run(&["--json", "--user", user, docs.to_str().unwrap()]);
        assert!(out.status.success(), "{}", crate::util::told(&out));
    };
    ingest_as("other");
    assert_eq!(content_files(&sb), 2);
    std::fs::remove_file(docs.join("a.txt")).unwrap();
    ingest_as("local");
    assert_eq!(content_files(&sb), 2, "the other scope still holds Delta");
    ingest_as("other");
    assert_eq!(content_files(&sb), 1, "no scope holds Delta any more");
    assert_store_matches_catalog(&sb);
    assert!(data.join("content").is_dir());
}

#[test]
fn a_failed_sync_is_retried_and_the_daemon_lives_on() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write(
        "docs/a.txt",
        b"The orchard's pear trees blossom in April.\n",
    );
    // The first sync (at start) goes through, the second fails, the retry succeeds.
    let mut daemon = Daemon::start_with(
        &sb,
        &[&docs],
        &[],
        &[(ingest_base::failpoint::ENV, "sync.start=2:error")],
    );
    wait_for(WITHIN, || {
        daemon_status(&sb).is_some_and(|st| st["daemon"]["syncs"] == 1)
    })
    .expect("the first sync");
    sb.write(
        "docs/b.txt",
        b"The beekeeper checks the hives every Sunday at dawn.\n",
    );
    let err = || std::fs::read_to_string(sb.path("daemon.err")).unwrap_or_default();
    wait_for(WITHIN, || err().contains("sync failed")).expect("the failed sync is logged");
    assert!(
        daemon.child.try_wait().unwrap().is_none(),
        "the daemon ended: {}",
        err()
    );
    let st = wait_for_value(|| {
        daemon_status(&sb).filter(|st| st["daemon"]["last_sync"]["cause"] == "retry")
    })
    .unwrap_or_else(|| panic!("no retry: {}", err()));
    assert!(st["daemon"]["syncs"].as_u64() >= Some(2), "{st}");
    assert_eq!(st["catalog"]["indexed"], 2, "{st}");
    assert_eq!(st["points"], st["catalog"]["chunks"], "{st}");
    let hits = sb.search("when are the hives checked", 3);
    assert!(
        hits[0]["locator"].as_str().unwrap().contains("/docs/b.txt"),
        "{hits:#?}"
    );
    assert!(daemon.child.try_wait().unwrap().is_none());
    assert!(daemon.stop().success());
}

/// Poll `get` every 50 ms until it gives a value (or `WITHIN` passes).
fn wait_for_value<T>(mut get: impl FnMut() -> Option<T>) -> Option<T> {
    let mut out = None;
    wait_for(WITHIN, || {
        out = get();
        out.is_some()
    });
    out
}

#[test]
fn the_daemon_answers_a_bounded_number_of_clients() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write("docs/a.txt", b"The lantern is lit at dusk.\n");
    let daemon = Daemon::start(&sb, &[&docs]);
    wait_for(WITHIN, || daemon_status(&sb).is_some()).expect("the daemon answers");
    let socket = sb.data_dir().join("daemon.sock");
    // Clients that connect and say nothing hold their place until they time out. A client
    // of an earlier probe may still hold its place for a moment, so one of them can be
    // refused instead: then that round does not test the bound, and it is played again.
    for round in 1..=5 {
        let idle: Vec<_> = (0..ingest_serve::daemon::MAX_CONNECTIONS)
            .map(|_| std::os::unix::net::UnixStream::connect(&socket).unwrap())
            .collect();
        let out = sb.run(&["status", "--json"]);
        if !out.status.success() {
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("busy"),
                "stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            drop(idle);
            wait_for(WITHIN, || daemon_status(&sb).is_some()).expect("answers again");
            assert!(daemon.stop().success());
            return;
        }
        // Answered: only right if an idle client was refused. The daemon accepts in order,
        // and a refusal is written before the next client is accepted, so such a client's
        // reply (or its end) is waiting by now.
        let refused = idle.iter().filter(|c| was_refused(c)).count();
        assert!(
            refused > 0,
            "answered beyond the limit: all {} idle clients held a place (round {round})",
            idle.len()
        );
        eprintln!("round {round}: {refused} idle client(s) refused (an earlier client held its place): again");
        drop(idle);
        wait_for(WITHIN, || daemon_status(&sb).is_some()).expect("answers again");
    }
    panic!("in 5 rounds, never all idle clients held a place at once");
}

/// Whether the daemon refused this client: it has a reply, or the connection ended, without
/// having asked anything.
fn was_refused(client: &std::os::unix::net::UnixStream) -> bool {
    use std::io::Read;
    client
        .set_read_timeout(Some(std::time::Duration::from_millis(50)))
        .unwrap();
    let mut byte = [0u8; 1];
    // Any outcome but a timeout: a reply (1 byte) or a close (0 bytes), or a reset.
    let read = (&*client).read(&mut byte).map_err(|e| e.kind());
    !matches!(
        read,
        Err(std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    )
}

#[test]
fn a_repair_deletes_content_indexes_no_entry_holds() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write("docs/a.txt", b"The harbour master keeps the tide tables.\n");
    sb.write("docs/b.txt", b"The lighthouse keeper winds the clock.\n");
    // Killed right after the first content index is written, before anything holds it.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
        .arg("--data-dir")
        .arg(sb.data_dir())
        .arg(&docs)
        .env(ingest_base::failpoint::ENV, "content.written=1")
        .output()
        .expect("run ingest");
    assert!(!out.status.success(), "the failpoint did not fire");
    assert_eq!(content_files(&sb), 1);
    // The next open repairs: no catalog entry holds that content, so its index goes.
    let st = sb.status();
    assert_eq!(st["catalog"]["distinct_contents"], 0, "{st}");
    assert_eq!(content_files(&sb), 0);
    let (_, summary, code) = sb.ingest(&[&docs]);
    assert_eq!((code, summary["indexed"].as_u64()), (0, Some(2)));
    assert_eq!(content_files(&sb), 2);
}
