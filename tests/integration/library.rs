//! The library API an upload handler uses.

use ingest::{FileStatus, Ingestor, Scope};
use std::process::Command;

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

/// A panic while an archive is unpacked (injected with the `unpack.member` failpoint) comes
/// back to the caller as a failed line in an `Ok` report, not as a panic.
#[test]
fn a_panic_while_unpacking_is_a_failed_report_not_a_panic() {
    // Failpoints are armed once per process from the environment: run this test again in a
    // child process that has one armed, and check that it ran and passed.
    const CHILD: &str = "INGEST_TEST_UNPACK_PANIC_CHILD";
    const NAME: &str = "library::a_panic_while_unpacking_is_a_failed_report_not_a_panic";
    if std::env::var_os(CHILD).is_none() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("INGEST_FAILPOINTS", "unpack.member=2:panic")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    std::fs::create_dir(&input).unwrap();
    let archive = crate::util::zip_of(&[
        (
            "a.txt",
            b"The crane log was signed by the harbour master on Monday.",
        ),
        ("b.txt", b"The buoy chains are replaced every third winter."),
    ]);
    std::fs::write(input.join("archive.zip"), archive).unwrap();
    std::fs::write(
        input.join("notes.txt"),
        "The pilot ladder on the tug was repainted in bright orange.",
    )
    .unwrap();
    let ingestor = Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap();
    let report = ingestor
        .ingest_path(&input, &Scope::user("alice"))
        .expect("a panic while unpacking is reported, not returned as an error");
    let line = |suffix: &str| {
        report
            .files
            .iter()
            .find(|f| f.locator.ends_with(suffix))
            .unwrap_or_else(|| panic!("no line for {suffix}: {report:#?}"))
    };
    let archive = line("/archive.zip");
    assert_eq!(archive.status, FileStatus::Failed, "{report:#?}");
    assert!(
        archive
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("unpacking panicked: failpoint unpack.member")),
        "{archive:?}"
    );
    assert_eq!(line("/notes.txt").status, FileStatus::Indexed);
    assert_eq!(report.summary.failed, 1, "{report:#?}");
}

#[test]
fn a_file_over_the_chunk_limit_is_skipped_and_big_files_pass_a_small_byte_budget() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let long: String = (1..=300)
        .map(|i| format!("Paragraph {i} tells of the harbour and the boats moored there.\n\n"))
        .collect();
    std::fs::write(docs.join("long.txt"), &long).unwrap();
    std::fs::write(docs.join("short.md"), "# Tides\nThe tide turns at noon.\n").unwrap();
    // Binary files (no chunks), each three times the whole in-flight budget.
    for (n, name) in ["a.bin", "b.bin", "c.bin"].iter().enumerate() {
        let bytes: Vec<u8> = (0..3 * 1024 * 1024u64)
            .map(|i| ((i.wrapping_mul(2_654_435_761) + n as u64) >> 7) as u8)
            .collect();
        std::fs::write(docs.join(name), bytes).unwrap();
    }
    let mut config = crate::util::library_config(&dir.path().join("data"));
    config.chunking.max_file_chunks = 5;
    config.in_flight_bytes = 1024 * 1024;
    let ingestor = Ingestor::open(config).unwrap();
    let scope = Scope::user("u");
    let status_of = |report: &ingest::IngestReport, name: &str| {
        let f = report
            .files
            .iter()
            .find(|f| f.locator.ends_with(name))
            .unwrap_or_else(|| panic!("no line for {name}: {report:#?}"));
        (f.status, f.reason.clone().unwrap_or_default())
    };

    let report = ingestor.ingest_path(&docs, &scope).unwrap();
    assert_eq!(report.files.len(), 5, "{report:#?}");
    let (status, reason) = status_of(&report, "long.txt");
    assert_eq!(status, FileStatus::Skipped);
    assert_eq!(reason, "limit: chunks (more than 5 in one file)");
    assert_eq!(status_of(&report, "short.md").0, FileStatus::Indexed);
    for name in ["a.bin", "b.bin", "c.bin"] {
        assert_eq!(status_of(&report, name).0, FileStatus::Indexed, "{name}");
    }
    let hits = ingestor
        .search("when does the tide turn", &scope, 1, None)
        .unwrap();
    assert!(hits[0].locator.contains("short.md"), "{hits:#?}");
    assert!(ingestor
        .search("harbour boats moored", &scope, 5, None)
        .unwrap()
        .iter()
        .all(|h| !h.locator.contains("long.txt")));

    // The next run says the same about the unchanged file, without reading it.
    let again = ingestor.ingest_path(&docs, &scope).unwrap();
    assert_eq!(status_of(&again, "long.txt"), (status, reason));
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

/// A steady stream of uploads to a scope must not keep a sync of that scope waiting: the
/// upload run takes no more jobs once another run asks for the scope, ends, and the sync goes
/// (run slots are served in turn). The uploads are new versions of one name, at least three
/// open until the sync returns: jobs on one name run one after the other, each sent as the
/// one before ends, so the run is never idle and without that rule the sync would wait until
/// the uploads stop (here: the hang guard).
#[test]
fn a_sync_gets_its_turn_while_uploads_keep_coming() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let ingestor =
        Arc::new(Ingestor::open(crate::util::library_config(&dir.path().join("data"))).unwrap());
    let uploads =
        ingest::Uploads::start(Arc::clone(&ingestor), ingest::UploadsConfig::default()).unwrap();
    let alice = Scope::user("alice");
    let folder = dir.path().join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("sync-me.txt"),
        "The breakwater lamp is inspected every second Thursday.\n",
    )
    .unwrap();

    let synced = AtomicBool::new(false);
    let submitted = AtomicUsize::new(0);
    let hang_guard = Duration::from_secs(600);
    std::thread::scope(|s| {
        let uploader = s.spawn(|| {
            let started = Instant::now();
            while !synced.load(Ordering::SeqCst) && started.elapsed() < hang_guard {
                if uploads.open_jobs() < 3 {
                    let n = submitted.fetch_add(1, Ordering::SeqCst);
                    let body = format!("Upload number {n} about the tide at the pier {n}.\n");
                    uploads
                        .submit(
                            "stream.txt",
                            body.as_bytes(),
                            &alice,
                            &ingest::UploadOptions::default(),
                        )
                        .unwrap();
                } else {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            // Whether the stream was still going when the sync returned.
            synced.load(Ordering::SeqCst)
        });
        // Let the upload run start and get busy first.
        while submitted.load(Ordering::SeqCst) < 5 {
            std::thread::sleep(Duration::from_millis(10));
        }
        let report = ingestor
            .ingest(vec![ingest::Input::Path(folder.clone())], &alice, &|_| {})
            .unwrap();
        synced.store(true, Ordering::SeqCst);
        assert_eq!(report.summary.indexed, 1, "{report:#?}");
        assert!(
            uploader.join().unwrap(),
            "the sync returned only after the uploads stopped ({} submitted)",
            submitted.load(Ordering::SeqCst)
        );
    });
    uploads.shutdown();
    println!(
        "uploads submitted before the sync returned: {}",
        submitted.load(Ordering::SeqCst)
    );
}
