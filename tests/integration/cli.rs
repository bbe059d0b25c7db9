//! The `ingest` command line, end to end.

use crate::util::*;

#[test]
fn fixtures_are_indexed_and_search_finds_the_member_inside_the_nested_archive() {
    let sb = Sandbox::new();
    let folders = benign_fixtures();
    let paths: Vec<&std::path::Path> = folders.iter().map(|p| p.as_path()).collect();
    let (lines, summary, code) = sb.ingest(&paths);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0);
    // (`ingest` checks the summary against the lines: `assert_summary_counts_lines`.)
    let archives: Vec<_> = lines.iter().filter(|l| l["archive"] == true).collect();
    assert_eq!(
        archives.len(),
        3,
        "bundle.zip, its inner.tar.gz, pump-log.txt.gz"
    );
    for l in &lines {
        assert_eq!(l["status"], "indexed", "{l}");
        assert!(l["hash"].as_str().is_some_and(|h| h.len() == 64), "{l}");
    }
    by_name(&lines, "pump-log.txt.gz!/pump-log.txt");
    let hits = sb.search("who kept the lighthouse on Skerry Point", 3);
    let top = &hits[0];
    let locator = top["locator"].as_str().unwrap();
    assert!(
        locator
            .contains("fixtures/archives/bundle.zip!/docs/inner.tar.gz!/notes/lighthouse.md#line="),
        "{hits:#?}"
    );
    assert!(
        top["snippet"].as_str().unwrap().contains("Ingrid Solberg"),
        "{top}"
    );
    assert_store_matches_catalog(&sb);
}

