//! Hostile input, end to end: every fixture of `fixtures/hostile/` (built by
//! `scripts/make-hostile-fixtures.py`, described in `tests/expected/hostile.json`) is ingested
//! on its own by the real binary. The process must end normally (0 or 2, never a signal; a
//! generous hang guard catches a deadline that does not work), and the ledger must hold exactly
//! the expected lines with counts that add up; the benign siblings must be searchable and what
//! must not be read must not be. Each ingest's peak RSS (its workers included) is a bound the
//! unpacker promises: under [`MAX_RSS_KIB`], asserted per fixture. Times are printed as
//! figures, not asserted: they depend on the machine.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Deadline per file used here (the default is 60 s).
const DEADLINE_SECS: u64 = 5;

/// The most resident memory one hostile input may cost the ingest process (or any of its
/// extraction workers): 1 GiB.
const MAX_RSS_KIB: i64 = 1024 * 1024;

/// Run `command` to its end: its output and its peak RSS in KiB (the largest of the process
/// and the children it waited for: the extraction workers), from `wait4`.
#[allow(clippy::zombie_processes)] // reaped by wait4, which std does not know of
fn run_measured(command: &mut Command) -> (std::process::Output, i64) {
    use std::io::Read;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // Both are small (a ledger, a log); read whole, as `Command::output` would.
    let err = std::thread::spawn(move || {
        let mut v = String::new();
        stderr.read_to_string(&mut v).unwrap();
        v.into_bytes()
    });
    let mut out = String::new();
    stdout.read_to_string(&mut out).unwrap();
    let out = out.into_bytes();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value, and wait4 only writes into the two
    // out-parameters, which live until it returns.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    use std::os::unix::process::ExitStatusExt;
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out,
        stderr: err.join().unwrap(),
    };
    (output, usage.ru_maxrss)
}

