//! The catalog's two implementations behave alike (the embedded SQLite one and PostgreSQL,
//! on a real throw-away cluster: `ingest_index::testkit::PostgresServer`), and nodes sharing a
//! PostgreSQL catalog and a Qdrant collection answer alike.
//!
//! Tests needing PostgreSQL print `SKIPPED` and pass when it cannot start (Debian
//! `postgresql`, installed by `make deps`); those needing a Qdrant server hold `qdrant` in
//! their names, so `make test` leaves them out, reported as skipped, without one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ingest::testing::catalog_access_property;
use ingest::CatalogUrl;
use ingest_index::prelude::*;
use ingest_index::testkit::{catalog_conformance, PostgresServer, QdrantServer, QDRANT_SKIPPED};
use ingest_index::SqliteCatalog;
use serde_json::{json, Value};

use crate::util::{json_lines, Sandbox};

#[test]
fn the_embedded_catalog_conforms() {
    let dir = tempfile::tempdir().unwrap();
    catalog_conformance(&SqliteCatalog::open(dir.path()).unwrap());
}

#[test]
fn the_access_rule_holds_through_the_embedded_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let readers = catalog_access_property(&SqliteCatalog::open(dir.path()).unwrap());
    eprintln!("{readers} generated readers checked");
}

#[test]
fn the_access_rule_holds_through_the_postgres_catalog() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let url = pg.database("access");
    let node_a = pg_catalog(&url, dir.path());
    let readers = catalog_access_property(&node_a);
    // A second node reads the same scopes back from the same rows.
    let other = tempfile::tempdir().unwrap();
    let node_b = pg_catalog(&url, other.path());
    let (mut a, mut b) = (node_a.scopes(), node_b.scopes());
    a.sort_by_key(ingest::Scope::key);
    b.sort_by_key(ingest::Scope::key);
    assert_eq!(a, b);
    eprintln!("{readers} generated readers checked on PostgreSQL");
}

fn pg_catalog(url: &str, dir: &Path) -> ingest_index::PgCatalog {
    ingest_index::PgCatalog::open(&url.parse::<CatalogUrl>().unwrap(), dir).unwrap()
}

#[test]
fn the_postgres_catalog_conforms_and_nodes_share_it() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let url = pg.database("conformance");
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let node_a = pg_catalog(&url, a.path());
    catalog_conformance(&node_a);
    // A second node sees what the first wrote, at once, and reads its contents (its own
    // copy of a pack is made on first read).
    let node_b = pg_catalog(&url, b.path());
    let scope = ingest::Scope::user("shared");
    let e = ingest_index::CatalogEntry::indexed("/n/a.txt", None, "hn", 3, 4, 5);
    node_a.put(&scope, e.clone());
    assert_eq!(node_b.get(&scope, "/n/a.txt"), Some(e));
    assert!(node_b.scopes().contains(&scope));
    node_b.remove(&scope, "/n/a.txt");
    assert!(node_a.get(&scope, "/n/a.txt").is_none());
    assert!(!node_a.scopes().contains(&scope));
}

#[test]
fn a_postgres_outage_fails_the_save_and_the_catalog_reconnects_after_it() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let url = pg
        .database("outage")
        .replacen("ingest@", "ingest:sekrit@", 1);
    let dir = tempfile::tempdir().unwrap();
    let c = pg_catalog(&url, dir.path());
    let scope = ingest::Scope::user("u");
    let entry =
        |n: u32| ingest_index::CatalogEntry::indexed(format!("/o/{n}.txt"), None, "h", 1, 1, n);
    c.put(&scope, entry(1));
    c.save().unwrap();
    if let Err(e) = pg.stop() {
        eprintln!("SKIPPED: cannot stop the test server ({e})");
        return;
    }
    // Writes and reads during the outage answer nothing and fail the next save, which names
    // the server and not its password.
    c.put(&scope, entry(2));
    assert!(c.get(&scope, "/o/1.txt").is_none());
    let err = c.save().unwrap_err().to_string();
    assert!(err.contains("postgres://ingest@127.0.0.1:"), "{err}");
    assert!(!err.contains("sekrit"), "{err}");
    pg.restart().unwrap();
    // The next call connects again; what was written before the outage is there.
    assert_eq!(c.get(&scope, "/o/1.txt"), Some(entry(1)));
    c.put(&scope, entry(3));
    c.save().unwrap();
    assert_eq!(
        c.len_of(&scope),
        2,
        "the write during the outage is not recorded"
    );
}

#[test]
fn postgres_migrations_apply_once_however_many_nodes_open_at_once() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let url = pg.database("migrations");
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    std::thread::scope(|s| {
        for d in &dirs {
            let url = &url;
            s.spawn(move || pg_catalog(url, d.path()));
        }
    });
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let versions: Vec<i32> = client
        .query(
            "SELECT version FROM ingest_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1, 2, 3, 4, 5]);
    // A schema newer than this build knows is refused, not written to.
    client
        .execute("INSERT INTO ingest_migrations (version) VALUES (999)", &[])
        .unwrap();
    let err = ingest_index::PgCatalog::open(&url.parse().unwrap(), dirs[0].path())
        .unwrap_err()
        .to_string();
    assert!(err.contains("999") && err.contains("newer"), "{err}");
}

