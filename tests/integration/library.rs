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