fn manifest() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(repo_dir().join("tests/expected/hostile.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["fixtures"].as_object().unwrap().clone()
}

fn matches(line: &Value, want: &Value) -> bool {
    let status = line["status"].as_str().unwrap_or_default();
    let status_ok = match want["status"].as_str().unwrap() {
        "failed_or_indexed" => status == "failed" || status == "indexed",
        s => status == s,
    };
    let reason_ok = want["reason_contains"].as_str().is_none_or(|r| {
        line["reason"]
            .as_str()
            .is_some_and(|reason| reason.contains(r))
    });
    status_ok && reason_ok
}

#[test]
fn every_hostile_fixture_ends_normally_with_the_expected_ledger() {
    let dir = fixtures().join("hostile");
    let mut failures = Vec::new();
    let mut times = Vec::new();
    for (name, want) in manifest() {
        let sb = Sandbox::new();
        let path = dir.join(&name);
        let ingest = || {
            run_measured(
                Command::new(env!("CARGO_BIN_EXE_ingest"))
                    .arg("--json")
                    .arg(format!("--extract-timeout={DEADLINE_SECS}"))
                    .arg("--data-dir")
                    .arg(sb.data_dir())
                    .arg(&path),
            )
        };
        let started = Instant::now();
        let (out, rss_kib) = ingest();
        let took = started.elapsed();
        if rss_kib >= MAX_RSS_KIB {
            failures.push(format!(
                "{name}: peak RSS {} MiB, over 1 GiB",
                rss_kib / 1024
            ));
        }
        let code = out.status.code();
        assert!(
            matches!(code, Some(0) | Some(2)),
            "{name}: ended with {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        // A hang guard: ten times one deadline per file that may hang plus the model and
        // store. The ledger says whether the deadline stopped the parser.
        assert!(
            took < Duration::from_secs((DEADLINE_SECS * 3 + 20) * 10),
            "{name}: took {took:?}"
        );
        times.push(format!(
            "{name} {:.1}s {} MiB",
            took.as_secs_f64(),
            rss_kib / 1024
        ));
        let mut lines = json_lines(&out);
        let summary = lines.pop().unwrap()["summary"].clone();
        let root = path.display().to_string();
        // Counts add up to the lines, and the lines to the members.
        let total: u64 = ["indexed", "unchanged", "skipped", "failed", "duplicate"]
            .iter()
            .map(|k| summary[k].as_u64().unwrap())
            .sum();
        assert_eq!(
            total,
            summary["files"].as_u64().unwrap(),
            "{name}: {summary}"
        );
        assert_eq!(total as usize, lines.len(), "{name}: {summary}");
        if let Some(n) = want["lines"].as_u64() {
            assert_eq!(lines.len() as u64, n, "{name}: {lines:#?}");
        }
        // Counts per status, where which line gets which status may vary between runs.
        for (status, n) in want["statuses"].as_object().into_iter().flatten() {
            let got = lines
                .iter()
                .filter(|l| l["status"] == status.as_str())
                .count();
            if Some(got as u64) != n.as_u64() {
                failures.push(format!("{name}: {got} lines {status}, expected {n}"));
            }
        }
        for expected in want["ledger"].as_array().unwrap() {
            let locator = format!("{root}{}", expected["locator"].as_str().unwrap());
            // A shortened name: the manifest gives the start of the locator.
            let by_prefix = expected["locator_prefix"] == true;
            let at = |l: &Value| {
                let got = l["locator"].as_str().unwrap_or_default();
                if by_prefix {
                    got.starts_with(&locator)
                } else {
                    got == locator
                }
            };
            let found = lines.iter().any(|l| at(l) && matches(l, expected));
            if !found {
                let got: Vec<_> = lines.iter().filter(|l| at(l)).collect();
                failures.push(format!("{name}: {expected} not met; lines: {got:?}"));
            }
        }
        for phrase in want["benign_phrases"].as_array().unwrap() {
            let text = phrase["text"].as_str().unwrap();
            let hits = sb.search(text, 1);
            let hit = hits
                .first()
                .and_then(|h| h["locator"].as_str())
                .unwrap_or("");
            let expected = format!("{root}{}", phrase["locator"].as_str().unwrap());
            if !hit.starts_with(&expected) {
                failures.push(format!("{name}: {text:?} found at {hit:?}, not {expected}"));
            }
        }
        for phrase in want["absent_phrases"].as_array().into_iter().flatten() {
            let text = phrase["text"].as_str().unwrap();
            let leaked = sb
                .search(text, 3)
                .iter()
                .any(|h| h["snippet"].as_str().is_some_and(|t| t.contains(text)));
            if leaked {
                failures.push(format!("{name}: {text:?} should not have been read"));
            }
        }
        // Unchanged, the same input gets the same ledger, answered from the catalog.
        let mut again = json_lines(&ingest().0);
        let summary_again = again.pop().unwrap()["summary"].clone();
        let statuses = |lines: &[Value]| {
            let mut s: Vec<String> = lines
                .iter()
                .map(|l| {
                    let status = match l["status"].as_str().unwrap() {
                        "indexed" | "duplicate" => "unchanged",
                        other => other,
                    };
                    format!("{} {status}", l["locator"].as_str().unwrap())
                })
                .collect();
            s.sort();
            s
        };
        if statuses(&again) != statuses(&lines) || summary_again["indexed"] != 0 {
            failures.push(format!(
                "{name}: the second run's ledger differs: {summary_again} vs {summary}"
            ));
        }
    }
    eprintln!("hostile fixtures (time, peak RSS): {}", times.join(", "));
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn a_worker_killed_mid_job_costs_exactly_that_file() {
    let sb = Sandbox::new();
    // A PDF whose forms fan out 30 levels deep: its worker works until it is stopped.
    let attacks = std::fs::read(fixtures().join("hostile/pdf-attacks.zip")).unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(attacks)).unwrap();
    let mut slow = Vec::new();
    std::io::copy(&mut zip.by_name("fanout-forms.pdf").unwrap(), &mut slow).unwrap();
    sb.write("in/slow.pdf", &slow);
    for (i, text) in [
        "The tide table is pinned to the door of the ferry office.",
        "Gulls nest on the roof of the old pilot station every spring.",
        "The diesel generator at the lighthouse is tested on Mondays.",
    ]
    .iter()
    .enumerate()
    {
        sb.write(&format!("in/note-{i}.txt"), text.as_bytes());
    }
    let child = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--extract-timeout=300", "--data-dir"])
        .arg(sb.data_dir())
        .arg(sb.path("in"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until a worker has burnt a second of CPU (only the PDF takes that long), then kill
    // that worker. The loop's limit is a hang guard.
    let started = Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "no busy worker"
        );
        std::thread::sleep(Duration::from_millis(200));
        let busy: Vec<i32> = workers_of(child.id())
            .into_iter()
            .filter(|(_, cpu)| *cpu >= 100)
            .map(|(pid, _)| pid)
            .collect();
        if !busy.is_empty() {
            for pid in busy {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            break;
        }
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "the run completes, one file failed"
    );
    let mut lines = json_lines(&out);
    let summary = lines.pop().unwrap()["summary"].clone();
    assert_eq!(summary["failed"], 1, "{lines:#?}");
    assert_eq!(summary["indexed"], 3, "{lines:#?}");
    let slow = by_name(&lines, "in/slow.pdf");
    assert_eq!(slow["status"], "failed");
    assert!(
        slow["reason"]
            .as_str()
            .unwrap()
            .contains("killed (signal 9)"),
        "{slow}"
    );
    let hit = &sb.search("when is the lighthouse generator tested", 1)[0];
    assert!(
        hit["locator"].as_str().unwrap().contains("in/note-2.txt#"),
        "{hit}"
    );
}

/// The fuzz targets' seeds (`fuzz/seeds/unpack_<ext>/`: inputs that once crashed, hung or
/// bloated the unpacker, such as the 60 000-deep nested mail) unpacked as the fuzz targets do,
/// each on a thread with the walk thread's 2 MiB stack: each ends, within the member limit.
#[test]
fn fuzz_seeds_unpack_without_crashing() {
    use ingest_unpack::{Leaf, Unpacker};
    let seeds = crate::util::repo_dir().join("fuzz/seeds");
    let mut ran = 0;
    for dir in std::fs::read_dir(&seeds).unwrap().flatten() {
        let name = dir.file_name().to_string_lossy().into_owned();
        let ext = name
            .strip_prefix("unpack_")
            .unwrap_or_else(|| panic!("{name}"));
        for seed in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let bytes = std::fs::read(seed.path()).unwrap();
            let top = ingest::Locator::root(format!("input.{ext}"));
            let shown = seed.path().display().to_string();
            let leaves = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || {
                    let limits = ingest::Limits {
                        max_total_bytes: 32 * 1024 * 1024,
                        max_file_bytes: 8 * 1024 * 1024,
                        max_files: 2_000,
                        ..ingest::Limits::default()
                    };
                    let mut leaves = 0u64;
                    Unpacker::new(&limits).expand_bytes(bytes, &top, &mut |leaf| {
                        leaves += 1;
                        if let Leaf::File { locator, .. } = &leaf {
                            assert!(locator.is_within(&top));
                        }
                    });
                    leaves
                })
                .unwrap()
                .join()
                .unwrap_or_else(|_| panic!("{shown}: the unpacker panicked"));
            assert!((1..=2_001).contains(&leaves), "{shown}: {leaves} leaves");
            ran += 1;
        }
    }
    assert!(ran >= 7, "only {ran} seeds in {}", seeds.display());
}
