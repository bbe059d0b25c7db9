//! What the crate's integration tests, benches and fuzz targets reach inside the library: not
//! part of the API (hidden from the docs), and nothing here is used by the library itself.
//!
//! Unit tests inside the crate use these too, so that each helper exists once.

/// Failpoint sites and the variable that arms them, for crash tests (see `crates/base/src/failpoint.rs`).
pub use crate::failpoint::{ENV as FAILPOINTS_ENV, SITES as FAILPOINT_SITES};

/// The stages' internals, for benches, fuzz targets and checks on what is stored.
pub use crate::embed::{
    load_embedder, load_tokenizer, Chunk, Chunker, Embedder, FastEmbedder, OpenVinoEmbedder,
    TooManyChunks, DIMENSIONS, MAX_SEQ_TOKENS, WINDOW_BYTES,
};
pub use crate::isolation::{InProcess, WorkerPool, WORKER_ARG};
pub use crate::unpack::{
    is_hidden, Budget, DiskEntry, DiskFile, DiskWalk, Leaf, Limit, Unpacker, WalkOptions, MAX_GLOBS,
};

/// The index's internals, for checks on what is stored.
pub use crate::index::{
    Catalog, CatalogEntry, EdgeIndex, EntryStatus, ExportedPoint, IndexRead, IndexWrite, JobRow,
    PgCatalog, PointRecord, ShadowedMember, SqliteCatalog, StoredContent,
};

/// `verify_quote`'s search of `quote` in `text` alone (no file, no answer): whether it was
/// found, else the closest passage's score (or where it stopped), as printed. For the
/// worst-case benchmark (`examples/quote_worst_case.rs`).
pub fn quote_search(text: &str, quote: &str) -> impl std::fmt::Debug {
    crate::tools::quote_search_text(text, quote)
}

pub use crate::unpack::zip_of;

/// Process ids of `pool`'s idle workers: tells whether a worker was reused or replaced.
pub fn idle_worker_pids(pool: &WorkerPool) -> Vec<u32> {
    pool.idle_pids()
}

pub use crate::index::servers::{PostgresServer, QdrantServer, POSTGRES_SKIPPED, QDRANT_SKIPPED};

/// Fill the catalog in `data_dir` with `n` generated entries of `scope` (files in folders
/// of 1 000, each its own content), saved every 100 000: a scale benchmark's catalog.
pub fn fill_catalog(data_dir: &std::path::Path, scope: &crate::Scope, n: u64) -> crate::Result<()> {
    let catalog = SqliteCatalog::open(data_dir)?;
    for i in 0..n {
        catalog.put(scope, generated_entry(i));
        if i % 100_000 == 99_999 {
            catalog.save()?;
        }
    }
    catalog.save()
}

/// Entry `i` of [`fill_catalog`].
pub fn generated_entry(i: u64) -> CatalogEntry {
    CatalogEntry::indexed(
        format!("/srv/bulk/folder-{:05}/report-{i:07}.txt", i / 1000),
        None,
        blake3::hash(&i.to_le_bytes()).to_hex().to_string(),
        4096,
        1_700_000_000_000_000_000,
        3,
    )
}

/// The TLS version of a connection of `catalog`'s pool as the server sees it
/// (`pg_stat_ssl` of the connection's own backend), or `None` for a connection without TLS.
pub fn catalog_tls_version(catalog: &PgCatalog) -> crate::Result<Option<String>> {
    catalog.try_call(|c| {
        let row = c.query_one(
            "SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
            &[],
        )?;
        let ssl: bool = row.try_get(0)?;
        Ok(if ssl { row.try_get(1)? } else { None })
    })
}

/// A content record for catalog checks: an index of `hash` and a pack of one text object.
#[allow(clippy::unwrap_used)] // a test helper
fn content_record(hash: &str, text: &str) -> crate::index::objects::ContentRecord {
    let index: extractors::FileContentIndex = serde_json::from_value(serde_json::json!({
        "id": hash, "file_name": "f.txt", "mime_type": "text/plain", "container_path": "/f.txt",
        "total_objects": 1, "total_size": text.len(), "structure": {}, "object_summary": [],
        "extracted_at": 0, "status": "indexed"
    }))
    .unwrap();
    let object: extractors::ContentObject = serde_json::from_value(serde_json::json!({
        "id": format!("{hash}-0"), "file_id": hash, "content_type": "text", "data": text,
        "context_ref": {"container_path": "/f.txt", "location": "/f.txt"}, "sequence": 0
    }))
    .unwrap();
    crate::index::objects::ContentRecord {
        index,
        pack: crate::index::objects::pack(&[object]).unwrap(),
    }
}

