//! The backend-conformance suite: what the pipeline, sync, repair and the agent tools rely on
//! from a [`VectorIndex`], run on the embedded shard and on a real Qdrant server (a fresh
//! collection per index), with the same assertions. Without a server (see
//! [`crate::testkit::QdrantServer`]) the server half prints `SKIPPED` and does not run.
//!
//! Also here: the two backends answer the same searches identically, and the rules for
//! several nodes writing one server collection (holder records).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

use super::testing::{chunks, inventory, unit};
use super::*;
use crate::testkit::{QdrantServer, QDRANT_SKIPPED};
use extractors::Scope;

/// Which backend [`open`] opens in the running test.
#[derive(Clone)]
enum Backend {
    Edge,
    /// A server's gRPC address.
    Server(String),
}

thread_local! {
    static BACKEND: RefCell<Backend> = const { RefCell::new(Backend::Edge) };
}

/// A server config for tests: loopback, one machine (no clock skew to allow for), short
/// retries.
pub(super) fn test_server_config(grpc: &str, collection: &str) -> ServerConfig {
    let mut c = ServerConfig::new(grpc, collection);
    c.clock_skew = std::time::Duration::ZERO;
    c.retry_for = std::time::Duration::from_secs(20);
    c
}

/// A collection name no other test uses.
pub(super) fn fresh_collection() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}

/// Every test of the suite, once on each backend: `edge::NAME` and `qdrant::NAME` (the
/// Makefile leaves out tests named `qdrant` when no server is provisioned, so nextest
/// reports them as skipped).
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod edge {
            $(#[test]
            fn $name() {
                super::$name();
            })*
        }
        mod qdrant {
            $(#[test]
            fn $name() {
                let Some(server) = crate::testkit::QdrantServer::start() else {
                    eprintln!("{}", crate::testkit::QDRANT_SKIPPED);
                    return;
                };
                super::BACKEND.with(|b| *b.borrow_mut() = super::Backend::Server(server.grpc[0].clone()));
                super::$name();
            })*
        }
    };
}

on_every_backend!(
    exported_points_imported_elsewhere_answer_the_same,
    point_ids_derive_from_scope_hash_and_index_and_upserting_again_adds_nothing,
    a_scope_never_sees_another_users_points,
    shared_content_is_visible_within_its_mandate_only,
    deleting_a_content_removes_all_its_chunks_and_nothing_else,
    set_holders_repoints_and_retags_every_chunk_of_one_content_in_one_scope,
    points_survive_reopening_the_shard,
    a_locator_prefix_matches_whole_folders_archives_and_files_only,
    pages_sections_sheets_slides_and_types_narrow_the_hits,
    a_filter_never_lets_another_scopes_points_through,
    set_holders_moves_the_prefix_match,
    offset_skips_the_best_hits_for_paging,
    keyword_search_finds_rare_terms_file_names_and_sections_and_hybrid_fuses,
    the_store_filter_admits_exactly_what_the_access_rule_does,
    chunks_in_other_languages_are_found_in_the_multilingual_space_too,
);

/// Chunks with a multilingual vector are ranked in that space beside the index model's
/// (found though their index-model vectors point elsewhere), the space is searched only
/// by a query that has such a vector, the access rule holds in it, and the vectors survive
/// export and import.
fn chunks_in_other_languages_are_found_in_the_multilingual_space_too() {
    let alice = Scope::user("alice");
    let bob = Scope::user("bob");
    let (_a, store) = open();
    assert!(store.multilingual_space());
    store
        .upsert(&alice, &chunks("en", 3, "alice/en.txt", 0))
        .unwrap();
    assert!(!store.has_multilingual_points().unwrap());
    let mut german = chunks("de", 2, "alice/de.txt", 10);
    for (i, c) in german.iter_mut().enumerate() {
        c.multilingual = Some(unit(100 + i));
    }
    store.upsert(&alice, &german).unwrap();
    let mut dutch = chunks("nl", 1, "bob/nl.txt", 20);
    dutch[0].multilingual = Some(unit(100));
    store.upsert(&bob, &dutch).unwrap();
    assert!(store.has_multilingual_points().unwrap());
    let all = SearchFilter::default();
    // The index model's vector points at en.txt; the multilingual one at de.txt's chunk 1.
    let query = IndexQuery {
        vector: Some(unit(0)),
        text: None,
        multilingual: Some(unit(101)),
        name: false,
    };
    let hits = store.search(&alice, &query, 3, 0, None, &all).unwrap();
    let found: Vec<&str> = hits.iter().map(|h| h.locator.as_str()).collect();
    assert!(found.contains(&"alice/en.txt#line=1"), "{found:?}");
    assert!(found.contains(&"alice/de.txt#line=2"), "{found:?}");
    assert!(!found.iter().any(|l| l.starts_with("bob/")), "{found:?}");
    // Without the multilingual vector the space is not searched.
    let plain = IndexQuery::dense(unit(0));
    let hits = store.search(&alice, &plain, 3, 0, Some(0.5), &all).unwrap();
    assert_eq!(locators(&hits), ["alice/en.txt#line=1"]);
    // Bob's Dutch chunk answers his multilingual query, and only his.
    let his = IndexQuery {
        vector: Some(unit(300)),
        text: None,
        multilingual: Some(unit(100)),
        name: false,
    };
    let hits = store.search(&bob, &his, 3, 0, None, &all).unwrap();
    assert_eq!(
        hits.first().map(|h| h.locator.as_str()),
        Some("bob/nl.txt#line=1")
    );
    assert!(hits.iter().all(|h| h.locator.starts_with("bob/")));
    // Export and import keep both vectors.
    let mut points = Vec::new();
    store.export_points(&mut |p| points.push(p)).unwrap();
    assert_eq!(
        points.iter().filter(|p| p.multilingual.is_some()).count(),
        3
    );
    let (_b, to) = open();
    to.import_points(&points).unwrap();
    let again = to.search(&alice, &query, 3, 0, None, &all).unwrap();
    assert_eq!(
        again.iter().map(|h| &h.locator).collect::<Vec<_>>(),
        found.iter().collect::<Vec<_>>()
    );
}

/// Where an index [`open`] made lives, to open it again.
pub(super) struct Opened {
    backend: Backend,
    dir: tempfile::TempDir,
    collection: String,
}