#[test]
fn a_catalog_url_password_is_never_shown() {
    // Nothing listens on port 1: the error names the server, not the password.
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["status", "--store", "qdrant://127.0.0.1:1/c", "--data-dir"])
        .arg(tempfile::tempdir().unwrap().path())
        .env(
            "INGEST_CATALOG",
            "postgres://ingest:hunter2secret@127.0.0.1:1/kb",
        )
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("postgres://ingest@127.0.0.1:1/kb"), "{all}");
    assert!(!all.contains("hunter2secret"), "{all}");
    // And --help does not print the environment's value.
    let help = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .arg("--help")
        .env(
            "INGEST_CATALOG",
            "postgres://ingest:hunter2secret@127.0.0.1:1/kb",
        )
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&help.stdout).contains("hunter2secret"));
}

#[test]
fn a_shared_catalog_without_a_shared_store_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["status", "--data-dir"])
        .arg(tempfile::tempdir().unwrap().path())
        .env("INGEST_CATALOG", "postgres://ingest@127.0.0.1:1/kb")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("--store"), "{err}");
}

/// `ingest ARGS` on node `data` with the shared catalog and store.
fn node(data: &Path, catalog: &str, store: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(data)
        .args(["--catalog", catalog, "--store", store])
        .args(args)
        .env_remove(ingest_base::failpoint::ENV)
        .env_remove("INGEST_STORE")
        .env_remove("INGEST_CATALOG")
        .output()
        .unwrap()
}

/// What a read command answered, with what differs between nodes by design (timings)
/// taken out.
fn answer(out: &Output) -> Vec<Value> {
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = json_lines(out);
    for l in &mut lines {
        if let Some(o) = l.as_object_mut() {
            o.remove("took_ms");
            o.remove("elapsed_ms");
        }
    }
    lines
}

/// Two notes and an archive of two members in `sb/docs`.
fn write_docs(sb: &Sandbox) {
    sb.write(
        "docs/lighthouse.txt",
        b"The keeper of the lighthouse on Skerry Point logged every storm in a green ledger.\n",
    );
    sb.write(
        "docs/orchard.md",
        b"# Orchard\n\nThe orchard's pear trees were grafted in 1911 by the harbour master.\n",
    );
    let zip = ingest_unpack::zip_of(&[
        (
            "inner/turbine.txt",
            b"The turbine hall flooded in the spring of 1952.",
        ),
        (
            "inner/quarry.txt",
            b"Granite from the quarry built the causeway.",
        ),
    ]);
    sb.write("docs/bundle.zip", &zip);
}

