//! File cards and the index recipe, end to end: every picture, recording and film is found by
//! its name; an index made with another recipe refuses new files until `ingest reindex` has
//! cut and embedded it again from its stored texts.

use serde_json::Value;

use crate::util::*;

/// `ingest search --json --mode MODE --limit N QUERY`: every hit, however weak.
fn search_mode(sb: &Sandbox, mode: &str, query: &str, limit: usize) -> Vec<Value> {
    sb.search_with(&["--mode", mode, "--limit", &limit.to_string()], query)
}

/// The hits of the `search_documents` tool with `--kind card`.
fn card_hits(sb: &Sandbox, query: &str) -> Vec<Value> {
    sb.search_with(&["--kind", "card", "--limit", "10"], query)
}

#[test]
fn every_picture_recording_and_film_is_found_by_its_name() {
    let sb = Sandbox::new();
    let (lines, summary, code) = sb.ingest(&[&fixtures().join("formats")]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0);
    // Pictures, recordings and films, by extension (the ledger does not say the type).
    let media_extensions = [
        "avi", "flac", "gif", "jpg", "mp3", "mp4", "mpg", "oga", "ogg", "png", "svg", "tiff",
        "wav", "webm", "webp",
    ];
    let media: Vec<String> = files_only(&lines)
        .into_iter()
        .map(|l| l["locator"].as_str().unwrap().to_string())
        .filter(|l| {
            l.rsplit_once('.')
                .is_some_and(|(_, ext)| media_extensions.contains(&ext))
        })
        .collect();
    assert!(media.len() >= 12, "media fixtures: {media:?}");
    for locator in &media {
        let name = locator.rsplit('/').next().unwrap();
        // A search by its name finds its card: first by keywords, among the first five in
        // hybrid search (whose meaning side sees a card's type and properties, not its
        // names: identical bytes under two names are one card).
        for (mode, within) in [("keyword", 1), ("hybrid", 5)] {
            let hits = search_mode(&sb, mode, name, 5);
            let holds = |h: &Value| {
                h["kind"] == "card"
                    && (h["locator"].as_str() == Some(locator.as_str())
                        || h["also_in"].as_array().is_some_and(|a| {
                            a.iter().any(|l| l.as_str() == Some(locator.as_str()))
                        }))
            };
            assert!(
                hits.iter().take(within).any(holds),
                "{mode} search for {name:?}: {hits:#?}"
            );
        }
    }
    // A card says what the file is: a recording is found by its length's words, a picture
    // by its size, and the content_type filter finds cards of that type.
    let audio = card_hits(&sb, "audio recording foghorn");
    assert!(
        audio
            .iter()
            .any(|h| h["file"] == "foghorn.mp3" && h["type"] == "audiostream"),
        "{audio:#?}"
    );
    assert!(audio.iter().all(|h| h["kind"] == "card"), "{audio:#?}");
    let images = sb.search_with(&["--type", "image", "--limit", "10"], "pier");
    assert!(
        images.iter().any(|h| h["file"] == "pier.jpg"),
        "{images:#?}"
    );
    // A file that cannot be read is found by its name all the same: its own card says what
    // it is and why its content is not searchable.
    let broken = sb.write(
        "extra/broken-ledger.pdf",
        b"%PDF-1.7\nnot a PDF after all\n",
    );
    // So is an archive, by its own card (its members have theirs).
    let archive = sb.write(
        "extra/tide-tables.zip",
        &zip_of(&[(
            "tides/may.txt",
            b"High water at noon on the first of May.\n",
        )]),
    );
    let (_, summary, code) = sb.ingest(&[&broken, &archive]);
    assert_eq!(
        (summary["failed"].as_u64(), code),
        (Some(1), 2),
        "{summary}"
    );
    assert_eq!(summary["entry_cards"], 2, "{summary}");
    for (file, says) in [
        (&broken, "content not searchable: failed"),
        (&archive, "holds 1 file"),
    ] {
        let locator = file.display().to_string();
        let name = locator.rsplit('/').next().unwrap();
        for mode in ["keyword", "hybrid"] {
            let hits = search_mode(&sb, mode, name, 5);
            let card = hits
                .iter()
                .take(3)
                .find(|h| h["locator"].as_str() == Some(locator.as_str()) && h["kind"] == "card")
                .unwrap_or_else(|| panic!("{mode} search for {name}: {hits:#?}"));
            let text = card["snippet"].as_str().unwrap();
            assert!(text.contains(says), "{text}");
        }
    }
    // And every file and archive of every format, by `ingest eval --names`.
    let out = sb.run(&[
        "eval", "--names", "--json", "--mode", "keyword", "--mode", "hybrid",
    ]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Only an entry without any point is not searched for (an empty file), and it is said.
    let catalog = sb.status()["catalog"].clone();
    let entries = catalog["files"].as_u64().unwrap() + catalog["containers"].as_u64().unwrap();
    assert!(catalog["containers"].as_u64().unwrap() > 0, "{catalog}");
    for r in reports.as_array().unwrap() {
        assert!(r["files"].as_u64().unwrap() >= 25, "{r}");
        assert_eq!(r["missed"], serde_json::json!([]), "{r}");
        assert_eq!(r["missed_by_words"], serde_json::json!([]), "{r}");
        let without = r["without_points"].as_array().unwrap();
        assert_eq!(
            r["files"].as_u64().unwrap() + without.len() as u64,
            entries,
            "{r}"
        );
        assert!(
            without.iter().all(|u| u["status"] == "indexed"),
            "only an empty file has no point: {r}"
        );
    }
    assert_store_matches_catalog(&sb);
}

#[test]
fn another_recipe_is_refused_until_reindex_cuts_and_embeds_again() {
    let sb = Sandbox::new();
    let docs = fixtures().join("docs");
    let old_recipe = ["--no-file-cards", "--keep-junk", "--no-contextual-headers"];
    let (lines, first, code) = sb.ingest_with(&old_recipe, &[&docs]);
    assert_eq!(code, 0, "{lines:#?}");
    assert!(card_hits(&sb, "handbook").is_empty(), "no cards yet");
    // A file that fails has no card either under that recipe.
    let broken = sb.write("extra/cracked-ledger.pdf", b"%PDF-1.7\nbroken\n");
    let (_, failed, _) = sb.ingest_with(&old_recipe, &[&broken]);
    assert_eq!(
        (failed["failed"].as_u64(), failed["entry_cards"].as_u64()),
        (Some(1), Some(0))
    );
    // Today's recipe on that index: refused, saying what to do, and nothing changes.
    let before = sb.status();
    let refused = sb.run(&["--json", docs.to_str().unwrap()]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("ingest reindex") && stderr.contains("no file cards"),
        "{stderr}"
    );
    assert_eq!(sb.status()["points"], before["points"]);
    assert!(
        !ingest::DataDir::at(sb.data_dir()).run_marker().exists(),
        "a refused run marks nothing to repair"
    );
    // Reindex: every content again, with cards, from the stored texts.
    let out = sb.run(&["reindex", "--json"]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    let report = json_lines(&out).pop().expect("report");
    let files = files_only(&lines).len() as u64;
    assert_eq!(report["contents"].as_u64(), Some(files), "{report}");
    assert_eq!(report["contents_missing"], 0, "{report}");
    // Every chunk was embedded, or took the vector of the same text embedded before.
    assert_eq!(
        report["chunks_before"].as_u64(),
        Some(first["chunks_embedded"].as_u64().unwrap() + first["chunks_reused"].as_u64().unwrap()),
        "{report}"
    );
    assert!(
        report["chunks_after"].as_u64().unwrap() >= files,
        "every file has a card now: {report}"
    );
    assert_eq!(report["entry_cards"], 1, "the failed file's card: {report}");
    assert_store_matches_catalog(&sb);
    assert!(!card_hits(&sb, "handbook").is_empty());
    let cracked = card_hits(&sb, "cracked-ledger.pdf");
    assert!(
        cracked.iter().any(|h| h["file"] == "cracked-ledger.pdf"),
        "{cracked:#?}"
    );
    // The index has today's recipe now: the same files are unchanged, no error.
    let (lines, again, code) = sb.ingest(&[&docs]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(again["unchanged"].as_u64(), Some(files), "{again}");
    // And the old recipe is the one refused now.
    let refused = sb.run(&["--json", "--no-file-cards", docs.to_str().unwrap()]);
    assert!(!refused.status.success());
}

/// `jpeg` with an XMP packet saying `caption` and `keywords` in an APP1 segment right after
/// its SOI marker, as photo editors and stock libraries write it.
fn with_xmp(jpeg: &[u8], caption: &str, keywords: &[&str]) -> Vec<u8> {
    let bag: String = keywords
        .iter()
        .map(|k| format!("<rdf:li>{k}</rdf:li>"))
        .collect();
    let packet = format!(
        r#"<?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description><rdf:Alt><rdf:li xml:lang="x-default">{caption}</rdf:li></rdf:Alt></dc:description><dc:subject><rdf:Bag>{bag}</rdf:Bag></dc:subject></rdf:Description></rdf:RDF></x:xmpmeta><?xpacket end="w"?>"#
    );
    let mut app1 = b"http://ns.adobe.com/xap/1.0/\0".to_vec();
    app1.extend(packet.as_bytes());
    let mut out = jpeg[..2].to_vec();
    out.extend([0xFF, 0xE1]);
    out.extend(((app1.len() + 2) as u16).to_be_bytes());
    out.extend(&app1);
    out.extend(&jpeg[2..]);
    out
}

#[test]
fn a_picture_is_found_by_what_its_xmp_caption_says() {
    let sb = Sandbox::new();
    let jpeg = std::fs::read(fixtures().join("formats/pier.jpg")).unwrap();
    // The same photo twice, each with a caption of its own (different bytes: two cards),
    // names that say nothing of either, and no text in the picture that OCR could read.
    let penguins = sb.write(
        "pictures/img_0412.jpg",
        &with_xmp(
            &jpeg,
            "Cartoon of the three penguin species: chinstrap, gentoo and Adélie",
            &["artwork", "Antarctica"],
        ),
    );
    let harbour = sb.write(
        "pictures/img_0413.jpg",
        &with_xmp(
            &jpeg,
            "Fishing boats moored in the harbour at low tide",
            &["boats", "harbour"],
        ),
    );
    let (lines, summary, code) = sb.ingest(&[&sb.path("pictures")]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0, "{summary}");
    for (query, want, other) in [
        ("drawing of penguins", &penguins, &harbour),
        ("boats in a harbour", &harbour, &penguins),
    ] {
        for mode in ["keyword", "hybrid"] {
            let hits = search_mode(&sb, mode, query, 5);
            let first = hits
                .first()
                .unwrap_or_else(|| panic!("{mode} {query:?}: no hit"));
            assert_eq!(
                first["locator"].as_str(),
                Some(want.display().to_string().as_str()),
                "{mode} {query:?} finds the picture whose caption says so first, not {}: {hits:#?}",
                other.display()
            );
        }
    }
    // The card shows the caption, so an agent can tell what the picture shows.
    let hits = card_hits(&sb, "penguin species cartoon");
    let card = hits
        .iter()
        .find(|h| h["locator"].as_str() == Some(penguins.display().to_string().as_str()))
        .unwrap_or_else(|| panic!("{hits:#?}"));
    let text = card["snippet"].as_str().unwrap();
    assert!(text.contains("three penguin species"), "{text}");
}