impl Opened {
    /// The same index, opened again.
    pub(super) fn reopen(&self) -> Box<dyn VectorIndex> {
        match &self.backend {
            Backend::Edge => Box::new(EdgeIndex::open(self.dir.path()).unwrap()),
            Backend::Server(grpc) => Box::new(
                ServerIndex::open(&test_server_config(grpc, &self.collection), "node-a").unwrap(),
            ),
        }
    }
}

/// A new, empty index on the running test's backend.
fn open() -> (Opened, Box<dyn VectorIndex>) {
    let opened = Opened {
        backend: BACKEND.with(|b| b.borrow().clone()),
        dir: tempfile::tempdir().unwrap(),
        collection: fresh_collection(),
    };
    let store = opened.reopen();
    (opened, store)
}

/// The property behind every scope test: for generated readers and owners, a search through
/// the store's scope filter finds exactly the owners [`crate::access::can_read`] admits.
/// One point per owner; every reader searches them all.
fn the_store_filter_admits_exactly_what_the_access_rule_does() {
    let (_dir, store) = open();
    let owners = crate::access::generated_owners();
    for (n, (owner, locator)) in owners.iter().enumerate() {
        let hash = format!("h{n}");
        store.upsert(owner, &chunks(&hash, 1, locator, n)).unwrap();
    }
    let mut checked = 0;
    for reader in crate::access::generated_readers() {
        let mut want: Vec<String> = owners
            .iter()
            .filter(|(o, _)| crate::access::can_read(&reader, o))
            .map(|(_, l)| l.clone())
            .collect();
        want.sort();
        let got = found(&*store, &reader, SearchFilter::default());
        assert_eq!(got, want, "reader {reader:?}");
        assert_eq!(
            store.count(Some(&reader)).unwrap(),
            want.len(),
            "count for reader {reader:?}"
        );
        checked += 1;
    }
    assert!(
        checked >= 76 && owners.len() >= 60,
        "{checked} readers, {} owners",
        owners.len()
    );
}

/// The ids of `scope`'s own points, sorted.
fn ids(store: &dyn VectorIndex, scope: &Scope) -> Vec<u64> {
    let key = scope.key();
    let mut ids: Vec<u64> = store
        .point_records()
        .unwrap()
        .into_iter()
        .filter(|r| r.scope_key == key)
        .map(|r| point_id(&r.scope_key, &r.content_hash, r.chunk_index.unwrap()))
        .collect();
    ids.sort_unstable();
    ids
}

/// Export then import gives another shard the same points (ids, vectors, payloads) and
/// the same answers, dense and by words (keyword vectors come back from the payloads),
/// while the optimizer runs over it.
fn exported_points_imported_elsewhere_answer_the_same() {
    {
        let alice = Scope::user("alice");
        let (_a, from) = open();
        from.upsert(&alice, &chunks("h", 4, "alice/a.txt", 0))
            .unwrap();
        from.upsert(&alice, &chunks("g", 3, "alice/b.txt", 2))
            .unwrap();
        let mut points = Vec::new();
        from.export_points(&mut |p| points.push(p)).unwrap();
        assert_eq!(points.len(), 7);
        let (_b, to) = open();
        to.import_points(&points).unwrap();
        to.optimize().unwrap();
        let mut again = Vec::new();
        to.export_points(&mut |p| again.push(p)).unwrap();
        points.sort_by_key(|p| p.id);
        again.sort_by_key(|p| p.id);
        assert_eq!(points, again);
        let all = SearchFilter::default();
        for query in [IndexQuery::dense(unit(2)), IndexQuery::keyword("chunk")] {
            let a = from.search(&alice, &query, 10, 0, None, &all).unwrap();
            let b = to.search(&alice, &query, 10, 0, None, &all).unwrap();
            assert!(!a.is_empty());
            assert_eq!(a, b);
        }
    }
}

fn point_ids_derive_from_scope_hash_and_index_and_upserting_again_adds_nothing() {
    {
        let alice = Scope::user("alice");
        let key = alice.key();
        assert_eq!(point_id(&key, "h", 0), point_id(&key, "h", 0));
        assert_ne!(point_id(&key, "h", 0), point_id(&key, "h", 1));
        assert_ne!(point_id(&key, "h", 0), point_id(&key, "g", 0));
        assert_ne!(
            point_id(&key, "h", 0),
            point_id(&Scope::user("bob").key(), "h", 0)
        );

        let (_dir, store) = open();
        store.upsert(&alice, &chunks("h", 3, "a.txt", 0)).unwrap();
        let mut expected: Vec<u64> = (0..3).map(|i| point_id(&key, "h", i)).collect();
        expected.sort_unstable();
        assert_eq!(ids(&*store, &alice), expected);
        // The same content again (under another name): the same points, rewritten.
        store.upsert(&alice, &chunks("h", 3, "b.txt", 0)).unwrap();
        assert_eq!(ids(&*store, &alice), expected);
        assert_eq!(store.count(None).unwrap(), 3);
        assert_eq!(
            inventory(&*store),
            [(key, "h".into(), vec![0, 1, 2], vec!["b.txt".into()])]
        );
    }
}

fn a_scope_never_sees_another_users_points() {
    {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        // The same bytes in both scopes are two sets of points.
        store
            .upsert(&alice, &chunks("same", 2, "alice/a.txt", 0))
            .unwrap();
        store
            .upsert(&bob, &chunks("same", 2, "bob/a.txt", 0))
            .unwrap();
        store
            .upsert(&bob, &chunks("bobs", 1, "bob/b.txt", 5))
            .unwrap();
        assert_eq!(store.count(Some(&alice)).unwrap(), 2);
        assert_eq!(store.count(Some(&bob)).unwrap(), 3);
        assert_eq!(store.count(None).unwrap(), 5);
        assert!(ids(&*store, &alice)
            .iter()
            .all(|id| !ids(&*store, &bob).contains(id)));

        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(hits.len(), 2, "{hits:#?}");
        assert_eq!(hits[0].locator, "alice/a.txt#line=1");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.iter().all(|h| h.locator.starts_with("alice/")));
        // Bob's own content, searched for exactly, is not Alice's to find.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(5)),
                10,
                0,
                Some(0.5),
                &SearchFilter::default(),
            )
            .unwrap();
        assert!(hits.is_empty(), "{hits:#?}");
        let hits = store
            .search(
                &bob,
                &IndexQuery::dense(unit(5)),
                1,
                0,
                Some(0.5),
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(hits[0].locator, "bob/b.txt#line=1");
        assert!(store
            .search(
                &Scope::user("carol"),
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default()
            )
            .unwrap()
            .is_empty());
    }
}

