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