#[test]
fn qdrant_nodes_sharing_a_postgres_catalog_answer_alike() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let catalog = pg.database("nodes");
    let store = server.store_url(0, "shared_nodes");
    let sb = Sandbox::new();
    write_docs(&sb);
    let (a, b): (PathBuf, PathBuf) = (sb.path("node-a"), sb.path("node-b"));
    let docs = sb.path("docs").display().to_string();
    let out = node(&a, &catalog, &store, &[&docs]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let zip_locator = format!("{docs}/bundle.zip");
    let member = format!("{docs}/bundle.zip!/inner/turbine.txt");
    for args in [
        vec!["search", "--min-score", "-1", "who kept the lighthouse"],
        vec![
            "search",
            "--min-score",
            "-1",
            "--mode",
            "keyword",
            "turbine flooded",
        ],
        vec!["browse"],
        vec!["browse", zip_locator.as_str()],
        vec!["read", member.as_str()],
        vec!["files"],
    ] {
        let on_a = answer(&node(&a, &catalog, &store, &args));
        let on_b = answer(&node(&b, &catalog, &store, &args));
        assert!(!on_a.is_empty(), "{args:?} answered nothing");
        assert_eq!(on_a, on_b, "{args:?}: node B answers otherwise");
    }
    // A node with another model, store or recipe than the catalog's index is refused.
    let c = sb.path("node-c");
    let other_store = server.store_url(0, "another_collection");
    for (args, says) in [
        (
            vec!["--model-variant", "int8-weights", "browse"],
            "same model",
        ),
        (vec!["--no-file-cards", docs.as_str()], "same recipe"),
    ] {
        let out = node(&c, &catalog, &store, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let out = node(&sb.path("node-d"), &catalog, &other_store, &["browse"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("same store"), "{err}");
    // A file node A indexed, gone from the folder and synced away by node B, is gone for
    // both (nodes of one catalog release contents as one writer).
    removed_on_b_is_gone_for_both(&sb, &a, &b, &catalog, &store);
    let read = answer(&node(&b, &catalog, &store, &["read", &member])).concat_text();
    assert!(read.contains("turbine hall flooded"), "{read}");
    // Another scope sees nothing of it on either node, answered as if nothing were there.
    for data in [&a, &b] {
        // A member of another scope's archive, and one of an archive nobody has.
        let missing = format!("{docs}/nothing.zip!/inner/turbine.txt");
        let other = node(
            data,
            &catalog,
            &store,
            &["--user", "mallory", "read", &member],
        );
        let none = node(
            data,
            &catalog,
            &store,
            &["--user", "mallory", "read", &missing],
        );
        assert_eq!(other.status.code(), none.status.code());
        let scrub = |o: &Output| {
            String::from_utf8_lossy(&o.stderr)
                .replace("bundle.zip", "X.zip")
                .replace("nothing.zip", "X.zip")
        };
        assert_eq!(scrub(&other), scrub(&none));
        let hits = answer(&node(
            data,
            &catalog,
            &store,
            &[
                "--user",
                "mallory",
                "search",
                "--min-score",
                "-1",
                "lighthouse",
            ],
        ));
        assert!(
            hits.iter().all(|h| h.get("locator").is_none()),
            "mallory found {hits:?}"
        );
    }
}

/// The text of every line's `text`/`data` fields, for a containment check.
trait ConcatText {
    fn concat_text(&self) -> String;
}

impl ConcatText for Vec<Value> {
    fn concat_text(&self) -> String {
        self.iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[test]
fn qdrant_serve_nodes_sharing_a_postgres_catalog_answer_any_key_alike() {
    use crate::service::{job_of, Client, Service, ALICE, BOB};
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let catalog = pg.database("serve");
    let store = server.store_url(0, "shared_serve");
    let (sa, sb) = (Sandbox::new(), Sandbox::new());
    let args = ["--catalog", catalog.as_str(), "--store", store.as_str()];
    let spool = format!("spool_dir = \"{}\"", sa.path("spool").display());
    let (a, b) = (
        Service::start_with(&sa, &spool, &args),
        Service::start_with(&sb, &spool, &args),
    );
    let (alice_a, alice_b) = (Client::new(&a, Some(ALICE)), Client::new(&b, Some(ALICE)));
    let (status, answer) = alice_a.upload(
        "notes/ferry.txt",
        b"The ferry to Skerry Point leaves at dawn; the timetable is pinned in the harbour office.",
    );
    assert_eq!(status, 202, "{answer}");
    let id = job_of(&answer);
    let job = alice_a.wait_job(&id);
    assert_eq!(job["state"], "indexed", "{job}");
    // Its status is known to node B too; another key is answered as for no such job.
    let (status, on_b) = alice_b.get(&format!("/v1/jobs/{id}"));
    assert_eq!(status, 200, "{on_b}");
    assert_eq!(on_b, job, "node B reports the job otherwise");
    let bob_b = Client::new(&b, Some(BOB));
    let (s1, theirs) = bob_b.get(&format!("/v1/jobs/{id}"));
    let unknown = format!("{}{}", &id[..11], "0".repeat(32));
    let (s2, none) = bob_b.get(&format!("/v1/jobs/{unknown}"));
    assert_eq!(
        (s1, theirs.to_string().replace(&id, "X")),
        (s2, none.to_string().replace(&unknown, "X"))
    );
    assert_eq!(s1, 404);
    // A delete sent to node B of a name whose upload node A accepted a moment ago (not
    // necessarily run yet) is queued after it, not answered "no file"; the name is gone
    // from both nodes after both jobs.
    let (status, answer) = alice_a.upload(
        "notes/draft.txt",
        b"A draft about the causeway's granite, withdrawn before anyone read it.",
    );
    assert_eq!(status, 202, "{answer}");
    let upload = job_of(&answer);
    let (status, answer) = alice_b.delete("/v1/files?locator=notes/draft.txt");
    assert!(status == 200 || status == 202, "{status} {answer}");
    let delete = answer["id"].as_str().unwrap().to_string();
    assert_eq!(alice_b.wait_job(&upload)["state"], "indexed");
    assert_eq!(alice_a.wait_job(&delete)["state"], "deleted");
    for c in [&alice_a, &alice_b] {
        assert_eq!(c.get("/v1/files/status?locator=notes/draft.txt").0, 404);
    }
    // Node B, which never saw the upload, answers the same key alike.
    let hits_a = alice_a.search("when does the ferry leave", 5);
    let hits_b = alice_b.search("when does the ferry leave", 5);
    assert!(!hits_b.is_empty(), "node B found nothing");
    let locators =
        |hits: &[Value]| -> Vec<Value> { hits.iter().map(|h| h["locator"].clone()).collect() };
    assert_eq!(locators(&hits_a), locators(&hits_b));
    let tool = |c: &Client, name: &str, args: Value| {
        c.post(
            &format!("/v1/tools/{name}"),
            "application/json",
            args.to_string().as_bytes(),
        )
    };
    let locator = hits_b[0]["locator"].as_str().unwrap().to_string();
    for (name, args) in [
        ("browse_container", json!({})),
        ("read_content_objects", json!({ "locator": locator })),
    ] {
        let (sa_, on_a) = tool(&alice_a, name, args.clone());
        let (sb_, on_b) = tool(&alice_b, name, args);
        assert_eq!((sa_, sb_), (200, 200), "{name}: {on_a} / {on_b}");
        assert_eq!(on_a, on_b, "{name}: node B answers otherwise");
    }
    let (_, read) = tool(
        &alice_b,
        "read_content_objects",
        json!({ "locator": locator }),
    );
    assert!(read.to_string().contains("timetable is pinned"), "{read}");
    // A workflow started on node A is recalled, gathered and ended on node B.
    let secret = "The harbour safe code is 4-8-15-16, kept by quartermaster Ingrid.";
    let (status, stored) = tool(
        &alice_a,
        "store_tool_result",
        json!({"workflow": "w1", "tool": "vault.read", "content": secret}),
    );
    assert_eq!(status, 200, "{stored}");
    let handle = stored["handle"].as_str().unwrap().to_string();
    let (status, _) = tool(
        &alice_a,
        "remember",
        json!({"workflow": "w1", "key": "safe_keeper", "value": "quartermaster Ingrid"}),
    );
    assert_eq!(status, 200);
    let recall = json!({"workflow": "w1", "handle": handle});
    let (status, on_b) = tool(&alice_b, "recall_tool_result", recall.clone());
    assert_eq!(status, 200, "{on_b}");
    assert!(
        on_b["text"].as_str().unwrap_or("").contains("4-8-15-16"),
        "{on_b}"
    );
    let (status, gathered) = tool(
        &alice_b,
        "gather_context",
        json!({"workflow": "w1", "query": "who keeps the safe", "max_chars": 20000}),
    );
    assert_eq!(status, 200, "{gathered}");
    assert!(
        gathered.to_string().contains("quartermaster Ingrid"),
        "{gathered}"
    );
    // Another key, on either node: the workflow is as a made-up one.
    for node in [&a, &b] {
        let bob = Client::new(node, Some(BOB));
        let theirs = tool(&bob, "recall_tool_result", recall.clone());
        let made_up = tool(
            &bob,
            "recall_tool_result",
            json!({"workflow": "never", "handle": handle}),
        );
        assert_eq!(theirs, made_up);
    }
    let (status, ended) = tool(&alice_b, "end_workflow", json!({"workflow": "w1"}));
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["deleted"]["tool_results"], 1, "{ended}");
    let (_, gone) = tool(&alice_a, "recall_tool_result", recall.clone());
    let (_, never) = tool(
        &alice_a,
        "recall_tool_result",
        json!({"workflow": "never", "handle": handle}),
    );
    assert_eq!(gone, never, "node A still recalls what node B ended");

    // Another key of the same mandate sees nothing of it on either node, answered as if
    // nothing were there.
    for node in [&a, &b] {
        let bob = Client::new(node, Some(BOB));
        assert!(bob.search("when does the ferry leave", 5).is_empty());
        let (s1, theirs) = tool(&bob, "read_content_objects", json!({ "locator": locator }));
        let missing = locator.replace("ferry", "fairy");
        let (s2, none) = tool(&bob, "read_content_objects", json!({ "locator": missing }));
        assert_eq!(s1, s2);
        assert_eq!(
            theirs.to_string().replace("ferry", "X"),
            none.to_string().replace("fairy", "X")
        );
    }
}

/// A key of user `alice` in mandate `globex` (the service tests' alice is in `acme`).
const GLOBEX: &str = "k-alice-globex-0123456789";

/// Notes on distinct subjects, one per upload.
const NOTES: [&str; 8] = [
    "The ferry to Skerry Point leaves at dawn; its timetable is pinned in the harbour office.",
    "The lighthouse keeper logged every storm of 1931 in a green ledger kept under the lamp.",
    "Pear trees in the orchard were grafted by the harbour master's daughter in 1911.",
    "The turbine hall flooded in the spring of 1952 and was rebuilt with Norwegian steel.",
    "Granite from the northern quarry built the causeway across the tidal flats.",
    "The choir rehearses in the chapel on Thursdays; the organ was tuned last in March.",
    "A colony of puffins nests on the western cliffs between April and August each year.",
    "The bakery on Quay Street sells rye loaves baked in a wood-fired oven since 1887.",
];

/// Points in `collection` and entries in the catalog at `url` (every scope).
fn counts(cluster: &QdrantServer, collection: &str, url: &str) -> (u64, usize) {
    let dir = tempfile::tempdir().unwrap();
    let catalog = pg_catalog(url, dir.path());
    let entries = catalog.scopes().iter().map(|s| catalog.len_of(s)).sum();
    let points = cluster
        .count_points(0, collection)
        .expect("the collection's points counted");
    (points, entries)
}

/// The three-node deployment: three `ingest serve` nodes on one PostgreSQL catalog
/// (the upload queue too), a 3-node Qdrant cluster (each node talking to its own peer) and
/// one spool folder. Uploads sent round-robin are answered alike by every node, and every
/// node reports every job; a node killed (SIGKILL, at a failpoint: right after it upserted
/// the first points of a job) leaves its job to another node after its lease, and the end
/// state equals a single node's run of the same uploads: as many points, as many entries.
#[test]
fn qdrant_three_serve_nodes_share_one_queue_and_take_over_a_killed_nodes_jobs() {
    use crate::service::{job_of, Client, Service, ALICE, BOB};
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let Some(cluster) = QdrantServer::start_cluster() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let shared = Sandbox::new();
    let config = |name: &str| {
        // The same user name in another mandate: another tenant.
        format!(
            "spool_dir = \"{}\"\njob_lease_secs = 2\n\n[[api_keys]]\nkey = \"{GLOBEX}\"\n\
             user = \"alice\"\nmandate = \"globex\"\n",
            shared.path(name).display()
        )
    };
    let catalog = pg.database("three");
    let stores: Vec<String> = (0..3).map(|n| cluster.store_url(n, "three")).collect();
    let sandboxes = [Sandbox::new(), Sandbox::new(), Sandbox::new()];
    let args = |n: usize| -> Vec<&str> {
        vec!["--catalog", catalog.as_str(), "--store", stores[n].as_str()]
    };
    let mut nodes: Vec<Service> = (0..3)
        .map(|n| Service::start_with(&sandboxes[n], &config("spool"), &args(n)))
        .collect();
    let zip = ingest_unpack::zip_of(&[
        ("logs/1952.txt", NOTES[3].as_bytes()),
        ("logs/quarry.txt", NOTES[4].as_bytes()),
        ("logs/choir.txt", NOTES[5].as_bytes()),
        ("logs/puffins.txt", NOTES[6].as_bytes()),
    ]);
    // Phase 1: six uploads round-robin over three live nodes.
    let first: Vec<(String, Vec<u8>)> = [0, 1, 2, 5, 6, 7]
        .iter()
        .map(|&i| (format!("notes/note-{i}.txt"), NOTES[i].as_bytes().to_vec()))
        .collect();
    let mut jobs = Vec::new();
    for (i, (name, bytes)) in first.iter().enumerate() {
        let client = Client::new(&nodes[i % 3], Some(ALICE));
        let (status, answer) = client.upload(name, bytes);
        assert_eq!(status, 202, "{answer}");
        jobs.push(job_of(&answer));
    }
    let clients: Vec<Client> = nodes.iter().map(|s| Client::new(s, Some(ALICE))).collect();
    for id in &jobs {
        let ended = clients[0].wait_job(id);
        assert_eq!(ended["state"], "indexed", "{ended}");
        for (n, c) in clients.iter().enumerate() {
            let (status, on_n) = c.get(&format!("/v1/jobs/{id}"));
            assert_eq!(
                (status, &on_n),
                (200, &ended),
                "node {n} reports job {id} otherwise"
            );
        }
    }
    let tool = |c: &Client, name: &str, args: Value| {
        c.post(
            &format!("/v1/tools/{name}"),
            "application/json",
            args.to_string().as_bytes(),
        )
    };
    let hits: Vec<Vec<Value>> = clients
        .iter()
        .map(|c| {
            c.search("when does the ferry leave", 3)
                .iter()
                .map(|h| h["locator"].clone())
                .collect()
        })
        .collect();
    let file = |locator: Option<&str>| {
        locator
            .and_then(|l| l.split('#').next())
            .map(str::to_string)
    };
    assert_eq!(
        file(hits[0].first().and_then(Value::as_str)).as_deref(),
        Some("notes/note-0.txt")
    );
    assert!(hits.iter().all(|h| *h == hits[0]), "{hits:?}");
    for (name, args) in [
        ("browse_container", json!({})),
        (
            "read_content_objects",
            json!({ "locator": "notes/note-7.txt" }),
        ),
    ] {
        let answers: Vec<(u16, Value)> = clients
            .iter()
            .map(|c| tool(c, name, args.clone()))
            .collect();
        assert_eq!(answers[0].0, 200, "{name}: {}", answers[0].1);
        assert!(
            answers.iter().all(|a| *a == answers[0]),
            "{name}: {answers:?}"
        );
    }
    // Another key of the mandate, and another mandate: nothing, on every node, answered as
    // for nothing there.
    for (node, key) in nodes.iter().flat_map(|n| [(n, BOB), (n, GLOBEX)]) {
        let bob = Client::new(node, Some(key));
        assert!(bob.search("when does the ferry leave", 5).is_empty());
        let (s1, theirs) = bob.get(&format!("/v1/jobs/{}", jobs[0]));
        assert_eq!(s1, 404, "{theirs}");
        let (s2, theirs) = tool(
            &bob,
            "read_content_objects",
            json!({ "locator": "notes/note-7.txt" }),
        );
        let (s3, none) = tool(
            &bob,
            "read_content_objects",
            json!({ "locator": "notes/note-9.txt" }),
        );
        assert_eq!(s2, s3);
        assert_eq!(
            theirs.to_string().replace("note-7", "X"),
            none.to_string().replace("note-9", "X")
        );
    }

    // Phase 2: node C starts again, armed to die right after its first upsert; it receives
    // an archive, claims its job and is killed in the middle of it.
    let c = nodes.pop().unwrap();
    assert!(c.stop().success());
    let mut doomed = Service::start_config_env(
        &sandboxes[2],
        &args(2),
        &[(ingest_base::failpoint::ENV, "store.upsert=1")],
    );
    let (status, answer) = Client::new(&doomed, Some(ALICE)).upload("logs.zip", &zip);
    assert_eq!(status, 202, "{answer}");
    let zip_job = job_of(&answer);
    let died = crate::util::wait_for(Duration::from_secs(300), || {
        doomed.child.try_wait().unwrap().is_some()
    });
    assert!(died.is_some(), "node C was not killed at its failpoint");
    use std::os::unix::process::ExitStatusExt;
    let status = doomed.child.try_wait().unwrap().unwrap();
    assert_eq!(status.signal(), Some(9), "node C ended otherwise: {status}");
    // Two more uploads to the live nodes, one of them replacing a phase-1 note.
    let second: Vec<(String, Vec<u8>)> = vec![
        ("notes/note-3.txt".into(), NOTES[3].as_bytes().to_vec()),
        ("notes/note-0.txt".into(), NOTES[4].as_bytes().to_vec()),
    ];
    let mut later = vec![zip_job.clone()];
    for (i, (name, bytes)) in second.iter().enumerate() {
        let (status, answer) = clients[i % 2].upload(name, bytes);
        assert_eq!(status, 202, "{answer}");
        later.push(job_of(&answer));
    }
    for id in &later {
        let ended = clients[0].wait_job(id);
        assert_eq!(ended["state"], "indexed", "{ended}");
        let (_, on_b) = clients[1].get(&format!("/v1/jobs/{id}"));
        assert_eq!(on_b, ended, "node B reports job {id} otherwise");
    }
    let zip_ended = clients[1].wait_job(&zip_job);
    let files = zip_ended["files"].as_array().cloned().unwrap_or_default();
    // Each member searchable: indexed by the node that took the job over, or found already
    // there (what the killed node stored before it died; bytes a later note has too).
    let searchable = ["indexed", "unchanged", "duplicate"];
    assert_eq!(
        files
            .iter()
            .filter(|f| f["archive"] != true
                && searchable.contains(&f["status"].as_str().unwrap_or("")))
            .count(),
        4,
        "the archive's members: {zip_ended}"
    );
    // Node A or B took the job over (C received and claimed it).
    let claimed = format!("job {zip_job} claimed");
    let logs: Vec<String> = sandboxes
        .iter()
        .map(|sb| std::fs::read_to_string(sb.path("serve.err")).unwrap_or_default())
        .collect();
    assert!(
        logs[..2].iter().any(|l| l.contains(&claimed)),
        "no live node says it took job {zip_job} over"
    );
    let puffins = clients[1].search("where do puffins nest", 3);
    assert_eq!(
        file(puffins.first().and_then(|h| h["locator"].as_str())).as_deref(),
        Some("logs.zip!/logs/puffins.txt"),
        "{puffins:?}"
    );

    // The same uploads, in the same order, on one node of its own: the same counts.
    let reference_catalog = pg.database("reference");
    let reference_store = cluster.store_url(0, "reference");
    let rsb = Sandbox::new();
    let reference = Service::start_with(
        &rsb,
        &config("reference-spool"),
        &[
            "--catalog",
            reference_catalog.as_str(),
            "--store",
            reference_store.as_str(),
        ],
    );
    let r = Client::new(&reference, Some(ALICE));
    let mut uploads: Vec<(String, Vec<u8>)> = first.clone();
    uploads.push(("logs.zip".into(), zip.clone()));
    uploads.extend(second.iter().cloned());
    for (name, bytes) in &uploads {
        let (status, answer) = r.upload(name, bytes);
        assert_eq!(status, 202, "{answer}");
        assert_eq!(r.wait_job(&job_of(&answer))["state"], "indexed");
    }
    let shared_counts = counts(&cluster, "three", &catalog);
    let reference_counts = counts(&cluster, "reference", &reference_catalog);
    assert_eq!(
        shared_counts, reference_counts,
        "(points, entries) of three nodes with a kill vs one node"
    );
    assert!(reference_counts.1 >= 12, "{reference_counts:?}");
    drop(nodes);
}

/// The shared queue's rules, on PostgreSQL: a claim takes the oldest open jobs nobody
/// holds; a job waits while an older job on its name is another node's; a lease that runs
/// out (a dead node) gives the job to the next claim; a release gives it at once; an ended
/// job is never claimed again; open jobs are counted per scope on every node.
#[test]
fn the_postgres_job_queue_claims_in_order_under_leases() {
    use ingest_index::JobRow;
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let catalog = pg_catalog(&pg.database("queue"), dir.path());
    assert!(catalog.shares_jobs());
    let write = |id: &str, scope: &str, name: &str, ended: Option<f64>, node: Option<&str>| {
        let record = format!("{{\"id\":\"{id}\",\"by\":\"{}\"}}", node.unwrap_or("-"));
        catalog
            .put_job(&JobRow {
                id,
                scope,
                name_key: &format!("{scope}/{name}"),
                record: &record,
                ended_at: ended,
                node,
            })
            .unwrap()
    };
    let put = |id: &str, scope: &str, name: &str, ended: Option<f64>| {
        assert!(write(id, scope, name, ended, None), "accepting {id}");
    };
    let ids = |records: Vec<String>| -> Vec<String> {
        records
            .iter()
            .map(|r| {
                serde_json::from_str::<Value>(r).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let long = Duration::from_secs(60);
    put("j1", "s", "a.txt", None);
    put("j2", "s", "a.txt", None);
    put("j3", "s", "b.txt", None);
    put("j4", "t", "c.txt", None);
    assert_eq!(catalog.open_jobs(&["s".into()]).unwrap(), 3);
    assert_eq!(catalog.open_jobs(&["s".into(), "t".into()]).unwrap(), 4);
    assert_eq!(ids(catalog.claim_jobs("n1", long, 1).unwrap()), ["j1"]);
    // j2 waits for j1 (another node's); n2 takes the next free ones.
    assert_eq!(
        ids(catalog.claim_jobs("n2", long, 10).unwrap()),
        ["j3", "j4"]
    );
    assert_eq!(
        ids(catalog.claim_jobs("n2", long, 10).unwrap()),
        Vec::<String>::new()
    );
    // The holder of j1 may take j2 (it runs them in order itself).
    assert_eq!(ids(catalog.claim_jobs("n1", long, 10).unwrap()), ["j2"]);
    // Only the holder writes a job's stages and end; an ended job is neither claimed nor
    // replaced by a late stage write.
    assert!(!write("j3", "s", "b.txt", Some(1.0), Some("n1")));
    assert!(!write("j3", "s", "b.txt", Some(1.0), None));
    assert!(write("j3", "s", "b.txt", None, Some("n2")));
    assert!(write("j3", "s", "b.txt", Some(1.0), Some("n2")));
    assert!(!write("j3", "s", "b.txt", None, Some("n2")));
    assert_eq!(catalog.open_jobs(&["s".into()]).unwrap(), 2);
    // n2 stops: what it holds is claimable at once.
    catalog.release_jobs("n2").unwrap();
    assert_eq!(
        ids(catalog
            .claim_jobs("n3", Duration::from_secs(1), 10)
            .unwrap()),
        ["j4"]
    );
    // n3 dies: once its lease ran out, j4 is n1's; renewing keeps n1's leases.
    std::thread::sleep(Duration::from_millis(1500));
    catalog
        .renew_jobs("n1", long, &["j1".into(), "j2".into()])
        .unwrap();
    assert_eq!(ids(catalog.claim_jobs("n1", long, 10).unwrap()), ["j4"]);
    // A node renews only what it runs: a job it holds and does not name lapses.
    put("j5", "t", "d.txt", None);
    assert_eq!(
        ids(catalog
            .claim_jobs("n2", Duration::from_secs(1), 10)
            .unwrap()),
        ["j5"]
    );
    std::thread::sleep(Duration::from_millis(1500));
    catalog.renew_jobs("n2", long, &[]).unwrap();
    assert_eq!(ids(catalog.claim_jobs("n1", long, 10).unwrap()), ["j5"]);
    assert_eq!(
        ids(catalog.claim_jobs("n2", long, 10).unwrap()),
        Vec::<String>::new()
    );
    let ended = catalog.job("j3").unwrap();
    assert_eq!(ended, "{\"id\":\"j3\",\"by\":\"n2\"}");
    // n2, whose lease on j5 lapsed, ends it late: not recorded; n1's end is.
    assert!(!write("j5", "t", "d.txt", Some(2.0), Some("n2")));
    assert!(write("j5", "t", "d.txt", Some(3.0), Some("n1")));
    assert_eq!(catalog.job("j5").unwrap(), "{\"id\":\"j5\",\"by\":\"n1\"}");
    // Jobs of one name keep the order they were accepted in, whatever their ids (made on
    // nodes whose clocks may differ).
    put("z1", "u", "e.txt", None);
    put("a1", "u", "e.txt", None);
    assert_eq!(ids(catalog.claim_jobs("n2", long, 1).unwrap()), ["z1"]);
    assert_eq!(
        ids(catalog.claim_jobs("n1", long, 10).unwrap()),
        Vec::<String>::new()
    );
    assert_eq!(ids(catalog.claim_jobs("n2", long, 10).unwrap()), ["a1"]);
}

/// `docs/orchard.md`, found on nodes `a` and `b`, is removed from the folder and synced
/// away by node B: neither finds it any more (one writer's holder records, named alike
/// though node B reaches the database by another host name).
fn removed_on_b_is_gone_for_both(sb: &Sandbox, a: &Path, b: &Path, catalog: &str, store: &str) {
    let alias = catalog.replacen("@127.0.0.1:", "@localhost:", 1);
    assert_ne!(alias, catalog);
    let orchard = |data: &Path| {
        answer(&node(
            data,
            if data == b { &alias } else { catalog },
            store,
            &[
                "search",
                "--min-score",
                "-1",
                "--mode",
                "keyword",
                "pear trees grafted",
            ],
        ))
        .iter()
        .any(|h| h.to_string().contains("orchard.md"))
    };
    assert!(orchard(a) && orchard(b));
    std::fs::remove_file(sb.path("docs/orchard.md")).unwrap();
    let docs = sb.path("docs").display().to_string();
    let out = node(b, &alias, store, &[&docs]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!orchard(a) && !orchard(b), "a removed file is still found");
}

/// `ingest ARGS` on data dir `data` with its own (embedded) catalog and the store.
fn solo(data: &Path, store: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(data)
        .args(["--store", store])
        .args(args)
        .env_remove(ingest_base::failpoint::ENV)
        .env_remove("INGEST_STORE")
        .env_remove("INGEST_CATALOG")
        .output()
        .unwrap()
}

/// `ingest migrate` moves a single machine's index (embedded catalog, points in a Qdrant
/// server) into an empty PostgreSQL catalog: a new node answers what the machine answered,
/// recalls its workflow, and a file it removes is gone for the first node too (the holder
/// records were re-keyed: with the machine's own record left, its points would stay).
#[test]
fn qdrant_a_single_machine_index_migrates_into_a_shared_catalog() {
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let catalog = pg.database("migrated");
    let store = server.store_url(0, "migrated");
    let sb = Sandbox::new();
    write_docs(&sb);
    let docs = sb.path("docs").display().to_string();
    let (a, b) = (sb.path("machine"), sb.path("node-b"));
    let ok = |out: &Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    ok(&solo(&a, &store, &[&docs]));
    let stored = solo(
        &a,
        &store,
        &[
            "tool",
            "store_tool_result",
            &json!({"workflow": "w1", "tool": "vault.read",
                    "content": "The harbour safe code is 4-8-15-16."})
            .to_string(),
        ],
    );
    ok(&stored);
    let handle = json_lines(&stored)[0]["handle"]
        .as_str()
        .unwrap()
        .to_string();
    let member = format!("{docs}/bundle.zip!/inner/turbine.txt");
    let zip_locator = format!("{docs}/bundle.zip");
    let asks: Vec<Vec<&str>> = vec![
        vec!["search", "--min-score", "-1", "who kept the lighthouse"],
        vec!["browse"],
        vec!["browse", zip_locator.as_str()],
        vec!["read", member.as_str()],
    ];
    let before: Vec<Vec<Value>> = asks.iter().map(|q| answer(&solo(&a, &store, q))).collect();
    // Without a server store, or into a catalog holding entries: refused, nothing moved.
    let migrate = |data: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(["--json", "--data-dir"])
            .arg(data)
            .args(["--catalog", catalog.as_str(), "migrate"])
            .env_remove("INGEST_STORE")
            .env_remove("INGEST_CATALOG")
            .output()
            .unwrap()
    };
    let edge = sb.path("edge-only");
    ok(&Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--data-dir"])
        .arg(&edge)
        .arg(sb.path("docs/lighthouse.txt"))
        .output()
        .unwrap());
    let refused = migrate(&edge);
    assert_eq!(
        refused.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("embedded shard"));
    let out = migrate(&a);
    ok(&out);
    let report = &json_lines(&out)[0];
    assert_eq!(report["scopes"], 2, "{report}"); // the files' and the workflow's
    assert!(report["entries"].as_u64().unwrap() >= 6, "{report}");
    assert!(report["contents"].as_u64().unwrap() >= 5, "{report}");
    assert_eq!(report["holder_records"], report["contents"], "{report}");
    assert_eq!(
        (
            report["workflows"].clone(),
            report["workflow_items"].clone()
        ),
        (json!(1), json!(1))
    );
    assert!(!report.to_string().contains("PASSWORD"));
    assert_eq!(report["resumed"], false, "{report}");
    // Run again (as after a failure half way): it finishes, nothing doubled.
    let again = migrate(&a);
    ok(&again);
    let second = &json_lines(&again)[0];
    assert_eq!(second["resumed"], true, "{second}");
    for field in [
        "scopes",
        "entries",
        "contents",
        "workflows",
        "workflow_items",
    ] {
        assert_eq!(second[field], report[field], "{field}");
    }
    // Another data dir into the full catalog: refused.
    let other = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(sb.path("other-machine"))
        .args(["--store", &server.store_url(0, "other_machine")])
        .args(["--catalog", catalog.as_str(), "migrate"])
        .env_remove("INGEST_STORE")
        .env_remove("INGEST_CATALOG")
        .output()
        .unwrap();
    assert_eq!(
        other.status.code(),
        Some(3),
        "another data dir's migration into a full catalog: {}",
        String::from_utf8_lossy(&other.stderr)
    );
    assert!(String::from_utf8_lossy(&other.stderr).contains("holds entries already"));
    // A new node of the catalog answers what the machine answered; so does the machine.
    for (q, was) in asks.iter().zip(&before) {
        for data in [&b, &a] {
            assert_eq!(
                &answer(&node(data, &catalog, &store, q)),
                was,
                "{q:?} on {}",
                data.display()
            );
        }
    }
    let recalled = node(
        &b,
        &catalog,
        &store,
        &[
            "tool",
            "recall_tool_result",
            &json!({"workflow": "w1", "handle": handle}).to_string(),
        ],
    );
    ok(&recalled);
    assert!(String::from_utf8_lossy(&recalled.stdout).contains("4-8-15-16"));
    // A file removed through the new node is gone for the machine too.
    removed_on_b_is_gone_for_both(&sb, &a, &b, &catalog, &store);
}