fn shared_content_is_visible_within_its_mandate_only() {
    {
        let (_dir, store) = open();
        let in_mandate = |user: &str| Scope {
            mandate_id: Some("m".into()),
            ..Scope::user(user)
        };
        let shared = Scope {
            is_shared: true,
            ..in_mandate("alice")
        };
        store.upsert(&shared, &chunks("s", 1, "s.txt", 0)).unwrap();
        store
            .upsert(&in_mandate("alice"), &chunks("p", 1, "p.txt", 1))
            .unwrap();
        assert_eq!(store.count(Some(&in_mandate("bob"))).unwrap(), 1);
        let hits = store
            .search(
                &in_mandate("bob"),
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(
            hits.iter().map(|h| h.locator.as_str()).collect::<Vec<_>>(),
            ["s.txt#line=1"]
        );
        let elsewhere = Scope {
            mandate_id: Some("other".into()),
            ..Scope::user("bob")
        };
        assert_eq!(store.count(Some(&elsewhere)).unwrap(), 0);
        assert_eq!(store.count(Some(&Scope::user("bob"))).unwrap(), 0);
    }
}

fn deleting_a_content_removes_all_its_chunks_and_nothing_else() {
    {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        store.upsert(&alice, &chunks("h1", 3, "a1.txt", 0)).unwrap();
        store
            .upsert(&alice, &chunks("h2", 2, "a2.txt", 10))
            .unwrap();
        store.upsert(&bob, &chunks("h1", 3, "b1.txt", 0)).unwrap();
        store.delete_content(&alice, "h1").unwrap();
        assert_eq!(
            inventory(&*store),
            [
                (alice.key(), "h2".into(), vec![0, 1], vec!["a2.txt".into()]),
                (bob.key(), "h1".into(), vec![0, 1, 2], vec!["b1.txt".into()]),
            ]
        );
        assert_eq!(store.count(None).unwrap(), 5);
        // By key, as repair does for scopes the catalog no longer knows.
        store.delete_content_by_key(&bob.key(), "h1").unwrap();
        store.delete_content(&alice, "absent").unwrap();
        assert_eq!(
            inventory(&*store),
            [(alice.key(), "h2".into(), vec![0, 1], vec!["a2.txt".into()])]
        );
    }
}

/// Holders with these files and tags.
fn holders(locators: &[&str], tags: &[&str]) -> Holders {
    Holders {
        locators: locators.iter().map(|s| s.to_string()).collect(),
        tags: tags.iter().map(|s| s.to_string()).collect(),
    }
}

/// A filter requiring these tags.
fn tagged(tags: &[&str]) -> SearchFilter {
    SearchFilter {
        tags: tags.iter().map(|s| s.to_string()).collect(),
        ..SearchFilter::default()
    }
}

fn set_holders_repoints_and_retags_every_chunk_of_one_content_in_one_scope() {
    {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        let mut bobs = chunks("h", 2, "bob.txt", 0);
        for c in &mut bobs {
            c.tags = vec!["team=ops".into()];
        }
        store.upsert(&alice, &chunks("h", 2, "old.txt", 0)).unwrap();
        store.upsert(&bob, &bobs).unwrap();
        let search = |scope: &Scope, filter: &SearchFilter| {
            store
                .search(scope, &IndexQuery::dense(unit(1)), 5, 0, None, filter)
                .unwrap()
        };
        assert!(search(&alice, &tagged(&["team=ops"])).is_empty());
        assert_eq!(search(&bob, &tagged(&["team=ops"])).len(), 2);
        // In locator order, as the catalog lists holders (a server sorts its union).
        let both = holders(&["copy.txt", "new.txt"], &["case=17", "team=ops"]);
        store.set_holders(&alice, "h", &both).unwrap();
        assert_eq!(
            inventory(&*store),
            [
                (alice.key(), "h".into(), vec![0, 1], both.locators.clone()),
                (bob.key(), "h".into(), vec![0, 1], vec!["bob.txt".into()]),
            ]
        );
        // Every tag asked for must be there; bob's points keep their own tags.
        assert_eq!(search(&alice, &tagged(&["team=ops", "case=17"])).len(), 2);
        assert!(search(&alice, &tagged(&["team=ops", "case=18"])).is_empty());
        assert!(search(&bob, &tagged(&["case=17"])).is_empty());
        assert_eq!(search(&alice, &tagged(&[]))[0].tags, both.tags);
        // Tags go as they came.
        store
            .set_holders(&alice, "h", &holders(&["copy.txt", "new.txt"], &[]))
            .unwrap();
        assert!(search(&alice, &tagged(&["team=ops"])).is_empty());
        assert_eq!(search(&bob, &tagged(&["team=ops"])).len(), 2);
        store.set_holders(&alice, "h", &both).unwrap();
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(1)),
                1,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap();
        assert_eq!(hits[0].locator, "copy.txt#line=2");
        assert_eq!(hits[0].also_in, ["new.txt"]);
        assert_eq!(hits[0].content_hash, "h");
        assert_eq!(hits[0].text, "h chunk 1");
    }
}

fn points_survive_reopening_the_shard() {
    {
        let alice = Scope::user("alice");
        let (opened, store) = open();
        store.upsert(&alice, &chunks("h", 2, "a.txt", 0)).unwrap();
        store.flush();
        drop(store);
        let store = opened.reopen();
        assert_eq!(store.count(Some(&alice)).unwrap(), 2);
        assert_eq!(
            store
                .search(
                    &alice,
                    &IndexQuery::dense(unit(0)),
                    1,
                    0,
                    None,
                    &SearchFilter::default()
                )
                .unwrap()[0]
                .locator,
            "a.txt#line=1"
        );
    }
}

