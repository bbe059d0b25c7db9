//! A decoder that panics while an archive is unpacked costs that archive, not the run: the
//! panic is injected with the `unpack.member` failpoint (the second archive member met).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::*;

const ONE: &str = "The first bundled note says the tide tables arrived by the morning ferry.";
const TWO: &str = "The second bundled note lists the paint needed for the boathouse doors.";
const THREE: &str = "The third bundled note asks for a new lamp glass in the east lighthouse.";
const ALPHA: &str = "Alpha memo: the harbour crane was inspected and passed without remarks.";
const ZETA: &str = "Zeta memo: the quay lights are switched to the winter timetable.";

/// A folder with benign files on both sides (in walk order) of a three-member archive.
fn folder(sb: &Sandbox) -> std::path::PathBuf {
    sb.write("in/alpha.txt", ALPHA.as_bytes());
    sb.write(
        "in/bundle.zip",
        &zip_of(&[
            ("one.txt", ONE.as_bytes()),
            ("two.txt", TWO.as_bytes()),
            ("three.txt", THREE.as_bytes()),
        ]),
    );
    sb.write("in/zeta.txt", ZETA.as_bytes());
    sb.path("in")
}

fn ingest(sb: &Sandbox, path: &Path, failpoints: Option<&str>) -> (Vec<Value>, Value, i32) {
    let (lines, summary, code, _) = ingest_all(sb, &[path], failpoints);
    (lines, summary, code)
}

/// `ingest --json PATHS…` with `failpoints` armed: the lines, the summary, the exit code and
/// what the command said. A hang is what the panic boundaries prevent: coreutils' timeout
/// ends one (exit 124).
fn ingest_all(
    sb: &Sandbox,
    paths: &[&Path],
    failpoints: Option<&str>,
) -> (Vec<Value>, Value, i32, String) {
    let mut cmd = Command::new("timeout");
    cmd.args([
        "--signal=KILL",
        "300",
        env!("CARGO_BIN_EXE_ingest"),
        "--json",
    ])
    .arg("--data-dir")
    .arg(sb.data_dir())
    .args(paths)
    .env_remove("INGEST_FAILPOINTS");
    if let Some(f) = failpoints {
        cmd.env("INGEST_FAILPOINTS", f);
    }
    let out = cmd.output().unwrap();
    let mut lines = json_lines(&out);
    let summary = lines
        .pop()
        .unwrap_or_else(|| panic!("no summary line: {}", told(&out)))["summary"]
        .clone();
    (lines, summary, out.status.code().unwrap_or(-1), told(&out))
}

/// The file (locator without its `#line=` part) of the best hit for `text`.
fn top_hit(sb: &Sandbox, text: &str) -> String {
    let hits = sb.search(text, 1);
    let locator = hits
        .first()
        .and_then(|h| h["locator"].as_str())
        .unwrap_or("");
    locator.split('#').next().unwrap_or("").to_string()
}

