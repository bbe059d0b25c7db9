//! The pipeline end to end in one process, without the model: the fake model
//! (`crate::embed::fake`), the embedded store, extraction in process. What the content ledger
//! and the stages promise — one embedding per content, nothing lost on a rename, nothing left
//! of a deleted or changed file — checked on the catalog and the store themselves. Each stage
//! alone is tested in its own file.

use super::testkit::Bench;
use crate::index::SearchFilter;
use crate::report::FileStatus;
use crate::Input;

#[test]
fn identical_bytes_are_embedded_once_and_found_under_every_name() {
    let b = Bench::new();
    let text = "# Pump\n\nOpen the bleed screw and prime the quokka pump.\n";
    b.write("a.md", text);
    b.write("b.md", text);
    b.write("c.md", "# Tax\n\nThe narwhal levy is due in March.\n");
    let report = b.sync();
    assert_eq!(report.summary.failed, 0, "{:#?}", report.files);
    let statuses = [
        Bench::status_of(&report, "a.md"),
        Bench::status_of(&report, "b.md"),
    ];
    assert!(statuses.contains(&FileStatus::Indexed));
    assert!(statuses.contains(&FileStatus::Duplicate), "{statuses:?}");
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
    // Two contents, each with its passage and its card.
    assert_eq!(report.summary.chunks_embedded as usize, points);
    let hits = b.ing.search_filtered(
        "quokka",
        &b.scope,
        5,
        None,
        &SearchFilter::default(),
        crate::SearchMode::Keyword,
    );
    let hit = hits.unwrap().into_iter().next().expect("a hit");
    let mut names: Vec<String> = std::iter::once(hit.locator.clone())
        .chain(hit.also_in.clone())
        .collect();
    names
        .iter_mut()
        .for_each(|n| *n = extractors::file_name_part(n).to_string());
    names.sort();
    assert_eq!(names, ["a.md", "b.md"], "{hit:#?}");
}

#[test]
fn a_renamed_file_keeps_its_points_without_embedding_again() {
    let b = Bench::new();
    b.write(
        "old.md",
        "# Log\n\nThe quokka survey counted nine animals.\n",
    );
    b.write("other.md", "# Other\n\nThe narwhal note.\n");
    b.sync();
    let before = b.points_and_catalog();
    std::fs::rename(b.docs.join("old.md"), b.docs.join("new.md")).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.chunks_embedded, 0, "{:#?}", report.files);
    assert_eq!(Bench::status_of(&report, "old.md"), FileStatus::Removed);
    // A duplicate of the old name when it reaches the store before the removal does.
    assert!(matches!(
        Bench::status_of(&report, "new.md"),
        FileStatus::Indexed | FileStatus::Duplicate
    ));
    assert_eq!(b.points_and_catalog(), before);
    let found = b.found("quokka");
    assert!(
        !found.is_empty() && found.iter().all(|l| l.contains("new.md")),
        "{found:?}"
    );
}

#[test]
fn a_changed_file_replaces_its_points_and_a_deleted_one_leaves_none() {
    let b = Bench::new();
    b.write("a.md", "# A\n\nThe quokka ledger.\n");
    b.write("b.md", "# B\n\nThe narwhal register.\n");
    b.sync();
    b.write("a.md", "# A\n\nThe wombat ledger, rewritten.\n");
    std::fs::remove_file(b.docs.join("b.md")).unwrap();
    let report = b.sync();
    assert_eq!(Bench::status_of(&report, "a.md"), FileStatus::Indexed);
    assert_eq!(Bench::status_of(&report, "b.md"), FileStatus::Removed);
    assert!(b.found("quokka").is_empty(), "the old text of a.md is gone");
    assert!(b.found("narwhal").is_empty(), "nothing of b.md is left");
    assert_eq!(b.found("wombat").len(), 1);
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
    // An unchanged run does nothing.
    let report = b.sync();
    assert_eq!(report.summary.chunks_embedded, 0);
    assert_eq!(Bench::status_of(&report, "a.md"), FileStatus::Unchanged);
}