/// The files (hit locators without fragment) `scope` finds through `filter`, sorted, and
/// checked to be what the scope alone may read.
pub(super) fn found(store: &dyn VectorIndex, scope: &Scope, filter: SearchFilter) -> Vec<String> {
    let hits = store
        .search(scope, &IndexQuery::dense(unit(0)), 1000, 0, None, &filter)
        .unwrap();
    let mut files: Vec<String> = hits
        .iter()
        .map(|h| h.locator.split('#').next().unwrap().to_string())
        .collect();
    files.sort();
    files.dedup();
    files
}

/// The hit locators (with fragment) `scope` finds through `filter`, sorted.
pub(super) fn found_chunks(
    store: &dyn VectorIndex,
    scope: &Scope,
    filter: SearchFilter,
) -> Vec<String> {
    let hits = store
        .search(scope, &IndexQuery::dense(unit(0)), 1000, 0, None, &filter)
        .unwrap();
    let mut out: Vec<String> = hits.into_iter().map(|h| h.locator).collect();
    out.sort();
    out
}

pub(super) fn prefix(p: &str) -> SearchFilter {
    SearchFilter {
        locator_prefix: Some(p.into()),
        ..SearchFilter::default()
    }
}

const NESTED: &str = "/d/bundle.zip!/docs/inner.tar.gz!/notes/n.md";

/// Alice's files: a folder, a sibling sharing its name's start, a nested archive, an
/// upload, and paged, sectioned, sheeted, slided and image contents. Bob holds
/// `/d/a/x.txt` and `/d/p.pdf` too.
fn corpus() -> (Opened, Box<dyn VectorIndex>, Scope, Scope) {
    let (dir, store) = open();
    let alice = Scope::user("alice");
    let bob = Scope::user("bob");
    let up = |scope: &Scope, c: Vec<StoredChunk>| store.upsert(scope, &c).unwrap();
    up(&alice, chunks("ha", 2, "/d/a/x.txt", 0));
    up(&alice, chunks("hab", 1, "/d/ab.txt", 10));
    up(&alice, chunks("hnested", 1, NESTED, 20));
    up(&alice, chunks("hzip", 1, "/d/bundle.zip!/readme.txt", 30));
    up(&alice, chunks("hup", 1, "upload.zip!/a.txt", 40));
    let sections = [
        None,
        Some("1 Intro"),
        Some("2 Setup"),
        Some("2 Setup › 2.1 Install"),
        Some("2 Setupx"),
        Some("3 Use › 2 Setup"),
    ];
    let mut pdf = chunks("hpdf", 6, "/d/p.pdf", 50);
    for (i, c) in pdf.iter_mut().enumerate() {
        let ctx = &mut c.chunk.context_ref;
        ctx.page_index = Some(i as u32 + 1);
        ctx.location = format!("/d/p.pdf#page={}", i + 1);
        ctx.section_id = sections[i].map(str::to_string);
    }
    up(&alice, pdf.clone());
    for c in &mut pdf {
        c.chunk.text = format!("bob's {}", c.chunk.text);
    }
    up(&bob, pdf);
    let mut sheets = chunks("hxlsx", 2, "/d/s.xlsx", 60);
    for (c, name) in sheets.iter_mut().zip(["Budget", "Budget 2"]) {
        c.chunk.context_ref.sheet_name = Some(name.into());
        c.chunk.context_ref.location = format!("/d/s.xlsx#sheet={name}");
    }
    up(&alice, sheets);
    let mut deck = chunks("hpptx", 3, "/d/deck.pptx", 70);
    for (i, c) in deck.iter_mut().enumerate() {
        c.chunk.context_ref.slide_index = Some(i as u32 + 1);
        c.chunk.context_ref.location = format!("/d/deck.pptx#slide={}", i + 1);
    }
    up(&alice, deck);
    let mut image = chunks("hpng", 1, "/d/a/pic.png", 80);
    image[0].chunk.content_type = extractors::ContentType::Image;
    up(&alice, image);
    up(&bob, chunks("hbob", 1, "/d/a/x.txt", 90));
    up(&bob, chunks("hbob2", 1, "/d/a/bobs.txt", 91));
    (dir, store, alice, bob)
}

fn a_locator_prefix_matches_whole_folders_archives_and_files_only() {
    {
        let (_dir, store, alice, bob) = corpus();
        // No filter: everything Alice holds.
        assert_eq!(found(&*store, &alice, SearchFilter::default()).len(), 9);
        assert_eq!(
            found(&*store, &alice, prefix("/d/a")),
            ["/d/a/pic.png", "/d/a/x.txt"],
            "a folder, not its sibling /d/ab.txt"
        );
        assert_eq!(
            found(&*store, &alice, prefix("/d/a/")),
            ["/d/a/pic.png", "/d/a/x.txt"]
        );
        assert_eq!(
            found(&*store, &alice, prefix("/d/bundle.zip")),
            [NESTED, "/d/bundle.zip!/readme.txt"],
            "an archive"
        );
        assert_eq!(
            found(&*store, &alice, prefix("/d/bundle.zip!/")),
            [NESTED, "/d/bundle.zip!/readme.txt"]
        );
        for nested in [
            "/d/bundle.zip!/docs",
            "/d/bundle.zip!/docs/inner.tar.gz",
            "/d/bundle.zip!/docs/inner.tar.gz!/notes",
            NESTED,
        ] {
            assert_eq!(found(&*store, &alice, prefix(nested)), [NESTED], "{nested}");
        }
        assert_eq!(
            found(&*store, &alice, prefix("/d/ab.txt")),
            ["/d/ab.txt"],
            "a file"
        );
        assert_eq!(found(&*store, &alice, prefix("/d/p.pdf")), ["/d/p.pdf"]);
        assert_eq!(
            found(&*store, &alice, prefix("upload.zip")),
            ["upload.zip!/a.txt"]
        );
        assert_eq!(
            found(&*store, &alice, prefix("upload.zip!/a.txt")),
            ["upload.zip!/a.txt"]
        );
        for nothing in [
            "/d/a/x",
            "/d/bundle",
            "/d/bundle.zip!/docs/inner",
            "/x",
            "d",
            "a.txt",
        ] {
            assert!(
                found(&*store, &alice, prefix(nothing)).is_empty(),
                "{nothing}"
            );
        }
        // `/` and an empty prefix narrow nothing (within the scope).
        assert_eq!(found(&*store, &alice, prefix("/")).len(), 9);
        assert_eq!(found(&*store, &alice, prefix("")).len(), 9);
        // Bob's files under the same folder never reach Alice, nor hers him.
        assert_eq!(
            found(&*store, &bob, prefix("/d/a")),
            ["/d/a/bobs.txt", "/d/a/x.txt"]
        );
        let bobs = store
            .search(
                &bob,
                &IndexQuery::dense(unit(0)),
                100,
                0,
                None,
                &prefix("/d/a"),
            )
            .unwrap();
        assert!(
            bobs.iter().all(|h| h.content_hash.starts_with("hbob")),
            "{bobs:#?}"
        );
        assert!(found(&*store, &alice, prefix("/d/a/bobs.txt")).is_empty());
        assert!(found(&*store, &Scope::user("carol"), prefix("/d")).is_empty());
        // A content the catalog holds under a locator its points do not name passes by its
        // scope and hash, in that scope only: Alice's PDF under `/m`, Bob's not.
        let unnamed = |scope: &Scope, hash: &str| SearchFilter {
            unnamed_under: vec![(scope.key(), hash.to_string())],
            ..prefix("/m")
        };
        assert!(found(&*store, &alice, prefix("/m")).is_empty());
        assert_eq!(
            found(&*store, &alice, unnamed(&alice, "hpdf")),
            ["/d/p.pdf"]
        );
        assert!(found(&*store, &bob, unnamed(&alice, "hpdf")).is_empty());
        let bobs_pdf = found(&*store, &alice, unnamed(&bob, "hpdf"));
        assert!(bobs_pdf.is_empty(), "another scope's point: {bobs_pdf:?}");
        // Both alternatives at once: named under `/d/a`, and the PDF by the catalog.
        let both = SearchFilter {
            unnamed_under: vec![
                (alice.key(), "hpdf".into()),
                (alice.key(), "nothing".into()),
            ],
            ..prefix("/d/a")
        };
        assert_eq!(
            found(&*store, &alice, both),
            ["/d/a/pic.png", "/d/a/x.txt", "/d/p.pdf"]
        );
    }
}