#[test]
fn a_second_run_reports_every_file_unchanged_and_embeds_nothing() {
    let sb = Sandbox::new();
    let folders = benign_fixtures();
    let paths: Vec<&std::path::Path> = folders.iter().map(|p| p.as_path()).collect();
    let (first, _, code) = sb.ingest(&paths);
    assert_eq!(code, 0);
    let (second, summary, code) = sb.ingest(&paths);
    assert_eq!(code, 0);
    assert_eq!(second.len(), first.len());
    assert!(
        second.iter().all(|l| l["status"] == "unchanged"),
        "{second:#?}"
    );
    assert_eq!(summary["chunks_embedded"], 0);
    // Same chunks counted as the first run stored.
    let chunks = |ls: &[serde_json::Value]| {
        ls.iter()
            .map(|l| l["chunks"].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(chunks(&first), chunks(&second));
}

#[test]
fn a_changed_file_replaces_its_points() {
    let sb = Sandbox::new();
    let file = sb.write(
        "docs/aurora.txt",
        b"The aurora over the fjord glowed green all night.\n",
    );
    sb.write(
        "docs/other.txt",
        b"Unrelated notes about tidal pools and crabs.\n",
    );
    let (_, _, code) = sb.ingest(&[&sb.path("docs")]);
    assert_eq!(code, 0);
    std::fs::write(
        &file,
        b"The harbour froze solid in January and the ferry stopped.\n",
    )
    .unwrap();
    let (lines, _, code) = sb.ingest(&[&sb.path("docs")]);
    assert_eq!(code, 0);
    assert_eq!(by_name(&lines, "aurora.txt")["status"], "indexed");
    assert_eq!(by_name(&lines, "other.txt")["status"], "unchanged");
    let hits = sb.search("aurora glowing green over the fjord", 10);
    assert!(
        hits.iter()
            .all(|h| !h["snippet"].as_str().unwrap().contains("aurora")),
        "{hits:#?}"
    );
    assert!(hits
        .iter()
        .any(|h| h["snippet"].as_str().unwrap().contains("harbour froze")));
    assert_store_matches_catalog(&sb);
}

#[test]
fn archive_members_are_tracked_one_by_one() {
    let sb = Sandbox::new();
    let a: &[u8] = b"Alpha: the weather station logs wind speed hourly.\n";
    let zip = sb.write(
        "in/pack.zip",
        &zip_of(&[
            ("a.txt", a),
            ("b.txt", b"Beta: the boat shed needs new hinges.\n"),
            ("c.txt", b"Gamma: the cormorant colony grew this year.\n"),
        ]),
    );
    let (lines, _, code) = sb.ingest(&[&zip]);
    assert_eq!(code, 0);
    assert_eq!(files_only(&lines).len(), 3);
    assert_eq!(by_name(&lines, "pack.zip")["archive"], true);
    // b changes, c disappears.
    std::fs::write(
        &zip,
        zip_of(&[
            ("a.txt", a),
            ("b.txt", b"Beta: the boat shed roof was replaced in May.\n"),
        ]),
    )
    .unwrap();
    let (lines, _, code) = sb.ingest(&[&zip]);
    assert_eq!(code, 0);
    assert_eq!(files_only(&lines).len(), 2, "{lines:#?}");
    assert_eq!(by_name(&lines, "pack.zip!/a.txt")["status"], "unchanged");
    assert_eq!(by_name(&lines, "pack.zip!/b.txt")["status"], "indexed");
    let hits = sb.search("cormorant colony", 5);
    assert!(
        hits.iter()
            .all(|h| !h["snippet"].as_str().unwrap().contains("cormorant")),
        "{hits:#?}"
    );
    assert_store_matches_catalog(&sb);
}

/// A member whose name holds a bidi override (`report\u{202e}fdp.md`, which a terminal shows
/// as `reportdm.pdf`) is shown escaped wherever its name is shown — ingest's lines, `ingest
/// browse`, the tools' answers — and that escaped locator names it when given back.
#[test]
fn names_that_would_read_as_others_are_shown_escaped() {
    let sb = Sandbox::new();
    let zip = sb.write(
        "in/mail.zip",
        &zip_of(&[
            (
                "report\u{202e}fdp.md",
                &b"# Report\nThe harbour dues rose by a tenth this spring.\n"[..],
            ),
            ("a\u{200b}b.md", b"# Notes\nThe slipway was repaired.\n"),
        ]),
    );
    let (lines, _, code) = sb.ingest(&[&zip]);
    assert_eq!(code, 0, "{lines:#?}");
    let shown = |out: &std::process::Output| {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !text.contains('\u{202e}') && !text.contains('\u{200b}'),
            "exit {:?}: {text}",
            out.status.code()
        );
        text
    };
    let listed = format!("{lines:?}");
    assert!(
        !listed.contains('\u{202e}') && listed.contains("report%E2%80%AEfdp.md"),
        "{listed}"
    );
    let zip_locator = zip.display().to_string();
    let browsed = sb.run(&["browse", &zip_locator]);
    let text = shown(&browsed);
    assert!(
        browsed.status.success() && text.contains("report%E2%80%AEfdp.md"),
        "exit {:?}: {text}",
        browsed.status.code()
    );
    let member = format!("{zip_locator}!/report%E2%80%AEfdp.md");
    let read = sb.run(&["read", &member]);
    let text = shown(&read);
    assert!(
        read.status.success() && text.contains("harbour dues"),
        "exit {:?}: {text}",
        read.status.code()
    );
    let hits = sb.search("harbour dues", 5);
    let hits = format!("{hits:?}");
    assert!(
        !hits.contains('\u{202e}') && hits.contains("%E2%80%AE"),
        "{hits}"
    );
}

/// A member hidden by an earlier one of the same name has that member's locator. Its line must
/// not stand for the earlier member's: when the earlier member is stored last (here it is long,
/// the other one short), the archive is recorded only once it is, and the next run finds the
/// archive unchanged.
#[test]
fn a_shadowed_member_does_not_complete_its_archive_early() {
    let sb = Sandbox::new();
    let long: String = (0..12_000)
        .map(|i| {
            let w = ["pier", "gull", "tide", "rope", "sail", "keel"][(i * 5 + i / 11) % 6];
            if i % 14 == 13 {
                format!("{w}{i}.\n")
            } else {
                format!("{w} ")
            }
        })
        .collect();
    let mut tar = tar::Builder::new(Vec::new());
    for (name, text) in [
        ("log.txt", long.as_str()),
        ("log.txt", "A second log under the same name: never read."),
        (
            "short.txt",
            "The short note: the lighthouse lamp was cleaned.",
        ),
    ] {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, name, text.as_bytes()).unwrap();
    }
    let archive = sb.write("in/logs.tar", &tar.into_inner().unwrap());

    let (lines, _, code) = sb.ingest(&[&archive]);
    assert_eq!(code, 2, "a skipped member: {lines:#?}");
    let at = |suffix: &str, status: &str| {
        lines
            .iter()
            .position(|l| {
                l["locator"].as_str().is_some_and(|s| s.ends_with(suffix)) && l["status"] == status
            })
            .unwrap_or_else(|| panic!("no {status} line for {suffix}: {lines:#?}"))
    };
    let long_at = at("logs.tar!/log.txt", "indexed");
    assert!(
        lines[long_at]["chunks"].as_u64().unwrap() >= 40,
        "{lines:#?}"
    );
    // The order this test is about: the shadowed line, then the short member's, then the long.
    assert!(at("logs.tar!/log.txt", "skipped") < long_at, "{lines:#?}");
    assert!(at("logs.tar!/short.txt", "indexed") < long_at, "{lines:#?}");

    let (lines, summary, code) = sb.ingest(&[&archive]);
    assert_eq!(code, 2, "a skipped member: {lines:#?}");
    assert_eq!(summary["indexed"], 0, "{lines:#?}");
    assert_eq!(by_name(&lines, "in/logs.tar")["status"], "unchanged");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["status"] == "skipped")
            .map(|l| l["reason"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["duplicate name: an earlier member has the same name"],
        "{lines:#?}"
    );
}
#[test]
fn a_bad_member_fails_alone_and_the_exit_code_says_so() {
    let sb = Sandbox::new();
    let zip = sb.write(
        "in/mixed.zip",
        &zip_of(&[
            ("good.md", b"# Good\nThe lifeboat drill is on Thursdays.\n"),
            ("broken.zip", b"PK\x03\x04 this is not a zip"),
        ]),
    );
    let (lines, summary, code) = sb.ingest(&[&zip]);
    assert_eq!(code, 2, "{lines:#?}");
    assert_eq!(summary["failed"], 1);
    assert_eq!(by_name(&lines, "mixed.zip!/good.md")["status"], "indexed");
    let bad = by_name(&lines, "mixed.zip!/broken.zip");
    assert_eq!(bad["status"], "failed");
    assert!(bad["reason"].as_str().unwrap().contains("zip"), "{bad}");
    let hits = sb.search("when is the lifeboat drill", 1);
    assert!(hits[0]["locator"]
        .as_str()
        .unwrap()
        .contains("mixed.zip!/good.md"));
}

