//! A person at a terminal: paths as typed, the index found (or not) where they are, the
//! documented exit codes, one JSON shape per command, exclusions. Every test drives the
//! real binary from a working directory of its own, with its own HOME.

use std::path::Path;
use std::process::{Command, Output};

use crate::util::*;

/// `ingest ARGS` in `cwd`, with HOME in the sandbox and no data dir from the environment.
fn ingest_in(sb: &Sandbox, cwd: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", sb.path("home"))
        .env_remove("INGEST_DATA_DIR")
        .env_remove("XDG_DATA_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("INGEST_CONFIG")
        .output()
        .expect("run ingest");
    assert_exited(&out);
    out
}

/// `ingest --json --data-dir <sandbox data> TREE` with `INGEST_CONFIG=config`.
fn ingest_with_config(sb: &Sandbox, config: &Path, tree: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(sb.data_dir())
        .arg(tree)
        .env("INGEST_CONFIG", config)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A project folder with two documents, ingested into `project/.ingest` from inside it.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("home")).unwrap();
    sb.write(
        "project/docs/tides.md",
        b"# Tides\n\nThe harbour master publishes the spring tide tables every March.\n",
    );
    sb.write(
        "project/docs/sub/ferry.txt",
        b"The ferry to Skerry Point leaves at seven and returns at noon.\n",
    );
    let out = ingest_in(
        &sb,
        &sb.path("project"),
        &["--data-dir", ".ingest", "--json", "docs"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    sb
}

#[test]
fn paths_as_typed_from_another_working_directory_name_what_was_ingested() {
    let sb = project();
    let sub = sb.path("project/docs/sub");
    // Found from below, like git: the nearest .ingest above the working directory.
    let read = ingest_in(&sb, &sub, &["read", "ferry.txt"]);
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert!(
        stdout(&read).contains("ferry to Skerry Point"),
        "{}",
        stdout(&read)
    );
    let browse = ingest_in(&sb, &sub, &["browse", ".."]);
    assert_eq!(browse.status.code(), Some(0), "{}", stderr(&browse));
    assert!(stdout(&browse).contains("tides.md"), "{}", stdout(&browse));
    let search = ingest_in(
        &sb,
        &sub,
        &[
            "search",
            "--json",
            "-l",
            "../tides.md",
            "when are the tide tables published",
        ],
    );
    assert_eq!(search.status.code(), Some(0), "{}", stderr(&search));
    let hits = search_hits(&search);
    assert!(
        hits.iter().all(|h| h["locator"]
            .as_str()
            .unwrap()
            .contains("/project/docs/tides.md")),
        "{hits:#?}"
    );
    // `~/…`, through a link (the locator is the path ingesting recorded).
    std::os::unix::fs::symlink(sb.path("project"), sb.path("home/project")).unwrap();
    let tilde = ingest_in(&sb, &sub, &["read", "~/project/docs/tides.md"]);
    assert_eq!(tilde.status.code(), Some(0), "{}", stderr(&tilde));
    assert!(stdout(&tilde).contains("spring tide"), "{}", stdout(&tilde));
    // Not indexed: said for a person, with what to type; the model's advice is not shown.
    let missing = ingest_in(&sb, &sub, &["read", "nothere.txt"]);
    assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
    let err = stderr(&missing);
    assert!(err.contains("ingest files"), "{err}");
    assert!(err.contains("nothere.txt"), "{err}");
    assert!(!err.contains("browse_container"), "{err}");
    // `ingest files` lists what is indexed, under a folder as typed.
    let files = ingest_in(&sb, &sub, &["files", "--json", ".."]);
    assert_eq!(files.status.code(), Some(0), "{}", stderr(&files));
    let listed: serde_json::Value = serde_json::from_str(&stdout(&files)).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["locator"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.contains("/project/docs/")),
        "{names:?}"
    );
    let none = ingest_in(&sb, &sub, &["ls", "--json", "/nowhere"]);
    assert_eq!(none.status.code(), Some(1), "nothing found");
    assert_eq!(stdout(&none).trim(), "[]");
}

#[test]
fn read_commands_never_create_an_index_and_say_where_they_looked() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("home")).unwrap();
    std::fs::create_dir_all(sb.path("elsewhere")).unwrap();
    let cwd = sb.path("elsewhere");
    for args in [
        &["search", "lighthouse keeper"][..],
        &["browse"],
        &["status"],
        &["files"],
        &["read", "x.pdf"],
    ] {
        let out = ingest_in(&sb, &cwd, args);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        let default = sb.path("home/.local/share/ingest");
        assert!(
            err.contains(&format!("no index at {}", default.display())),
            "{args:?}: {err}"
        );
        assert!(err.contains("ingest PATH"), "{err}");
        assert!(!default.exists(), "{args:?} created {}", default.display());
    }
    // A mistyped --data-dir: said, and not created.
    let typo = ingest_in(&sb, &cwd, &["status", "--data-dir", "dta"]);
    assert_eq!(typo.status.code(), Some(3));
    assert!(
        stderr(&typo).contains("no index at dta"),
        "{}",
        stderr(&typo)
    );
    assert!(!cwd.join("dta").exists());
    // status names the data dir, how it was found, the model and the size on disk.
    let sb = project();
    let status = ingest_in(&sb, &sb.path("project/docs"), &["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let text = stdout(&status);
    assert!(text.contains("found by the nearest .ingest"), "{text}");
    assert!(text.contains("model:     bf16\n"), "{text}");
    assert!(text.contains("on disk:   "), "{text}");
    // The size on disk is what the files take (their blocks): a sparse gigabyte in the data
    // dir adds next to nothing.
    let json = |sb: &Sandbox| -> serde_json::Value {
        let out = ingest_in(sb, &sb.path("project/docs"), &["status", "--json"]);
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", stderr(&out)))
    };
    let before = json(&sb)["disk_bytes"].as_u64().unwrap();
    let sparse = sb.path("project/.ingest/sparse-probe");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let after = json(&sb)["disk_bytes"].as_u64().unwrap();
    assert!(after < before + (1 << 20), "{before} -> {after}");
}

#[test]
fn usage_errors_and_typos_exit_64_and_say_what_was_meant() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("home")).unwrap();
    let cwd = sb.path("home");
    let typo = ingest_in(&sb, &cwd, &["serch", "lighthouse keeper"]);
    assert_eq!(typo.status.code(), Some(64), "{}", stderr(&typo));
    assert!(
        stderr(&typo).contains("Did you mean `ingest search`?"),
        "{}",
        stderr(&typo)
    );
    assert!(!sb.path("home/.local").exists(), "nothing was ingested");
    for args in [
        &["--no-such-flag"][..],
        &["search"],
        &["search", "--mode", "psychic", "x"],
        &["browse", "--limit", "3"],
    ] {
        let out = ingest_in(&sb, &cwd, args);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
    }
    let help = ingest_in(&sb, &cwd, &["--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(stdout(&help).contains("files"), "{}", stdout(&help));
}

#[test]
fn search_has_one_json_shape_and_exit_1_when_nothing_is_relevant() {
    let sb = project();
    let cwd = sb.path("project");
    let found = ingest_in(
        &sb,
        &cwd,
        &[
            "search",
            "-j",
            "-n",
            "3",
            "when does the ferry to Skerry Point leave",
        ],
    );
    assert_eq!(found.status.code(), Some(0), "{}", stderr(&found));
    let lines: Vec<serde_json::Value> = json_lines(&found);
    assert_eq!(lines.len(), 1, "one object: {lines:#?}");
    let hits = lines[0]["hits"].as_array().unwrap();
    assert!(hits[0]["locator"].as_str().unwrap().contains("ferry.txt"));
    // No floor unless one is asked for; the hits come in the order of the score printed,
    // each with its relevance and confidence, the answer first and confident.
    assert!(lines[0].get("min_score").is_none(), "{lines:#?}");
    assert_eq!(hits[0]["confidence"], "high", "{hits:#?}");
    let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{hits:#?}");
    assert!(
        hits.iter().all(|h| h["relevance"].as_f64().is_some()
            && matches!(h["confidence"].as_str(), Some("high" | "low"))),
        "{hits:#?}"
    );
    // No locator twice in one answer.
    let mut locators: Vec<&str> = hits
        .iter()
        .map(|h| h["locator"].as_str().unwrap())
        .collect();
    let n = locators.len();
    locators.dedup();
    assert_eq!(locators.len(), n, "{hits:#?}");
    // With a filter: the same shape.
    let filtered = ingest_in(&sb, &cwd, &["search", "--json", "-l", "docs", "ferry"]);
    assert_eq!(json_lines(&filtered).len(), 1);
    assert!(json_lines(&filtered)[0]["hits"].is_array());
    // About what the documents do not hold: nothing relevant, said, exit 1, an empty array.
    let nothing = ingest_in(
        &sb,
        &cwd,
        &["search", "--json", "what is a good recipe for banana bread"],
    );
    assert_eq!(nothing.status.code(), Some(1), "{}", stdout(&nothing));
    let answer = &json_lines(&nothing)[0];
    assert_eq!(answer["hits"], serde_json::json!([]));
    assert!(answer["note"]
        .as_str()
        .unwrap()
        .starts_with("nothing relevant"));
    let said = ingest_in(&sb, &cwd, &["search", "banana bread recipe"]);
    assert_eq!(said.status.code(), Some(1));
    assert!(
        stdout(&said).starts_with("nothing relevant"),
        "{}",
        stdout(&said)
    );
    // A question whose words the documents hold, weakly: shown, every hit flagged, and a
    // note saying so (exit 0: there is something to read).
    let weak = ingest_in(
        &sb,
        &cwd,
        &["search", "--json", "which point does the tide table cover"],
    );
    assert_eq!(weak.status.code(), Some(0), "{}", stdout(&weak));
    let answer = &json_lines(&weak)[0];
    let hits = answer["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{answer:#}");
    // The note says "no confident match" exactly when every hit is weak.
    let all_weak = hits.iter().all(|h| h["confidence"] == "low");
    let noted = answer["note"]
        .as_str()
        .is_some_and(|n| n.starts_with("no confident match"));
    assert_eq!(noted, all_weak, "{answer:#}");
    // --min-score bounds each hit's relevance; none reaching it is said so, exit 1.
    let strict = ingest_in(
        &sb,
        &cwd,
        &[
            "search",
            "--json",
            "--min-score",
            "0.99",
            "who publishes the tables",
        ],
    );
    assert_eq!(strict.status.code(), Some(1), "{}", stdout(&strict));
    let answer = &json_lines(&strict)[0];
    assert_eq!(answer["hits"], serde_json::json!([]), "{answer:#}");
    assert!(
        answer["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("nothing reaches min_score")),
        "{answer:#}"
    );
    let loose = ingest_in(
        &sb,
        &cwd,
        &["search", "--json", "--min-score", "0.2", "ferry leaves"],
    );
    assert_eq!(loose.status.code(), Some(0), "{}", stdout(&loose));
    let hits = search_hits(&loose);
    assert!(!hits.is_empty());
    assert!(
        hits.iter().all(|h| h["relevance"].as_f64().unwrap() >= 0.2),
        "{hits:#?}"
    );
}

#[test]
fn excluded_entries_are_one_ignored_line_and_never_embedded() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path("home")).unwrap();
    sb.write("tree/.gitignore", b"target/\n*.tmp\n");
    sb.write("tree/.ingestignore", b"drafts/\n");
    sb.write(
        "tree/notes.md",
        b"# Notes\nThe lighthouse lamp was replaced in 1987.\n",
    );
    sb.write(
        "tree/target/out.txt",
        b"Compiled zebra artefacts nobody reads.\n",
    );
    sb.write("tree/drafts/plan.txt", b"A secret plan about quokkas.\n");
    sb.write("tree/scratch.tmp", b"Temporary walrus notes.\n");
    sb.write(
        "tree/node_modules/pkg/index.txt",
        b"Vendored narwhal code.\n",
    );
    sb.write("tree/build.log", b"Build log of the platypus.\n");
    let tree = sb.path("tree");
    let (lines, summary, code) = sb.ingest_with(
        &["--exclude", "node_modules/", "--exclude", "*.log"],
        &[&tree],
    );
    assert_eq!(code, 0, "{lines:#?}");
    let status = |name: &str| {
        by_name(&lines, name)["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let reason = |name: &str| {
        by_name(&lines, name)["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(status("tree/notes.md"), "indexed");
    for name in [
        "tree/target",
        "tree/drafts",
        "tree/scratch.tmp",
        "tree/node_modules",
        "tree/build.log",
    ] {
        assert_eq!(status(name), "ignored", "{name}: {lines:#?}");
    }
    assert!(
        reason("tree/target").contains(".gitignore: target/"),
        "{lines:#?}"
    );
    assert!(
        reason("tree/drafts").contains(".ingestignore"),
        "{lines:#?}"
    );
    assert!(
        reason("tree/build.log").contains("--exclude *.log"),
        "{lines:#?}"
    );
    assert!(!lines
        .iter()
        .any(|l| l["locator"].as_str().unwrap().contains("out.txt")));
    // The summary counts them (with the two hidden ignore files).
    assert_eq!(summary["ignored"], 7, "{summary}");
    for word in ["zebra", "quokkas", "walrus", "narwhal", "platypus"] {
        let hits = sb.search(word, 5);
        assert!(
            hits.iter()
                .all(|h| h["locator"].as_str().unwrap().ends_with("notes.md")
                    || h["locator"].as_str().unwrap().contains("notes.md#")),
            "{word}: {hits:#?}"
        );
    }
    // --no-ignore: the ignore files' entries are read; the globs still hold.
    let (lines, _, _) = sb.ingest_with(&["--no-ignore", "--exclude", "node_modules/"], &[&tree]);
    assert_eq!(
        by_name(&lines, "target/out.txt")["status"],
        "indexed",
        "{lines:#?}"
    );
    assert_eq!(by_name(&lines, "tree/node_modules")["status"], "ignored");
    assert_eq!(by_name(&lines, "tree/build.log")["status"], "indexed");
    // The config file's list: notes excluded now, and so removed from the index.
    let config = sb.write("ingest.toml", b"exclude = [\"*.md\"]\n");
    let lines = json_lines(&ingest_with_config(&sb, &config, &tree));
    assert_eq!(
        by_name(&lines, "tree/notes.md")["status"],
        "ignored",
        "{lines:#?}"
    );
    let files = sb.run(&["files", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&files.stdout).unwrap();
    assert!(
        !listed.to_string().contains("notes.md"),
        "excluded now, so removed: {listed}"
    );
}

#[test]
fn hostile_globs_config_and_ignore_files_are_bounded() {
    let sb = Sandbox::new();
    sb.write("tree/a.txt", b"The anchor chain was inspected.\n");
    let mut big = b"*.txt\n".to_vec();
    big.resize(300 * 1024, b'#');
    sb.write("tree/.gitignore", &big);
    let tree = sb.path("tree");
    // An ignore file past the bound is not used (a warning says so); the walk goes on.
    let out = sb.run(&["--json", &tree.display().to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("not used"), "{}", stderr(&out));
    let lines = json_lines(&out);
    assert_eq!(by_name(&lines, "tree/a.txt")["status"], "indexed");
    // Too many globs, a glob of many lines, an unclosed class: usage errors, nothing read.
    let mut many: Vec<String> = Vec::new();
    for _ in 0..=ingest_unpack::MAX_GLOBS {
        many.push("--exclude".into());
        many.push("*.x".into());
    }
    many.push(tree.display().to_string());
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    assert_eq!(sb.run(&refs).status.code(), Some(64));
    for glob in ["*.md\n*.txt", "a["] {
        let out = sb.run(&["--exclude", glob, &tree.display().to_string()]);
        assert_eq!(out.status.code(), Some(64), "{glob:?}: {}", stderr(&out));
    }
    // A config file past its bound, or with a key it does not know, is named in the error.
    for (name, text, says) in [
        ("big.toml", vec![b'#'; 65 * 1024], "big.toml"),
        ("odd.toml", b"exclud = [\"x\"]\n".to_vec(), "exclud"),
    ] {
        let config = sb.write(name, &text);
        let out = ingest_with_config(&sb, &config, &tree);
        assert_eq!(out.status.code(), Some(3));
        assert!(stderr(&out).contains(says), "{}", stderr(&out));
    }
}

#[test]
fn a_run_stopped_by_sigint_in_the_middle_of_a_file_goes_on_from_there() {
    let sb = Sandbox::new();
    let text: String = (0..10_000)
        .map(|i| {
            format!(
                "Entry {i}: the keeper of light {i} logged the wind, the tide and the ships that passed the point.\n\n"
            )
        })
        .collect();
    let file = sb.write("big/log.txt", text.as_bytes());
    let mut child = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(sb.data_dir())
        .arg(&file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once the file's first batches are checkpointed (a hang guard, not a speed).
    let partial = sb.data_dir().join("partial");
    let started = std::time::Instant::now();
    let checkpointed = || {
        std::fs::read_dir(&partial).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.metadata().is_ok_and(|m| m.len() > 100_000))
        })
    };
    while !checkpointed() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(600),
            "no checkpoint"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before it was stopped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_exited(&out);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let mut lines = json_lines(&out);
    let first = lines.pop().unwrap()["summary"].clone();
    assert!(
        lines.iter().all(|l| l["status"] != "indexed"),
        "stopped mid-file: not indexed yet: {lines:#?}"
    );
    let first_embedded =
        first["chunks_embedded"].as_u64().unwrap() + first["chunks_reused"].as_u64().unwrap();
    assert!(first_embedded > 0, "{first}");
    // No file by halves in the index.
    assert_store_matches_catalog(&sb);
    // The next run embeds the rest only.
    let (lines, summary, code) = sb.ingest(&[&file]);
    assert_eq!(code, 0, "{lines:#?}");
    let line = by_name(&lines, "big/log.txt");
    assert_eq!(line["status"], "indexed");
    let chunks = line["chunks"].as_u64().unwrap();
    let second =
        summary["chunks_embedded"].as_u64().unwrap() + summary["chunks_reused"].as_u64().unwrap();
    assert!(
        second < chunks && second + first_embedded >= chunks,
        "{second} embedded of {chunks} after {first_embedded}"
    );
    assert_store_matches_catalog(&sb);
    let hits = sb.search("the keeper of light 9999", 3);
    assert!(!hits.is_empty());
    assert!(
        std::fs::read_dir(&partial).is_ok_and(|mut d| d.next().is_none()),
        "the checkpoint goes once the file is stored"
    );
}

#[test]
fn watch_says_what_it_does_at_info_unless_quiet() {
    for quiet in [false, true] {
        let sb = Sandbox::new();
        sb.write("folder/a.txt", b"The pilot boat waits by the breakwater.\n");
        let args: &[&str] = if quiet { &["--quiet"] } else { &[] };
        let daemon = Daemon::start_with(&sb, &[&sb.path("folder")], args, &[]);
        // Up once its status answers with the first sync done (a hang guard, not a speed).
        let synced = wait_for(std::time::Duration::from_secs(300), || {
            sb.try_status()
                .is_some_and(|s| s["daemon"]["syncs"].as_u64().unwrap_or(0) >= 1)
        });
        assert!(synced.is_some(), "no first sync");
        assert!(daemon.stop().success());
        let log = std::fs::read_to_string(sb.path("daemon.err")).unwrap();
        for said in ["watching", "synced", "stopped"] {
            assert_eq!(log.contains(said), !quiet, "quiet {quiet}, {said:?}: {log}");
        }
    }
}