fn pages_sections_sheets_slides_and_types_narrow_the_hits() {
    {
        let (_dir, store, alice, bob) = corpus();
        let pages = |first, last| SearchFilter {
            pages: Some((first, last)),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&*store, &alice, pages(2, 3)),
            ["/d/p.pdf#page=2", "/d/p.pdf#page=3"]
        );
        assert_eq!(
            found_chunks(&*store, &alice, pages(6, 6)),
            ["/d/p.pdf#page=6"]
        );
        assert!(found_chunks(&*store, &alice, pages(7, 100)).is_empty());
        assert!(found_chunks(&*store, &alice, pages(3, 2)).is_empty());
        // Pages and a prefix together.
        let both = SearchFilter {
            locator_prefix: Some("/d/a".into()),
            ..pages(1, 6)
        };
        assert!(found_chunks(&*store, &alice, both).is_empty());

        let section = |s: &str| SearchFilter {
            section_path: Some(s.into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&*store, &alice, section("2 Setup")),
            ["/d/p.pdf#page=3", "/d/p.pdf#page=4"],
            "the section and its subsection, not `2 Setupx` nor `3 Use › 2 Setup`"
        );
        assert_eq!(
            found_chunks(&*store, &alice, section("2 Setup › 2.1 Install")),
            ["/d/p.pdf#page=4"]
        );
        assert_eq!(
            found_chunks(&*store, &alice, section("3 Use")),
            ["/d/p.pdf#page=6"]
        );
        assert!(found_chunks(&*store, &alice, section("2.1 Install")).is_empty());

        let sheet = |s: &str| SearchFilter {
            sheet: Some(s.into()),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&*store, &alice, sheet("Budget")),
            ["/d/s.xlsx#sheet=Budget"]
        );
        assert!(found_chunks(&*store, &alice, sheet("budget")).is_empty());

        let slide = SearchFilter {
            slide: Some(2),
            ..SearchFilter::default()
        };
        assert_eq!(
            found_chunks(&*store, &alice, slide),
            ["/d/deck.pptx#slide=2"]
        );

        let image = SearchFilter {
            content_type: Some(extractors::ContentType::Image),
            ..SearchFilter::default()
        };
        let hits = store
            .search(&alice, &IndexQuery::dense(unit(0)), 100, 0, None, &image)
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].locator, "/d/a/pic.png#line=1");
        assert_eq!(hits[0].content_type, "image");
        let text = SearchFilter {
            content_type: Some(extractors::ContentType::Text),
            ..SearchFilter::default()
        };
        assert_eq!(
            store
                .search(&alice, &IndexQuery::dense(unit(0)), 100, 0, None, &text)
                .unwrap()
                .len(),
            2 + 1 + 1 + 1 + 1 + 6 + 2 + 3
        );
        // Bob holds the same PDF: his filters find his points only.
        let hits = store
            .search(
                &bob,
                &IndexQuery::dense(unit(0)),
                100,
                0,
                None,
                &pages(1, 6),
            )
            .unwrap();
        assert_eq!(hits.len(), 6);
        assert!(
            hits.iter().all(|h| h.text.starts_with("bob's")),
            "{hits:#?}"
        );
        // A hit carries its page and type.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(52)),
                1,
                0,
                None,
                &pages(1, 6),
            )
            .unwrap();
        assert_eq!(hits[0].locator, "/d/p.pdf#page=3");
        assert_eq!(hits[0].page, Some(3));
        assert_eq!(hits[0].section.as_deref(), Some("2 Setup"));
        assert_eq!(hits[0].content_type, "text");
        let json = serde_json::to_value(&hits[0]).unwrap();
        assert_eq!(json["page"], 3);
        let plain = &store
            .search(
                &alice,
                &IndexQuery::dense(unit(10)),
                1,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap()[0];
        assert_eq!(plain.locator, "/d/ab.txt#line=1");
        assert_eq!(plain.page, None);
        assert!(serde_json::to_value(plain).unwrap().get("page").is_none());
    }
}