#[test]
fn identical_content_is_embedded_once_and_found_under_both_names() {
    let sb = Sandbox::new();
    let text: &[u8] = b"The seed bank stores four thousand varieties of barley.\n";
    sb.write("twins/one.txt", text);
    sb.write("twins/two.txt", text);
    let (lines, summary, code) = sb.ingest(&[&sb.path("twins")]);
    assert_eq!(code, 0);
    // Both twins are extracted in parallel: whichever claims the content first is
    // indexed, the other names it. Which one that is may differ from run to run.
    let (one, two) = (by_name(&lines, "one.txt"), by_name(&lines, "two.txt"));
    let (original, copy) = if one["status"] == "indexed" {
        (one, two)
    } else {
        (two, one)
    };
    assert_eq!(original["status"], "indexed", "{original}");
    assert_eq!(copy["status"], "duplicate", "{copy}");
    let original_name = original["locator"].as_str().unwrap();
    assert!(
        copy["reason"].as_str().unwrap().ends_with(original_name),
        "{copy}"
    );
    assert_eq!(summary["duplicate"], 1, "{summary}");
    // One passage and the file card, embedded once for both names.
    assert_eq!(summary["chunks_embedded"], 2, "{summary}");
    let hits = sb.search("barley seed bank", 5);
    assert_eq!(hits.len(), 2, "{hits:#?}");
    assert_eq!(
        hits.iter().filter(|h| h["kind"] != "card").count(),
        1,
        "{hits:#?}"
    );
    assert!(
        hits.iter()
            .all(|h| h["also_in"].as_array().map(Vec::len) == Some(1)),
        "{hits:#?}"
    );
    assert_store_matches_catalog(&sb);
}