#[test]
fn a_panic_while_unpacking_fails_that_archive_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let dir = folder(&sb);
    let (lines, summary, code) = ingest(&sb, &dir, Some("unpack.member=2:panic"));
    assert_eq!(code, 2, "{lines:#?}");
    let bundle = by_name(&lines, "/bundle.zip");
    assert_eq!(bundle["status"], "failed", "{bundle}");
    let reason = bundle["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("unpacking panicked: failpoint unpack.member (hit 2)"),
        "{reason}"
    );
    // The member routed before the panic is indexed; the rest of the archive has no line.
    assert_eq!(by_name(&lines, "/bundle.zip!/one.txt")["status"], "indexed");
    assert!(
        !lines.iter().any(|l| l["locator"]
            .as_str()
            .is_some_and(|l| l.ends_with("two.txt") || l.ends_with("three.txt"))),
        "{lines:#?}"
    );
    for name in ["/alpha.txt", "/zeta.txt"] {
        assert_eq!(by_name(&lines, name)["status"], "indexed", "{name}");
    }
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(summary["failed"], 1, "{summary}");
    assert_eq!(summary["indexed"], 3, "{summary}");
    assert!(top_hit(&sb, ALPHA).ends_with("/alpha.txt"));
    assert!(top_hit(&sb, ZETA).ends_with("/zeta.txt"));
    assert_store_matches_catalog(&sb);

    // The half-unpacked archive was not recorded as unchanged: the next run opens it again
    // and indexes every member.
    let (lines, summary, code) = ingest(&sb, &dir, None);
    assert_eq!(code, 0, "{lines:#?}");
    let bundle = by_name(&lines, "/bundle.zip");
    assert_eq!(bundle["status"], "indexed", "{bundle}");
    assert_eq!(bundle["reason"], "archive: 3 members", "{bundle}");
    assert_eq!(
        by_name(&lines, "/bundle.zip!/one.txt")["status"],
        "unchanged"
    );
    for name in ["/bundle.zip!/two.txt", "/bundle.zip!/three.txt"] {
        assert_eq!(by_name(&lines, name)["status"], "indexed", "{name}");
    }
    assert_eq!(summary["failed"], 0, "{summary}");
    assert!(top_hit(&sb, THREE).ends_with("/bundle.zip!/three.txt"));
    assert!(top_hit(&sb, ONE).ends_with("/bundle.zip!/one.txt"));

    // And now it is recorded: a third run answers it from the catalog.
    let (lines, summary, code) = ingest(&sb, &dir, None);
    assert_eq!(code, 0);
    assert_eq!(summary["indexed"], 0, "{lines:#?}");
    assert_eq!(by_name(&lines, "/bundle.zip")["status"], "unchanged");
    assert_store_matches_catalog(&sb);
}

/// A panic while an input is walked (here injected as the walk of the first folder begins)
/// costs that input one `failed` line, and the run goes on to the next input and ends: it
/// neither hangs nor dies. The folder was not walked to its end, so nothing it held is taken
/// for gone; the next run walks it whole.
#[test]
fn a_panic_while_an_input_is_walked_fails_that_input_and_the_run_goes_on() {
    let sb = Sandbox::new();
    sb.write("first/alpha.txt", ALPHA.as_bytes());
    sb.write("first/one.txt", ONE.as_bytes());
    sb.write("second/zeta.txt", ZETA.as_bytes());
    let (first, second) = (sb.path("first"), sb.path("second"));
    let ingest_both = |failpoints| ingest_all(&sb, &[&first, &second], failpoints);
    let (_, summary, code, out) = ingest_both(None);
    assert_eq!(code, 0, "{out}");
    assert_eq!(summary["indexed"], 3, "{out}");

    std::fs::remove_file(sb.path("first/one.txt")).unwrap();
    sb.write("second/two.txt", TWO.as_bytes());
    let (lines, summary, code, out) = ingest_both(Some("walk.input~first=1:panic"));
    assert_eq!(code, 2, "{out}");
    let first = lines
        .iter()
        .find(|l| l["locator"].as_str().is_some_and(|l| l.ends_with("/first")))
        .unwrap_or_else(|| panic!("no line for the first folder: {out}"));
    assert_eq!(first["status"], "failed", "{first}");
    let reason = first["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("walking it panicked: failpoint walk.input~first (hit 1)"),
        "{reason}"
    );
    assert_eq!(by_name(&lines, "/two.txt")["status"], "indexed", "{out}");
    assert_eq!(summary["failed"], 1, "{out}");
    assert_eq!(summary["removed"].as_u64().unwrap_or(0), 0, "{out}");
    // What the unwalked folder held is still found.
    assert!(top_hit(&sb, ONE).ends_with("/first/one.txt"), "{out}");
    assert!(top_hit(&sb, TWO).ends_with("/second/two.txt"), "{out}");
    assert_store_matches_catalog(&sb);

    // Walked whole again, the deleted file goes.
    let (lines, _, code, out) = ingest_both(None);
    assert_eq!(code, 0, "{out}");
    assert_eq!(by_name(&lines, "/one.txt")["status"], "removed", "{out}");
    assert_store_matches_catalog(&sb);
}