fn a_filter_never_lets_another_scopes_points_through() {
    {
        let (_dir, store, alice, bob) = corpus();
        let filters = [
            SearchFilter::default(),
            prefix("/d"),
            prefix("/d/a/x.txt"),
            SearchFilter {
                pages: Some((1, 6)),
                section_path: Some("2 Setup".into()),
                ..prefix("/d/p.pdf")
            },
        ];
        for f in filters {
            let a = store
                .search(&alice, &IndexQuery::dense(unit(90)), 1000, 0, None, &f)
                .unwrap();
            let b = store
                .search(&bob, &IndexQuery::dense(unit(90)), 1000, 0, None, &f)
                .unwrap();
            // Bob's texts start with `bob's` (his copy of the PDF) or `hbob`.
            let bobs = |h: &Hit| h.text.starts_with("bob's") || h.text.starts_with("hbob");
            assert!(!a.is_empty() && !a.iter().any(bobs), "{f:?} {a:#?}");
            assert!(!b.is_empty() && b.iter().all(bobs), "{f:?} {b:#?}");
            let carol = store
                .search(
                    &Scope::user("carol"),
                    &IndexQuery::dense(unit(0)),
                    1000,
                    0,
                    None,
                    &f,
                )
                .unwrap();
            assert!(carol.is_empty(), "{f:?}");
        }
        // A mandate scope sees shared points of its mandate only, filtered or not.
        let m = |user: &str, shared: bool| Scope {
            mandate_id: Some("m".into()),
            is_shared: shared,
            ..Scope::user(user)
        };
        store
            .upsert(
                &m("alice", true),
                &chunks("hshared", 1, "/d/a/shared.txt", 95),
            )
            .unwrap();
        store
            .upsert(&m("alice", false), &chunks("hmine", 1, "/d/a/mine.txt", 96))
            .unwrap();
        assert_eq!(
            found(&*store, &m("dave", false), prefix("/d/a")),
            ["/d/a/shared.txt"]
        );
        let other = Scope {
            mandate_id: Some("other".into()),
            ..Scope::user("dave")
        };
        assert!(found(&*store, &other, prefix("/d/a")).is_empty());
    }
}

fn set_holders_moves_the_prefix_match() {
    {
        let (_dir, store, alice, bob) = corpus();
        store
            .set_holders(
                &alice,
                "ha",
                &holders(&["/d/moved/x.txt", "/d/z.zip!/x.txt"], &[]),
            )
            .unwrap();
        assert_eq!(found(&*store, &alice, prefix("/d/a")), ["/d/a/pic.png"]);
        assert!(found(&*store, &alice, prefix("/d/a/x.txt")).is_empty());
        assert_eq!(
            found(&*store, &alice, prefix("/d/moved")),
            ["/d/moved/x.txt"]
        );
        // Any holder puts the content under its prefix; the hit shows the first.
        let hits = store
            .search(
                &alice,
                &IndexQuery::dense(unit(0)),
                10,
                0,
                None,
                &prefix("/d/z.zip"),
            )
            .unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits
            .iter()
            .all(|h| h.locator.starts_with("/d/moved/x.txt#")));
        assert!(hits.iter().all(|h| h.also_in == ["/d/z.zip!/x.txt"]));
        // Bob's copy at the old place is untouched.
        assert_eq!(found(&*store, &bob, prefix("/d/a/x.txt")), ["/d/a/x.txt"]);
    }
}

fn offset_skips_the_best_hits_for_paging() {
    {
        let (_dir, store, alice, _bob) = corpus();
        let all = SearchFilter::default();
        // The query leans on the PDF's chunks in order: page 1 best, then 2, ...
        let mut query = vec![0.0; crate::embed::DIMENSIONS];
        for (i, w) in [6.0, 5.0, 4.0, 3.0, 2.0, 1.0].into_iter().enumerate() {
            query[50 + i] = w;
        }
        let first = store
            .search(&alice, &IndexQuery::dense(query.clone()), 6, 0, None, &all)
            .unwrap();
        let locs = |h: &[Hit]| h.iter().map(|h| h.locator.clone()).collect::<Vec<_>>();
        assert_eq!(
            locs(&first),
            (1..=6)
                .map(|p| format!("/d/p.pdf#page={p}"))
                .collect::<Vec<_>>()
        );
        let page2 = store
            .search(&alice, &IndexQuery::dense(query.clone()), 2, 2, None, &all)
            .unwrap();
        assert_eq!(locs(&page2), locs(&first[2..4]));
        let tail = store
            .search(
                &alice,
                &IndexQuery::dense(query.clone()),
                10,
                4,
                Some(0.1),
                &all,
            )
            .unwrap();
        assert_eq!(locs(&tail), locs(&first[4..]));
        assert!(store
            .search(
                &alice,
                &IndexQuery::dense(query.clone()),
                5,
                6,
                Some(0.1),
                &all
            )
            .unwrap()
            .is_empty());
        assert!(store
            .search(&alice, &IndexQuery::dense(query.clone()), 0, 0, None, &all)
            .unwrap()
            .is_empty());
        assert!(store
            .search(
                &alice,
                &IndexQuery::dense(query),
                5,
                MAX_SEARCH_HITS,
                None,
                &all
            )
            .unwrap()
            .is_empty());
    }
}

/// Chunks with these texts (and sections) in `locator`, chunk `i` along axis `i`.
pub(super) fn texts(hash: &str, locator: &str, texts: &[(&str, Option<&str>)]) -> Vec<StoredChunk> {
    let mut out = chunks(hash, texts.len() as u32, locator, 0);
    for (c, (text, section)) in out.iter_mut().zip(texts) {
        c.chunk.text = text.to_string();
        c.chunk.context_ref.section_id = section.map(str::to_string);
    }
    out
}

pub(super) fn locators(hits: &[Hit]) -> Vec<&str> {
    hits.iter().map(|h| h.locator.as_str()).collect()
}