#[test]
fn swapping_two_files_contents_loses_neither() {
    // Both contents lose their holder and are wanted again in the same run: the ledger keeps
    // each as an orphan for the other name to adopt.
    let b = Bench::new();
    b.write("x.md", "# X\n\nThe quokka text.\n");
    b.write("y.md", "# Y\n\nThe narwhal text.\n");
    b.sync();
    let before = b.points_and_catalog();
    std::fs::rename(b.docs.join("x.md"), b.docs.join("tmp")).unwrap();
    std::fs::rename(b.docs.join("y.md"), b.docs.join("x.md")).unwrap();
    std::fs::rename(b.docs.join("tmp"), b.docs.join("y.md")).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 0);
    assert_eq!(b.points_and_catalog(), before);
    let quokka = b.found("quokka");
    assert!(
        quokka.iter().all(|l| l.contains("y.md")) && !quokka.is_empty(),
        "{quokka:?}"
    );
    let narwhal = b.found("narwhal");
    assert!(
        narwhal.iter().all(|l| l.contains("x.md")) && !narwhal.is_empty(),
        "{narwhal:?}"
    );
}

#[test]
fn an_archive_that_becomes_a_plain_file_and_back_leaves_no_member_behind() {
    // Once hung the walk stage (a catalog lock held across the removal of the old members).
    let b = Bench::new();
    let zip = crate::unpack::zip_of(&[("inner/quokka.md", b"# Q\n\nThe quokka member.\n")]);
    std::fs::write(b.docs.join("box.zip"), &zip).unwrap();
    b.sync();
    assert!(b
        .found("quokka")
        .iter()
        .any(|l| l.contains("box.zip!/inner/quokka.md")));
    std::fs::write(b.docs.join("box.zip"), "# Box\n\nNow a narwhal note.\n").unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 0, "{:#?}", report.files);
    assert!(b.found("quokka").is_empty(), "the old member is gone");
    assert!(!b.found("narwhal").is_empty());
    std::fs::write(b.docs.join("box.zip"), &zip).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 0, "{:#?}", report.files);
    assert!(b.found("narwhal").is_empty());
    assert!(b
        .found("quokka")
        .iter()
        .any(|l| l.contains("box.zip!/inner/quokka.md")));
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
}

#[test]
fn a_file_that_cannot_be_extracted_is_one_failed_line_and_the_run_goes_on() {
    let b = Bench::new();
    b.write("good.md", "# Good\n\nThe quokka text.\n");
    std::fs::write(
        b.docs.join("broken.pdf"),
        b"%PDF-1.7\n1 0 obj <</Type /Catalog",
    )
    .unwrap();
    let report = b.sync();
    assert_eq!(Bench::status_of(&report, "broken.pdf"), FileStatus::Failed);
    assert_eq!(Bench::status_of(&report, "good.md"), FileStatus::Indexed);
    assert_eq!(report.summary.failed, 1);
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
}

#[test]
fn a_failed_file_and_an_archive_are_found_by_their_names_until_they_change_or_go() {
    let b = Bench::new();
    std::fs::write(
        b.docs.join("wombat-budget.pdf"),
        b"%PDF-1.7\n1 0 obj <</Type /Catalog",
    )
    .unwrap();
    let zip = crate::unpack::zip_of(&[("inner/quokka.md", b"# Q\n\nThe quokka member.\n")]);
    std::fs::write(b.docs.join("marsupials.zip"), &zip).unwrap();
    // A FIFO is skipped at every sync: recorded again each time, it keeps its card. (A
    // link is `ignored`, like a hidden file: no entry, no card.)
    nix::unistd::mkfifo(&b.docs.join("koala-pipe.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", b.docs.join("emu-link.md")).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 1, "{:#?}", report.files);
    assert_eq!(report.summary.skipped, 1, "{:#?}", report.files);
    assert_eq!(report.summary.entry_cards, 3);
    let pdf = b.docs.join("wombat-budget.pdf").display().to_string();
    let zip_locator = b.docs.join("marsupials.zip").display().to_string();
    let link = b.docs.join("koala-pipe.md").display().to_string();
    assert!(b.found("emu").is_empty(), "a link has no card");
    assert_eq!(
        b.entry_cards(),
        [link.clone(), zip_locator.clone(), pdf.clone()]
    );
    assert_eq!(b.found("koala"), std::slice::from_ref(&link));
    // Found by a word of their names, though neither has content in the index.
    assert_eq!(b.found("wombat"), std::slice::from_ref(&pdf));
    assert!(
        b.found("marsupials").contains(&zip_locator),
        "{:?}",
        b.found("marsupials")
    );
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
    // The ledger line of the failed file counts no chunks, then or when unchanged.
    let again = b.sync();
    assert_eq!(
        again.summary.entry_cards, 0,
        "an unchanged run writes no card"
    );
    assert!(again
        .files
        .iter()
        .all(|f| f.chunks == 0 || f.status != FileStatus::Failed));
    assert_eq!(b.entry_cards().len(), 3);

    // The file is mended: its content replaces its card. The archive goes: its card too.
    b.write(
        "wombat-budget.pdf",
        "# Wombat budget\n\nThe wombat budget is fine.\n",
    );
    std::fs::remove_file(b.docs.join("marsupials.zip")).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 0, "{:#?}", report.files);
    assert_eq!(b.entry_cards(), [link], "only the link's card is left");
    assert!(b.found("marsupials").is_empty());
    assert!(b.found("wombat").contains(&pdf));
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
}