/// What every [`Catalog`] implementation must do alike: run on a fresh, empty catalog
/// (the embedded one and PostgreSQL run it; see tests/integration/catalogs.rs). Panics on
/// the first difference.
#[allow(clippy::unwrap_used, clippy::too_many_lines, clippy::indexing_slicing)] // a test helper
pub fn catalog_conformance(c: &dyn Catalog) {
    use crate::index::MAX_HOLDERS;
    let entry = |locator: &str, hash: &str, parent: Option<&str>| {
        CatalogEntry::indexed(locator, parent.map(str::to_string), hash, 1, 0, 2)
    };
    let (a, b) = (crate::Scope::user("a"), crate::Scope::user("b"));
    assert!(c.is_empty() && c.scopes().is_empty());

    // Round trips, replacement, isolation between scopes.
    let mut e = entry("/d/x.txt", "h1", None)
        .with_mime(Some("text/plain".into()))
        .with_tags(vec!["k=v".into(), "z=1".into()]);
    e.shadowed = vec![crate::index::ShadowedMember {
        locator: "/d/x.txt!/s".into(),
        reason: "hidden".into(),
    }];
    c.put(&a, e.clone());
    assert_eq!(c.get(&a, "/d/x.txt"), Some(e.clone()));
    assert_eq!(
        c.get(&b, "/d/x.txt"),
        None,
        "another scope's entry is missing"
    );
    let mut e2 = e.clone();
    e2.chunks = 7;
    c.put(&a, e2.clone());
    assert_eq!(c.get(&a, "/d/x.txt"), Some(e2));
    assert_eq!(c.len_of(&a), 1);
    assert_eq!(c.len_of(&b), 0);
    assert_eq!(c.scopes(), vec![a.clone()]);
    assert!(c.remove(&b, "/d/x.txt").is_none());
    assert!(c.remove(&a, "/d/x.txt").is_some());
    assert!(c.scopes().is_empty(), "a scope goes with its last entry");
    assert!(c.is_empty());

    // Holders: at most MAX_HOLDERS, ranked whatever the order, every tag.
    for n in (0..MAX_HOLDERS + 10).rev() {
        let e = CatalogEntry::indexed(
            format!("/z/bundle.zip!/copy-{n:03}.txt"),
            None,
            "h",
            1,
            1,
            1,
        )
        .with_tags(vec![format!("n={n:03}")]);
        c.put(&a, e);
    }
    c.put(&a, entry("/z/zz-original.txt", "h", None));
    let h = c.holders(&a, "h");
    assert_eq!(h.locators.len(), MAX_HOLDERS);
    assert_eq!(
        h.locators[0], "/z/zz-original.txt",
        "a file given directly first"
    );
    assert_eq!(h.locators[1], "/z/bundle.zip!/copy-000.txt");
    assert_eq!(h.tags.len(), MAX_HOLDERS + 10);
    assert_eq!(c.locators_with_hash(&a, "h").len(), MAX_HOLDERS + 11);
    assert!(c.holders(&b, "h").locators.is_empty());

    // Contents under a prefix that other files hold too: `h` (in /z only) and `h2` (in /y
    // and /z), not a content held once, not another scope's; at most `max`, in hash order.
    let extra = [
        ("/z/single.txt", "h1"),
        ("/y/one.txt", "h2"),
        ("/z/two.txt", "h2"),
    ];
    for (loc, hash) in extra {
        c.put(&a, entry(loc, hash, None));
    }
    assert_eq!(c.repeated_under(&a, "/z", 10), ["h", "h2"]);
    assert_eq!(c.repeated_under(&a, "/z/bundle.zip!/", 10), ["h"]);
    assert_eq!(c.repeated_under(&a, "/y", 10), ["h2"]);
    assert_eq!(c.repeated_under(&a, "/z", 1), ["h"]);
    assert!(c.repeated_under(&a, "/z/single", 10).is_empty());
    assert!(c.repeated_under(&a, "/z", 0).is_empty());
    assert!(c.repeated_under(&b, "/z", 10).is_empty());
    for (loc, _) in extra {
        c.remove(&a, loc);
    }

    // Members, prefixes (a neighbour whose name continues the archive's), unicode names.
    for (loc, parent) in [
        ("/m/a.zip", None),
        ("/m/a.zip!/x.txt", Some("/m/a.zip")),
        ("/m/a.zip!/ü/ÿ.txt", Some("/m/a.zip")),
        ("/m/a.zip!/\u{10FFFF}.txt", Some("/m/a.zip")),
        ("/m/a.zipper", None),
        ("/m/a.zip0", None),
    ] {
        c.put(&b, entry(loc, "hm", parent));
    }
    c.put(
        &b,
        CatalogEntry::without_content(
            "/m/a.zip!/bad.bin",
            Some("/m/a.zip".into()),
            None,
            EntryStatus::Failed,
            "broken",
        ),
    );
    let (names, count, unread) = c.member_names(&b, "/m/a.zip", 3);
    assert_eq!(names, ["bad.bin", "x.txt", "ü/ÿ.txt"]);
    assert_eq!((count, unread), (4, 1));
    assert_eq!(c.members_of(&b, "/m/a.zip").len(), 4);
    assert_eq!(c.under(&b, "/m/a.zip!/").len(), 4);
    assert_eq!(c.under(&b, "/m/a.zip").len(), 7);
    assert!(c.holds(&b, "/m/a.zip") && !c.holds(&b, "/m/a.zi") && !c.holds(&a, "/m/a.zip"));
    let locs: Vec<String> = c.entries(&b).into_iter().map(|e| e.locator).collect();
    let mut sorted = locs.clone();
    sorted.sort();
    assert_eq!(locs, sorted, "entries in locator (byte) order");

    // Cards: wanted, stored only if unchanged, missing again.
    let bad = c.get(&b, "/m/a.zip!/bad.bin").unwrap();
    assert_eq!(c.wanting_cards(&b), vec![bad.clone()]);
    let mut changed = bad.clone();
    changed.reason = Some("other".into());
    assert!(!c.set_card_stored(&b, &changed));
    assert!(c.set_card_stored(&b, &bad));
    assert!(!c.set_card_stored(&b, &bad), "stored once");
    assert!(c.wanting_cards(&b).is_empty());
    c.set_card_missing(&b, "/m/a.zip!/bad.bin");
    assert_eq!(c.wanting_cards(&b).len(), 1);

    // Forgetting a member drops its archive too.
    c.forget(&b, "/m/a.zip!/x.txt");
    assert!(c.get(&b, "/m/a.zip").is_none() && c.get(&b, "/m/a.zip!/x.txt").is_none());

    // Top-level entries under a folder.
    let c_scope = crate::Scope::user("c");
    for (loc, parent) in [
        ("/in/a.txt", None),
        ("/in/sub/b.txt", None),
        ("/in/c.zip", None),
        ("/in/c.zip!/m.txt", Some("/in/c.zip")),
        ("/inbox/d.txt", None),
        ("/in!/e.txt", None),
    ] {
        let loc = match parent {
            None => extractors::Locator::root(loc).to_string(),
            Some(_) => loc.to_string(),
        };
        c.put(&c_scope, entry(&loc, "ht", parent));
    }
    let under = |root: &str| -> Vec<String> {
        c.top_level_under(&c_scope, root)
            .into_iter()
            .map(|e| e.locator)
            .collect()
    };
    assert_eq!(under("/in"), ["/in/a.txt", "/in/c.zip", "/in/sub/b.txt"]);
    assert_eq!(under("/in/"), under("/in"));
    assert_eq!(under("/in!"), ["/in%21/e.txt"]);
    assert!(under("/nowhere").is_empty());
    let top: usize = c.top_level().iter().filter(|(s, _)| *s == c_scope).count();
    assert_eq!(top, 5);

    // Totals.
    let st = c.stats(Some(&c_scope));
    assert_eq!(
        (st.files, st.indexed, st.distinct_contents, st.chunks),
        (6, 6, 1, 2)
    );
    assert_eq!(
        c.stats(Some(&crate::Scope::user("nobody"))),
        crate::CatalogStats::default()
    );
    assert!(c.stats(None).files >= 6 + MAX_HOLDERS as u64);

    // Content: written with its first holder, shared by scopes, dropped with the last.
    let record = content_record("hc", "the lighthouse keeper's log");
    assert!(c.content_index("hc").unwrap().is_none());
    assert!(c.pack("hc").unwrap().is_none());
    assert!(c
        .write_content_and_put(&a, "hc", &record, entry("/c1.txt", "hc", None))
        .unwrap()
        .is_none());
    let old = c
        .write_content_and_put(&b, "hc", &record, entry("/c2.txt", "hc", None))
        .unwrap();
    assert!(old.is_none());
    assert_eq!(c.content_index("hc").unwrap().unwrap().id, "hc");
    let objects = c
        .pack("hc")
        .unwrap()
        .unwrap()
        .content_objects("hc", "/c1.txt")
        .unwrap();
    assert_eq!(objects[0].data, "the lighthouse keeper's log");
    assert!(c.held_anywhere("hc"));
    c.remove(&a, "/c1.txt");
    assert!(!c.drop_content_index("hc").unwrap(), "held by scope b");
    assert!(c.content_index("hc").unwrap().is_some());
    c.remove(&b, "/c2.txt");
    assert!(c.drop_content_index("hc").unwrap());
    assert!(c.content_index("hc").unwrap().is_none() && c.pack("hc").unwrap().is_none());
    assert!(!c.drop_content_index("hc").unwrap(), "already gone");
    // The sweep drops contents nobody holds.
    c.write_content_and_put(
        &a,
        "hs",
        &content_record("hs", "s"),
        entry("/s.txt", "hs", None),
    )
    .unwrap();
    c.remove(&a, "/s.txt");
    assert!(c.drop_unheld_content_indexes().unwrap() >= 1);
    assert!(c.content_index("hs").unwrap().is_none());

    // Records: the first value stands.
    assert_eq!(c.record_once("model", "bf16").unwrap(), "bf16");
    assert_eq!(c.record_once("model", "e5").unwrap(), "bf16");
    assert_eq!(c.record_once("store", "qdrant://x").unwrap(), "qdrant://x");

    // The last run, and a save that reports nothing went wrong.
    assert!(c.last_run().is_none());
    let run = crate::LastRun {
        finished_at: 42,
        summary: crate::Summary::default(),
    };
    c.set_last_run(run.clone());
    assert_eq!(c.last_run(), Some(run));
    c.save().unwrap();
}