fn keyword_search_finds_rare_terms_file_names_and_sections_and_hybrid_fuses() {
    {
        let (_dir, store) = open();
        let alice = Scope::user("alice");
        let bob = Scope::user("bob");
        let mut iso = texts(
            "iso",
            "/d/iso-4217-currencies.csv",
            &[
                ("Switzerland, Swiss franc, CHF, 756", None),
                ("Sweden, Swedish krona, SEK, 752", None),
            ],
        );
        // Its line 2 leans a little off axis 1, where the manual's line 2 lies: a tie
        // would leave the dense order of the two to the engine.
        iso[1].vector[1] = 0.99;
        iso[1].vector[5] = 0.141;
        store.upsert(&alice, &iso).unwrap();
        store
            .upsert(
                &alice,
                &texts(
                    "man",
                    "/d/pump.pdf",
                    &[
                        ("Open the valve slowly.", Some("3 Priming")),
                        ("Close the valve.", Some("4 Storage")),
                    ],
                ),
            )
            .unwrap();
        // Bob's identical words are never Alice's hits.
        store
            .upsert(
                &bob,
                &texts("iso", "/b/iso.csv", &[("Swiss franc CHF", None)]),
            )
            .unwrap();
        let all = SearchFilter::default();
        let keyword = |q: &str| {
            store
                .search(&alice, &IndexQuery::keyword(q), 10, 0, None, &all)
                .unwrap()
        };
        // A code found by its exact word.
        assert_eq!(
            locators(&keyword("CHF"))[..1],
            ["/d/iso-4217-currencies.csv#line=1"]
        );
        // The file name and the section path are matched as words too.
        let currencies = keyword("currencies");
        let mut by_name = locators(&currencies);
        by_name.sort_unstable();
        assert_eq!(
            by_name,
            [
                "/d/iso-4217-currencies.csv#line=1",
                "/d/iso-4217-currencies.csv#line=2"
            ]
        );
        assert_eq!(locators(&keyword("priming")), ["/d/pump.pdf#line=1"]);
        // Words nobody holds, or only stop words: nothing.
        assert!(keyword("zebra").is_empty());
        assert!(keyword("the of and").is_empty());
        // Filters apply to keyword hits as to dense ones.
        let pump = SearchFilter {
            locator_prefix: Some("/d/pump.pdf".into()),
            ..SearchFilter::default()
        };
        assert!(store
            .search(&alice, &IndexQuery::keyword("CHF"), 10, 0, None, &pump)
            .unwrap()
            .is_empty());
        // A name's words: the points of the files whose names hold every one of them.
        let named = |words: &[&str]| {
            let wholly = SearchFilter {
                name_words: words.iter().map(|w| w.to_string()).collect(),
                ..SearchFilter::default()
            };
            let query = IndexQuery::name(words.join(" "));
            let hits = store.search(&alice, &query, 10, 0, None, &wholly).unwrap();
            let mut found: Vec<String> = locators(&hits).into_iter().map(String::from).collect();
            found.sort_unstable();
            found
        };
        assert_eq!(
            named(&["iso", "4217"]),
            [
                "/d/iso-4217-currencies.csv#line=1",
                "/d/iso-4217-currencies.csv#line=2"
            ]
        );
        assert!(named(&["iso", "pump"]).is_empty());
        assert!(
            named(&["valve"]).is_empty(),
            "a word of the text, not of the name"
        );

        // Hybrid: the dense vector points at line 2 of the pump manual (axis 1), the words
        // at the franc. Both come back, the one first in both rankings on top with score 1.
        let hybrid = |text: &str, axis: usize| {
            store
                .search(
                    &alice,
                    &IndexQuery {
                        vector: Some(unit(axis)),
                        text: Some(text.into()),
                        multilingual: None,
                        name: false,
                    },
                    3,
                    0,
                    None,
                    &all,
                )
                .unwrap()
        };
        let hits = hybrid("swiss franc", 1);
        let found = locators(&hits);
        assert!(
            found.contains(&"/d/iso-4217-currencies.csv#line=1"),
            "{found:?}"
        );
        assert!(found.contains(&"/d/pump.pdf#line=2"), "{found:?}");
        // A floor on the cosine holds in hybrid mode too: the franc's words match, its
        // meaning (axis 0 against axis 1) does not.
        let floored = store
            .search(
                &alice,
                &IndexQuery {
                    vector: Some(unit(1)),
                    text: Some("swiss franc valve".into()),
                    multilingual: None,
                    name: false,
                },
                10,
                0,
                Some(0.5),
                &all,
            )
            .unwrap();
        // (Line 2 of both files lies on axis 1, the franc on axis 0.)
        let mut floored = locators(&floored);
        floored.sort_unstable();
        assert_eq!(
            floored,
            ["/d/iso-4217-currencies.csv#line=2", "/d/pump.pdf#line=2"]
        );
        let hits = hybrid("valve storage", 1);
        assert_eq!(hits[0].locator, "/d/pump.pdf#line=2");
        assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
        assert!(hits.iter().all(|h| h.locator.starts_with("/d/")));
        // Paging a fused ranking: the second page continues the first.
        let page = |limit, offset| {
            let query = IndexQuery {
                vector: Some(unit(0)),
                text: Some("valve franc".into()),
                multilingual: None,
                name: false,
            };
            store
                .search(&alice, &query, limit, offset, None, &all)
                .unwrap()
        };
        let (first, second) = (page(4, 0), page(2, 2));
        assert_eq!(locators(&first)[2..], locators(&second)[..]);
    }
}