#[test]
fn an_archive_card_lists_its_members_nested_ones_too_and_forgets_a_removed_one() {
    let b = Bench::new();
    let inner = crate::unpack::zip_of(&[
        ("emu.md", b"# Emu\n\nThe emu runs.\n"),
        ("dingo.md", b"# Dingo\n\nThe dingo howls.\n"),
    ]);
    let outer = crate::unpack::zip_of(&[
        ("outback.zip", inner.as_slice()),
        ("numbat.md", b"# Numbat\n\nThe numbat digs.\n"),
    ]);
    std::fs::write(b.docs.join("fauna.zip"), &outer).unwrap();
    let report = b.sync();
    assert_eq!(report.summary.failed, 0, "{:#?}", report.files);
    let top = b.docs.join("fauna.zip").display().to_string();
    let nested = format!("{top}!/outback.zip");
    // Every card pass here runs after each stored item: the nested archive's card was
    // first made before its members were all recorded, and made again with all of them.
    let text = b.card_text("outback", &nested);
    assert!(
        text.contains("holds 2 files") && text.contains("dingo.md"),
        "{text}"
    );
    assert!(text.contains("emu.md"), "{text}");
    let text = b.card_text("fauna", &top);
    assert!(text.contains("holds 4 files"), "{text}");
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);

    // One member removed (as an upload's member can be): the archives above it forget it.
    let gone = format!("{nested}!/dingo.md");
    b.ing
        .ingest(vec![Input::Remove { locator: gone }], &b.scope, &|_| {})
        .unwrap();
    let text = b.card_text("outback", &nested);
    assert!(
        text.contains("holds 1 file") && !text.contains("dingo"),
        "{text}"
    );
    let text = b.card_text("fauna", &top);
    assert!(text.contains("holds 3 files"), "{text}");
    let (points, catalog) = b.points_and_catalog();
    assert_eq!(points, catalog);
}

#[test]
fn an_uploads_tags_find_its_unread_members_and_a_member_read_later() {
    let b = Bench::new();
    let long = "The ledger of the lighthouse keeper, page after page. ".repeat(10);
    let upload = crate::unpack::zip_of(&[
        ("a.md", b"# Tide\n\nThe lighthouse tide table.\n"),
        ("lighthouse-log.md", long.as_bytes()),
    ]);
    let spooled = b.docs.join("spooled");
    std::fs::write(&spooled, upload).unwrap();
    let tags = vec!["batch=7".to_string()];
    let input = Input::Upload {
        name: "batch.zip".into(),
        path: spooled.clone(),
        limits: Some(crate::Limits {
            max_file_bytes: 300,
            ..crate::Limits::default()
        }),
        tags: tags.clone(),
    };
    let report = b.ing.ingest(vec![input], &b.scope, &|_| {}).unwrap();
    assert_eq!(report.summary.skipped, 1, "{:#?}", report.files);
    let log = "batch.zip!/lighthouse-log.md";
    // The skipped member's card carries the upload's tags, so a search within the upload
    // finds it by its name.
    let within = SearchFilter {
        tags: tags.clone(),
        ..SearchFilter::default()
    };
    let query = crate::index::IndexQuery {
        vector: None,
        text: Some("lighthouse log".into()),
        multilingual: None,
        name: false,
    };
    let store = b.ing.store().unwrap();
    let found: Vec<String> = store
        .search(&b.scope, &query, 20, 0, None, &within)
        .unwrap()
        .into_iter()
        .map(|h| h.locator)
        .collect();
    assert!(found.iter().any(|l| l == log), "{found:?}");
    // Read on demand later (the extract tool), the member keeps the upload's tags.
    let member = Input::Member {
        archive: spooled,
        member: log.into(),
    };
    let report = b.ing.ingest(vec![member], &b.scope, &|_| {}).unwrap();
    assert_eq!(
        Bench::status_of(&report, "lighthouse-log.md"),
        FileStatus::Indexed
    );
    let tags_of_log = b.ing.catalog().get(&b.scope, log).map(|e| e.tags.clone());
    assert_eq!(tags_of_log, Some(tags));
}
