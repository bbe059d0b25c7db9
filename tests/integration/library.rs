//! The library API an upload handler uses.

use ingest::{FileStatus, Ingestor, Scope};

#[test]
fn ingest_bytes_then_search_is_scoped() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Ingestor>();

    let dir = tempfile::tempdir().unwrap();
    let ingestor = Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
    let alice = Scope::user("alice");
    let bob = Scope::user("bob");
    let archive = crate::util::zip_of(&[
        ("q3/revenue.csv", b"region,revenue\nNorth,1200\nSouth,900\n"),
        (
            "q3/memo.md",
            b"# Memo\nThe northern region beat its revenue target by twenty percent.\n",
        ),
    ]);
    let report = ingestor
        .ingest_bytes("upload.zip", archive, &alice)
        .unwrap();
    assert_eq!(report.files.len(), 3, "two members and the archive");
    assert!(
        report.files.iter().all(|f| f.status == FileStatus::Indexed),
        "{report:#?}"
    );
    // The ledger comes back in locator order.
    assert_eq!(report.files[0].locator, "upload.zip");
    assert!(report.files[0].archive);
    assert_eq!(report.files[1].locator, "upload.zip!/q3/memo.md");

    let hits = ingestor
        .search("which region beat the revenue target", &alice, 3, None)
        .unwrap();
    assert_eq!(hits[0].locator, "upload.zip!/q3/memo.md#line=1-2");
    assert!(ingestor
        .search("which region beat the revenue target", &bob, 3, None)
        .unwrap()
        .is_empty());
    let high = ingestor
        .search(
            "which region beat the revenue target",
            &alice,
            3,
            Some(0.99),
        )
        .unwrap();
    assert!(high.is_empty(), "{high:#?}");
}

/// The report `ingest` returns must be the observer's stream: the same lines (in locator
/// order) and a summary that counts exactly them.
#[test]
fn the_returned_report_is_what_the_observer_saw() {
    use std::sync::Mutex;

    fn run(
        ingestor: &Ingestor,
        folder: &std::path::Path,
    ) -> (ingest::IngestReport, Vec<ingest::FileReport>) {
        let seen = Mutex::new(Vec::new());
        let report = ingestor
            .ingest(
                vec![ingest::Input::Path(folder.to_path_buf())],
                &Scope::user("u"),
                &|r| seen.lock().unwrap().push(r.clone()),
            )
            .unwrap();
        (report, seen.into_inner().unwrap())
    }

    fn check(report: &ingest::IngestReport, seen: &[ingest::FileReport]) {
        let mut sorted = seen.to_vec();
        sorted.sort_by(|a, b| a.locator.cmp(&b.locator));
        assert_eq!(report.files, sorted, "returned ledger vs observed stream");
        let s = &report.summary;
        let count = |status: FileStatus| seen.iter().filter(|r| r.status == status).count() as u64;
        assert_eq!(s.files, seen.len() as u64);
        assert_eq!(s.indexed, count(FileStatus::Indexed), "{s:?}");
        assert_eq!(s.unchanged, count(FileStatus::Unchanged), "{s:?}");
        assert_eq!(s.skipped, count(FileStatus::Skipped), "{s:?}");
        assert_eq!(s.failed, count(FileStatus::Failed), "{s:?}");
        assert_eq!(s.duplicate, count(FileStatus::Duplicate), "{s:?}");
        assert_eq!(s.removed, count(FileStatus::Removed), "{s:?}");
        assert_eq!(s.ignored, count(FileStatus::Ignored), "{s:?}");
        assert_eq!(s.archives, seen.iter().filter(|r| r.archive).count() as u64);
        let indexed_chunks: u64 = seen
            .iter()
            .filter(|r| r.status == FileStatus::Indexed)
            .map(|r| u64::from(r.chunks))
            .sum();
        assert!(s.chunks_embedded <= indexed_chunks, "{s:?}");
    }

    let dir = tempfile::tempdir().unwrap();
    let ingestor = Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
    let folder = dir.path().join("in");
    let write = |rel: &str, bytes: &[u8]| {
        let p = folder.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    };
    let memo = b"# Memo\nThe northern region beat its revenue target.\n";
    write("memo.md", memo);
    write("copy/memo.md", memo);
    write(
        "notes.txt",
        b"Tide tables for the harbour, spring and neap.\n",
    );
    write("broken.pdf", b"%PDF-1.4\nthis is not a PDF body at all\n");
    write(".hidden/secret.txt", b"not read\n");
    write(
        "bundle.zip",
        &crate::util::zip_of(&[("inner.txt", b"a member of the bundle\n")]),
    );

    let (report, seen) = run(&ingestor, &folder);
    check(&report, &seen);
    let s = &report.summary;
    // Not vacuous: the run produced each of these.
    assert!(
        s.indexed >= 4 && s.duplicate == 1 && s.failed == 1 && s.ignored == 1,
        "{seen:#?}"
    );
    assert_eq!(s.archives, 1, "{seen:#?}");
    assert!(s.chunks_embedded > 0);

    std::fs::remove_file(folder.join("notes.txt")).unwrap();
    let (report, seen) = run(&ingestor, &folder);
    check(&report, &seen);
    let s = &report.summary;
    assert!(s.unchanged >= 3 && s.removed == 1, "{seen:#?}");
}