#[test]
fn a_missing_model_is_a_one_line_error_that_says_how_to_get_it() {
    let sb = Sandbox::new();
    sb.write("x.txt", b"hello");
    let out = sb.run(&[
        "--model-dir",
        "/nonexistent/models",
        &sb.path("x.txt").display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("make models"), "{err}");
}

#[test]
fn two_files_swapping_contents_stay_searchable() {
    let sb = Sandbox::new();
    let owl: &[u8] = b"The snowy owl nests on the open tundra.\n";
    let kelp: &[u8] = b"Kelp forests shelter young cod along the shore.\n";
    let a = sb.write("swap/a.txt", owl);
    let b = sb.write("swap/b.txt", kelp);
    let (_, first, code) = sb.ingest(&[&sb.path("swap")]);
    assert_eq!(code, 0, "{first}");
    // What one file costs to embed: its one passage and its card.
    let per_file = 2;
    std::fs::write(&a, kelp).unwrap();
    std::fs::write(&b, owl).unwrap();
    let (lines, summary, code) = sb.ingest(&[&sb.path("swap")]);
    assert_eq!(code, 0, "{lines:#?}");
    // a.txt meets kelp while b.txt still holds it: a duplicate at that moment.
    assert!(
        lines
            .iter()
            .all(|l| l["status"] == "indexed" || l["status"] == "duplicate"),
        "{lines:#?}"
    );
    // A content is deleted as soon as no file holds it (a reader must not find the old
    // version), unless a file in flight already claimed it: depending on which file the
    // pipeline reaches first, one of the two may be embedded again (its passage and its
    // card), never both.
    assert!(
        summary["indexed"].as_u64().unwrap() <= 1
            && summary["chunks_embedded"].as_u64().unwrap() <= per_file,
        "at most one file's {per_file} chunks embedded again: {summary}"
    );
    let owl_hit = &sb.search("where does the snowy owl nest", 1)[0];
    assert!(
        owl_hit["locator"].as_str().unwrap().contains("swap/b.txt"),
        "{owl_hit}"
    );
    let kelp_hit = &sb.search("kelp forest shelter for cod", 1)[0];
    assert!(
        kelp_hit["locator"].as_str().unwrap().contains("swap/a.txt"),
        "{kelp_hit}"
    );
    assert_store_matches_catalog(&sb);
}

#[test]
fn an_index_inside_the_ingested_folder_is_not_ingested() {
    let sb = Sandbox::new();
    sb.write(
        "docs/a.txt",
        b"The breakwater was extended by forty metres in 1987.\n",
    );
    let data = sb.path("docs/.ingest");
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["--json", "--data-dir"])
            .arg(&data)
            .arg(sb.path("docs"))
            .output()
            .unwrap();
        let mut lines = json_lines(&out);
        lines.pop();
        lines
    };
    let first = run();
    assert_eq!(first.len(), 1, "{first:#?}");
    let second = run();
    assert_eq!(second.len(), 1, "{second:#?}");
    assert_eq!(second[0]["status"], "unchanged");
}