/// The one access rule, through a [`Catalog`]: for generated owners (one file each, and one
/// file of the same locator for all) and generated readers, what every tool's view of the
/// catalog lists is exactly the owners [`crate::access`] admits, and a locator several
/// owners hold resolves to the closest readable one — or to nothing, as a missing file.
/// Run on a fresh, empty catalog (the embedded one and PostgreSQL run it; see
/// tests/integration/catalogs.rs). Returns how many readers were checked.
#[allow(clippy::unwrap_used, clippy::panic)] // a test helper
pub fn catalog_access_property(c: &dyn Catalog) -> usize {
    use crate::access::{can_read, closeness, generated_owners, generated_readers};
    use crate::tools::view::{document_in, View};
    let owners = generated_owners();
    for (n, (owner, locator)) in owners.iter().enumerate() {
        let hash = format!("h{n}");
        c.put(owner, CatalogEntry::indexed(locator, None, &hash, 1, 0, 1));
        c.put(
            owner,
            CatalogEntry::indexed("/same.txt", None, &hash, 1, 0, 1),
        );
    }
    c.save().unwrap();
    // Scopes come back exactly as stored (no field lost, no empty id made absent).
    let mut stored: Vec<String> = c.scopes().iter().map(crate::Scope::key).collect();
    let mut put: Vec<String> = owners.iter().map(|(o, _)| o.key()).collect();
    stored.sort();
    put.sort();
    assert_eq!(stored, put, "the catalog's scopes");
    let mut checked = 0;
    for reader in generated_readers() {
        let readable: Vec<&(crate::Scope, String)> = owners
            .iter()
            .filter(|(o, _)| can_read(&reader, o))
            .collect();
        let mut want: Vec<String> = readable.iter().map(|(_, l)| l.clone()).collect();
        if !readable.is_empty() {
            want.push("/same.txt".into());
        }
        want.sort();
        let view = View::in_catalog(c, &reader, None);
        let got: Vec<String> = view.entries.keys().cloned().collect();
        assert_eq!(got, want, "what reader {reader:?} sees");
        match document_in(c, &reader, "/same.txt", None) {
            Ok(doc) => {
                assert!(can_read(&reader, &doc.owner), "reader {reader:?}");
                let best = readable.iter().map(|(o, _)| closeness(&reader, o)).min();
                assert_eq!(
                    Some(closeness(&reader, &doc.owner)),
                    best,
                    "reader {reader:?}"
                );
                assert_eq!(doc.others.len() + 1, readable.len(), "reader {reader:?}");
            }
            Err(crate::tools::ToolError::NotFound(_)) => {
                assert!(readable.is_empty(), "reader {reader:?} was refused");
            }
            Err(e) => panic!("reader {reader:?}: {e}"),
        }
        checked += 1;
    }
    assert!(checked >= 76 && owners.len() >= 60, "{checked} readers");
    checked
}
