//! `ingest mcp` through the official Python MCP client: tests/mcp/check_tools.py checks every
//! tool against docs/TOOLS.md (budgets on the bytes received, cursors rebuilding texts exactly
//! over many budgets, browse and search paging, `--tools`, scope isolation, the 1000-page PDF
//! of scripts/make-big-pdf.py) on data prepared here with the real binary: once on a data
//! directory the CLI filled, once while `ingest watch` holds it. The script prints figures
//! (answer sizes and milliseconds for the big PDF); they are never asserted.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::*;

const ALICE: &str = "alice";
const BOB: &str = "bob";

/// A hang guard for the daemon's first sync (it embeds the big PDF: about 1 000 chunks).
const SYNC_GUARD: Duration = Duration::from_secs(1200);

/// Only scope B's file holds this sentence (the script reads it from the file's first line).
const BOB_SECRET: &str =
    "The spare key to the signal house lies under the blue flowerpot by the boathouse door.\n";
/// The same bytes are `a/twin-alice.txt` in scope A and `b/twin-bob.txt` in scope B.
const TWIN: &str = "The winter ferry timetable changes on the first Monday of November.\n\
                    Extra sailings run on Fridays while the fjord is free of ice.\n";

/// The venv `make deps` creates, holding the pinned PyPI `mcp` client.
fn python() -> PathBuf {
    let py = repo_dir().join(".venv-test/bin/python");
    assert!(
        py.exists(),
        "{} is missing: run `make deps` (it creates .venv-test with the pinned PyPI `mcp` \
         client these tests drive `ingest mcp` with; `make test` runs it first)",
        py.display()
    );
    py
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The folder laid out as tests/mcp/check_tools.py expects it.
struct Layout {
    root: PathBuf,
    big: PathBuf,
    expect: PathBuf,
}

impl Layout {
    fn a(&self) -> PathBuf {
        self.root.join("a")
    }
}

/// Ingest `paths` as `user`; every file must be indexed.
fn ingest_as(sb: &Sandbox, user: &str, paths: &[&Path]) -> Vec<serde_json::Value> {
    let (lines, summary, code) = sb.ingest_with(&["--user", user], paths);
    assert_eq!(code, 0, "ingest as {user}: {summary} {lines:#?}");
    assert!(
        lines.iter().all(|l| l["status"] == "indexed"),
        "ingest as {user}: {lines:#?}"
    );
    lines
}

/// `s/a/` (fixtures/docs, fixtures/archives, survey-report.pdf, the big PDF, twin-alice.txt),
/// `s/b/` and `s/shared/`; scope B's files and both notes in `s/shared/` ingested (B first,
/// so that the content both scopes hold was first seen under B's name). `s/a/` itself is
/// left to the caller.
fn prepare(sb: &Sandbox) -> Layout {
    let root = sb.path("s");
    let layout = Layout {
        big: root.join("a/big.pdf"),
        expect: sb.path("big.json"),
        root,
    };
    let a = layout.a();
    copy_dir(&fixtures().join("docs"), &a.join("docs"));
    copy_dir(&fixtures().join("archives"), &a.join("archives"));
    std::fs::copy(
        fixtures().join("formats/survey-report.pdf"),
        a.join("survey-report.pdf"),
    )
    .unwrap();
    let made = Command::new(python())
        .arg(repo_dir().join("scripts/make-big-pdf.py"))
        .arg(&layout.big)
        .arg("--expect")
        .arg(&layout.expect)
        .output()
        .expect("run scripts/make-big-pdf.py");
    assert!(
        made.status.success(),
        "make-big-pdf.py: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    println!("{}", String::from_utf8_lossy(&made.stdout).trim());
    sb.write("s/a/twin-alice.txt", TWIN.as_bytes());
    sb.write(
        "s/shared/note-alice.txt",
        b"Alice's note: the anemometer on the signal house needs new bearings.\n",
    );

    sb.write("s/b/secret-bob.txt", BOB_SECRET.as_bytes());
    sb.write("s/b/twin-bob.txt", TWIN.as_bytes());
    sb.write(
        "s/b/pack-bob.zip",
        &zip_of(&[(
            "plans-bob.txt",
            b"Plans for the new boathouse: cedar cladding, two slipways and a loft for nets.\n",
        )]),
    );
    sb.write(
        "s/shared/note-bob.txt",
        b"Bob's note: order more diesel for the generator before the storm season.\n",
    );

    ingest_as(sb, BOB, &[&layout.root.join("b")]);
    ingest_as(sb, BOB, &[&layout.root.join("shared/note-bob.txt")]);
    ingest_as(sb, ALICE, &[&layout.root.join("shared/note-alice.txt")]);
    layout
}

/// Run tests/mcp/check_tools.py on the sandbox's data directory; its output is printed, and
/// it must exit 0.
fn run_checks(sb: &Sandbox, layout: &Layout) {
    let started = std::time::Instant::now();
    let out = Command::new(python())
        .arg(repo_dir().join("tests/mcp/check_tools.py"))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_ingest"))
        .arg("--data-dir")
        .arg(sb.data_dir())
        .arg("--root")
        .arg(&layout.root)
        .args(["--scope-a", ALICE, "--scope-b", BOB])
        .arg("--big-pdf")
        .arg(&layout.big)
        .arg("--big-pdf-expect")
        .arg(&layout.expect)
        .current_dir(repo_dir())
        .env_remove(ingest_base::failpoint::ENV)
        .output()
        .expect("run tests/mcp/check_tools.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    eprintln!("{stderr}");
    println!("check_tools.py took {:.1?}", started.elapsed());
    let failed = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("FAILED:"))
        .unwrap_or("(no FAILED line: see its output above)");
    assert!(
        out.status.success(),
        "tests/mcp/check_tools.py exited with {:?}: {failed}",
        out.status.code()
    );
}

#[test]
fn the_tools_answer_by_the_contract_over_mcp() {
    let sb = Sandbox::new();
    let layout = prepare(&sb);
    let started = std::time::Instant::now();
    let lines = ingest_as(&sb, ALICE, &[&layout.a()]);
    let big = by_name(&lines, "/a/big.pdf");
    println!(
        "ingesting s/a/ (with the {} byte big PDF, {} chunks) took {:.1?}",
        std::fs::metadata(&layout.big).unwrap().len(),
        big["chunks"],
        started.elapsed()
    );
    run_checks(&sb, &layout);
}

#[test]
fn the_tools_answer_by_the_contract_while_ingest_watch_runs() {
    let sb = Sandbox::new();
    let layout = prepare(&sb);
    let daemon = Daemon::start_with(&sb, &[&layout.a()], &["--user", ALICE], &[]);
    let synced = wait_for(SYNC_GUARD, || {
        sb.try_status().is_some_and(|st| {
            st["daemon"]["last_sync"]["summary"]["files"].is_number()
                && st["points"] == st["catalog"]["chunks"]
        })
    });
    let took = synced.unwrap_or_else(|| {
        panic!(
            "the daemon's first sync did not end within {SYNC_GUARD:?}: {:?}\n{}",
            sb.try_status(),
            std::fs::read_to_string(sb.path("daemon.err")).unwrap_or_default()
        )
    });
    println!("the daemon's first sync of s/a/ took {took:.1?}");
    run_checks(&sb, &layout);
    assert_eq!(daemon.stop().code(), Some(0), "clean stop on SIGTERM");
}