#[test]
fn hidden_entries_are_one_ignored_line_unless_asked_for() {
    let sb = Sandbox::new();
    sb.write("box/notes.md", b"# Notes\nThe ferry leaves at dawn.\n");
    sb.write(
        "box/.git/config",
        b"[core]\nThe ferry timetable is in git.\n",
    );
    sb.write("box/.git/HEAD", b"ref: refs/heads/main\n");
    let folder = sb.path("box");
    let (lines, summary, code) = sb.ingest(&[&folder]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert_eq!(by_name(&lines, "box/notes.md")["status"], "indexed");
    let git = by_name(&lines, "box/.git");
    assert_eq!(git["status"], "ignored", "{git}");
    assert!(
        git["reason"].as_str().unwrap().contains("--hidden"),
        "{git}"
    );
    assert_eq!(summary["ignored"], 1, "{summary}");
    assert_eq!(summary["skipped"], 0, "{summary}");

    let (lines, summary, code) = sb.ingest_with(&["--hidden"], &[&folder]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(by_name(&lines, "box/.git/config")["status"], "indexed");
    assert_eq!(by_name(&lines, "box/.git/HEAD")["status"], "indexed");
    assert_eq!(by_name(&lines, "box/notes.md")["status"], "unchanged");
    assert_eq!(summary["indexed"], 2, "{summary}");
    let hits = sb.search("ferry timetable in git", 1);
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .contains("box/.git/config"),
        "{hits:#?}"
    );

    // Without the flag again, what was under the hidden folder leaves the index.
    let (lines, _, code) = sb.ingest(&[&folder]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(by_name(&lines, "box/.git/config")["status"], "removed");
    assert_store_matches_catalog(&sb);
}

#[test]
fn retry_reads_again_what_a_limit_refused_though_unchanged() {
    let sb = Sandbox::new();
    let text: String = (0..40)
        .map(|i| format!("Paragraph {i} of the tide table notes, with its own words.\n\n"))
        .collect();
    let file = sb.write("docs/tides.md", text.as_bytes());
    let zip = {
        // An archive holding the same kind of long member.
        let path = sb.path("docs/bundle.zip");
        let mut w = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        w.start_file("long.md", zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut w, text.replace("tide", "ferry").as_bytes()).unwrap();
        w.finish().unwrap();
        path
    };
    let status_of = |lines: &[serde_json::Value], suffix: &str| {
        by_name(lines, suffix)["status"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (lines, _, code) = sb.ingest_with(&["--max-chunks", "1"], &[&file, &zip]);
    assert_eq!(code, 2);
    assert_eq!(status_of(&lines, "tides.md"), "skipped");
    assert_eq!(status_of(&lines, "long.md"), "skipped");
    // Unchanged and not asked to retry: reported as before, even with the limit raised.
    let (lines, _, code) = sb.ingest(&[&file, &zip]);
    assert_eq!(code, 2);
    assert_eq!(status_of(&lines, "tides.md"), "skipped");
    assert_eq!(status_of(&lines, "long.md"), "skipped");
    // Asked to retry: both are read again and indexed now.
    let (lines, summary, code) = sb.ingest_with(&["--retry"], &[&file, &zip]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(status_of(&lines, "tides.md"), "indexed");
    assert_eq!(status_of(&lines, "long.md"), "indexed");
    assert!(
        summary["chunks_embedded"].as_u64().unwrap() >= 2,
        "{summary}"
    );
    // Nothing left to retry: a retrying run finds everything unchanged.
    let (lines, _, code) = sb.ingest_with(&["--retry"], &[&file, &zip]);
    assert_eq!(code, 0);
    assert_eq!(status_of(&lines, "tides.md"), "unchanged");
    assert_eq!(status_of(&lines, "long.md"), "unchanged");
}

/// Fairness: files that reach the embed stage while a big file is being embedded share its
/// batches, so they are indexed long before it is. Here two small files that take OCR time
/// to extract (so they arrive after the big one) must be on the ledger before the ~300-chunk
/// file; an embed stage that finished files first in, first out would list them after it.
#[test]
fn small_files_arriving_behind_a_big_one_are_indexed_before_it() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    std::fs::create_dir_all(docs.join("later")).unwrap();
    let words = [
        "harbour", "tide", "ledger", "survey", "buoy", "vessel", "anchor", "cliff", "beacon",
        "keeper", "storm", "chart",
    ];
    let big: String = (0..60_000)
        .map(|i| {
            let w = words[(i * 7 + i / 13) % words.len()];
            if i % 15 == 14 {
                format!("{w}{i}.\n")
            } else {
                format!("{w} ")
            }
        })
        .collect();
    std::fs::write(docs.join("a-manual.txt"), big).unwrap();
    for name in ["scanned-letter.pdf", "whiteboard.png"] {
        std::fs::copy(
            fixtures().join("formats").join(name),
            docs.join("later").join(name),
        )
        .unwrap();
    }
    let (lines, summary, code) =
        sb.ingest_with(&["--model-variant", "dynamic-int8"], &[docs.as_path()]);
    assert_eq!(code, 0, "{lines:#?}");
    let at = |suffix: &str| {
        lines
            .iter()
            .position(|l| l["locator"].as_str().is_some_and(|s| s.ends_with(suffix)))
            .unwrap_or_else(|| panic!("no line for {suffix}: {lines:#?}"))
    };
    let big_at = at("a-manual.txt");
    let big_chunks = lines[big_at]["chunks"].as_u64().unwrap();
    assert!(big_chunks >= 250, "{big_chunks} chunks");
    for small in ["later/scanned-letter.pdf", "later/whiteboard.png"] {
        assert!(
            at(small) < big_at,
            "{small} listed after the big file: {lines:#?}"
        );
    }
    assert!(summary["tokens_embedded"].as_u64().unwrap() > big_chunks * 200);
    // The index records the model file it was embedded with, and refuses the other.
    assert_eq!(
        std::fs::read_to_string(sb.data_dir().join("embedding-model")).unwrap(),
        "dynamic-int8\n"
    );
    let other = sb.run(&["search", "--model-variant", "int8-weights", "harbour"]);
    assert_eq!(other.status.code(), Some(3), "{other:?}");
    assert!(
        String::from_utf8_lossy(&other.stderr).contains("embedded with model variant dynamic-int8"),
        "{other:?}"
    );
}
