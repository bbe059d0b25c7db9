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