/// The same corpus on both backends answers every kind of search identically: hits, order,
/// scores (to rounding) and fields.
#[test]
fn qdrant_answers_as_the_embedded_shard_does() {
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    BACKEND.with(|b| *b.borrow_mut() = Backend::Edge);
    let (_e, edge, alice, _) = corpus();
    BACKEND.with(|b| *b.borrow_mut() = Backend::Server(server.grpc[0].clone()));
    let (_s, remote, _, _) = corpus();
    BACKEND.with(|b| *b.borrow_mut() = Backend::Edge);
    // Strict rankings for the fused queries: tied scores inside a ranking give the engine a
    // free choice of rank, which RRF turns into different fused scores (on one backend too).
    let strict = strict_corpus();
    for c in &strict {
        edge.upsert(&alice, std::slice::from_ref(c)).unwrap();
        remote.upsert(&alice, std::slice::from_ref(c)).unwrap();
    }
    let words = |t: &str| IndexQuery::keyword(t);
    let fused = |text: &str| IndexQuery {
        vector: Some(unit(100)),
        text: Some(text.into()),
        multilingual: None,
        name: false,
    };
    let queries = [
        IndexQuery::dense(unit(0)),
        IndexQuery::dense(unit(53)),
        IndexQuery::dense(unit(100)),
        words("ha chunk 1"),
        words("hpdf"),
        words("alpha"),
        fused("alpha"),
        fused("beta"),
    ];
    let filters = [
        SearchFilter::default(),
        prefix("/d"),
        SearchFilter {
            pages: Some((2, 4)),
            ..SearchFilter::default()
        },
    ];
    let mut compared = 0;
    for q in &queries {
        for f in &filters {
            // A fused query's dense ranking is strict over the strict corpus only.
            if q.vector.is_some() && q.text.is_some() && f != &SearchFilter::default() {
                continue;
            }
            for (limit, offset, min_score) in [(10, 0, None), (3, 2, None), (10, 0, Some(0.5))] {
                let a = edge.search(&alice, q, limit, offset, min_score, f).unwrap();
                let b = remote
                    .search(&alice, q, limit, offset, min_score, f)
                    .unwrap();
                // Hits scoring 0 are an arbitrary pick among many equal ones: left out.
                let strip = |hits: &[Hit]| -> Vec<(String, String, i64)> {
                    hits.iter()
                        .filter(|h| h.score > 1e-6)
                        .map(|h| {
                            (
                                h.locator.clone(),
                                h.text.clone(),
                                (h.score * 1e4).round() as i64,
                            )
                        })
                        .collect()
                };
                assert_eq!(
                    strip(&a),
                    strip(&b),
                    "{q:?} {f:?} {limit} {offset} {min_score:?}"
                );
                compared += a.len();
            }
        }
    }
    assert!(compared > 50, "the comparison saw {compared} hits");
    assert_eq!(
        edge.count(Some(&alice)).unwrap(),
        remote.count(Some(&alice)).unwrap()
    );
    let mut a = edge.point_records().unwrap();
    let mut b = remote.point_records().unwrap();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

/// 30 chunks in 30 files with strictly ordered scores: chunk `i` leans from axis 100 towards
/// its own axis as `i` grows (cosines to axis 100 all distinct), and says "alpha" `i + 1`
/// times and "beta" `30 - i` times (distinct BM25 scores).
fn strict_corpus() -> Vec<StoredChunk> {
    (0..30u32)
        .map(|i| {
            let locator = format!("/strict/f{i}.txt");
            let mut c = chunks(&format!("strict{i}"), 1, &locator, 0).remove(0);
            let lean = i as f32 / 40.0;
            let mut v = unit(100);
            v[100] = 1.0 - lean;
            v[101 + i as usize] = lean;
            c.vector = v;
            c.chunk.text = format!(
                "{} {}",
                vec!["alpha"; i as usize + 1].join(" "),
                vec!["beta"; 30 - i as usize].join(" ")
            );
            c
        })
        .collect()
}

/// Two nodes (two data dirs) writing one collection: each registers the files it holds; the
/// points name every node's files; a node letting go leaves the points to the other; the
/// last one out deletes them.
#[test]
fn qdrant_nodes_share_a_content_and_the_last_holder_deletes_it() {
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let config = test_server_config(&server.grpc[0], &fresh_collection());
    let a = ServerIndex::open(&config, "node-a").unwrap();
    let b = ServerIndex::open(&config, "node-b").unwrap();
    let alice = Scope::user("alice");
    let key = alice.key();
    a.upsert(&alice, &chunks("h", 3, "/d/a.txt", 0)).unwrap();
    b.upsert(&alice, &chunks("h", 3, "/e/b.txt", 0)).unwrap();
    a.upsert(&alice, &chunks("g", 1, "/d/g.txt", 7)).unwrap();
    a.flush();
    b.flush();
    let both = vec!["/d/a.txt".to_string(), "/e/b.txt".to_string()];
    assert_eq!(
        inventory(&a),
        [
            (key.clone(), "g".into(), vec![0], vec!["/d/g.txt".into()]),
            (key.clone(), "h".into(), vec![0, 1, 2], both.clone()),
        ]
    );
    // Either node finds what the other wrote, under every file holding it.
    let hit = &b
        .search(
            &alice,
            &IndexQuery::dense(unit(7)),
            1,
            0,
            None,
            &SearchFilter::default(),
        )
        .unwrap()[0];
    assert_eq!(hit.locator, "/d/g.txt#line=1");
    let hit = &a
        .search(
            &alice,
            &IndexQuery::dense(unit(0)),
            1,
            0,
            None,
            &prefix("/e"),
        )
        .unwrap()[0];
    assert_eq!(
        (hit.locator.as_str(), hit.also_in.clone()),
        ("/d/a.txt#line=1", vec!["/e/b.txt".to_string()])
    );
    // Node a lets go of h: the points stay, naming b's file only.
    a.delete_content(&alice, "h").unwrap();
    assert_eq!(
        inventory(&b),
        [
            (key.clone(), "g".into(), vec![0], vec!["/d/g.txt".into()]),
            (
                key.clone(),
                "h".into(),
                vec![0, 1, 2],
                vec!["/e/b.txt".into()]
            ),
        ]
    );
    // A second copy on b: its list grows, a's stays out.
    b.set_holders(
        &alice,
        "h",
        &holders(&["/e/b.txt", "/e/c.txt"], &["node=b"]),
    )
    .unwrap();
    let seen_by_a = &a.inventory().unwrap()[&(key.clone(), "h".to_string())];
    assert_eq!(seen_by_a.locators, ["/e/b.txt", "/e/c.txt"]);
    assert_eq!(seen_by_a.tags, ["node=b"]);
    // b lets go too: now nobody holds h and its points go.
    b.delete_content(&alice, "h").unwrap();
    assert_eq!(
        inventory(&a),
        [(key.clone(), "g".into(), vec![0], vec!["/d/g.txt".into()])]
    );
    // A node releasing a content it never held leaves it to the node that holds it.
    b.delete_content(&alice, "g").unwrap();
    assert_eq!(a.count(None).unwrap(), 1);
}

/// A delete spares points written within the clock skew of its check, then waits the skew
/// out and deletes them: whatever the timing, the call returns with the content gone.
#[test]
fn qdrant_delete_within_the_clock_skew_waits_and_still_deletes() {
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let mut config = test_server_config(&server.grpc[0], &fresh_collection());
    config.clock_skew = std::time::Duration::from_millis(700);
    let a = ServerIndex::open(&config, "node-a").unwrap();
    let alice = Scope::user("alice");
    a.upsert(&alice, &chunks("h", 2, "/d/a.txt", 0)).unwrap();
    a.delete_content(&alice, "h").unwrap();
    assert_eq!(a.count(None).unwrap(), 0);
}
