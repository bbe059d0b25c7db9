//! Scale-out on a real Qdrant server: several `ingest` nodes (each its own data dir) writing
//! one collection, a node killed mid-run, a peer of a 3-node cluster stopped mid-ingest,
//! and moving an index between the embedded shard and a server with `export`/`import`.
//!
//! The reference is always the same corpus ingested by one node into the embedded shard:
//! the server collection must end up with exactly its points (ids, locators, text).
//! Every test here needs a server (see `ingest_index::testkit::QdrantServer`); their names hold
//! `qdrant` so that `make test` leaves them out, reported as skipped, when none is provisioned.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use ingest_index::testkit::{QdrantServer, QDRANT_SKIPPED};
use serde_json::Value;

use crate::util::{json_lines, search_hits, Lcg, Sandbox};

/// Point id → (sorted locators, text): what an index holds, from `ingest export`.
type Points = BTreeMap<u64, (Vec<String>, String)>;

const WORDS: &[&str] = &[
    "harbour", "glacier", "ledger", "turbine", "orchard", "lantern", "quarry", "meadow", "furnace",
    "archive", "compass", "granary", "beacon", "cistern", "foundry", "causeway",
];

/// `folders` folders of `per_folder` small text files each, every one distinct except that
/// every 25th file of the second half repeats a file of the first half byte for byte (a
/// content held by files that different nodes ingest).
fn write_corpus(root: &Path, folders: usize, per_folder: usize) -> Vec<PathBuf> {
    let mut rng = Lcg(7);
    let mut texts: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for f in 0..folders {
        let dir = root.join(format!("s{f}"));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..per_folder {
            let n = f * per_folder + i;
            let text = if f >= folders / 2 && i % 25 == 0 {
                texts[n % (folders / 2 * per_folder)].clone()
            } else {
                let w = |rng: &mut Lcg| WORDS[rng.below(WORDS.len() as u64) as usize];
                format!(
                    "Field note {n}: the {} near the {} was logged with code K{n}X; the {} and the {} follow.\n",
                    w(&mut rng),
                    w(&mut rng),
                    w(&mut rng),
                    w(&mut rng)
                )
            };
            std::fs::write(dir.join(format!("note-{n:04}.txt")), &text).unwrap();
            texts.push(text);
        }
        out.push(dir);
    }
    out
}

fn ingest_cmd(data: &Path, store: Option<&str>, args: &[&str], paths: &[PathBuf]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
    cmd.args(["--json", "--data-dir"])
        .arg(data)
        .args(args)
        .args(paths)
        .env_remove(ingest_base::failpoint::ENV)
        .env_remove("INGEST_STORE");
    if let Some(s) = store {
        cmd.args(["--store", s]);
    }
    cmd
}

fn run_ok(mut cmd: Command) -> Output {
    let out = cmd.output().expect("run ingest");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{cmd:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// What the index of `data` (in `store`, or the one it records) holds.
fn points(sb: &Sandbox, data: &Path, store: Option<&str>) -> Points {
    let file = sb.path(&format!(
        "export-{}.jsonl",
        data.file_name().unwrap().to_string_lossy()
    ));
    run_ok(ingest_cmd(
        data,
        store,
        &["export"],
        std::slice::from_ref(&file),
    ));
    let text = std::fs::read_to_string(&file).unwrap();
    let mut out = Points::new();
    for line in text.lines().skip(1) {
        let p: Value = serde_json::from_str(line).unwrap();
        let mut locators: Vec<String> = p["payload"]["locators"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect();
        locators.sort();
        let text = p["payload"]["text"].as_str().unwrap().to_string();
        out.insert(p["id"].as_u64().unwrap(), (locators, text));
    }
    out
}

/// The reference: one node, the embedded shard, every folder.
fn reference(sb: &Sandbox, folders: &[PathBuf]) -> Points {
    let data = sb.path("reference");
    run_ok(ingest_cmd(&data, None, &[], folders));
    let p = points(sb, &data, None);
    assert!(!p.is_empty());
    p
}

fn diff(want: &Points, got: &Points) -> String {
    let missing: Vec<_> = want
        .keys()
        .filter(|k| !got.contains_key(k))
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .keys()
        .filter(|k| !want.contains_key(k))
        .take(5)
        .collect();
    let changed: Vec<_> = want
        .iter()
        .filter(|(k, v)| got.get(k).is_some_and(|g| g != *v))
        .take(5)
        .map(|(k, v)| format!("{k}: want {v:?}, got {:?}", got.get(k)))
        .collect();
    format!(
        "{} points wanted, {} got; missing {missing:?}; extra {extra:?}; changed {changed:#?}",
        want.len(),
        got.len()
    )
}

/// Search with `--mode MODE`. Dense answers compare exactly across stores; hybrid ones may
/// differ where BM25 ties (equal texts' lengths and counts) leave a rank to the engine.
fn search_mode(data: &Path, store: Option<&str>, query: &str, mode: &str) -> Vec<Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
    cmd.args([
        "search",
        "--json",
        "--min-score",
        "-1",
        "--limit",
        "3",
        "--mode",
        mode,
        "--data-dir",
    ])
    .arg(data)
    .arg(query)
    .env_remove("INGEST_STORE");
    if let Some(s) = store {
        cmd.args(["--store", s]);
    }
    search_hits(&run_ok(cmd))
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.spawn().expect("start ingest")
}

fn wait_ok(child: Child, what: &str) {
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A server (or `None`, said on stderr), a sandbox with a corpus of `folders` × `per_folder`
/// files, and the corpus's single-node embedded reference.
fn setup(
    folders: usize,
    per_folder: usize,
) -> Option<(QdrantServer, Sandbox, Vec<PathBuf>, Points)> {
    let Some(server) = QdrantServer::start() else {
        eprintln!("{QDRANT_SKIPPED}");
        return None;
    };
    let sb = Sandbox::new();
    let folders = write_corpus(&sb.path("corpus"), folders, per_folder);
    let want = reference(&sb, &folders);
    Some((server, sb, folders, want))
}

/// Two nodes ingest overlapping halves of 1 000 files into one collection at the same time:
/// the collection then holds exactly the single-node points (same ids, same locators), and
/// each node's search finds what the other indexed.
#[test]
fn qdrant_two_nodes_on_overlapping_halves_index_what_one_node_does() {
    let Some((server, sb, folders, want)) = setup(10, 100) else {
        return;
    };
    let store = server.store_url(0, "shared");
    let (a, b) = (sb.path("node-a"), sb.path("node-b"));
    // Node a: s0..s5; node b: s4..s9 (s4 and s5 by both).
    let node_a = spawn(ingest_cmd(&a, Some(&store), &[], &folders[..6]));
    let node_b = spawn(ingest_cmd(&b, Some(&store), &[], &folders[4..]));
    wait_ok(node_a, "node a");
    wait_ok(node_b, "node b");
    let got = points(&sb, &a, None);
    assert!(want == got, "{}", diff(&want, &got));
    // Node a finds a file only node b ingested, and the other way round.
    let hits = search_mode(&a, None, "K987X", "keyword");
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .contains("s9/note-0987.txt"),
        "{hits:#?}"
    );
    let hits = search_mode(&b, None, "K12X", "keyword");
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .contains("s0/note-0012.txt"),
        "{hits:#?}"
    );
    // A second sync of either node changes nothing: everything is unchanged.
    let out = run_ok(ingest_cmd(&b, None, &[], &folders[4..]));
    let summary = json_lines(&out).pop().unwrap();
    assert_eq!(summary["summary"]["chunks_embedded"], 0, "{summary}");
    assert!(want == points(&sb, &a, None));
}

/// N nodes with `--partition I/N` embed disjoint shares and together make the single-node
/// index.
#[test]
fn qdrant_partitioned_nodes_embed_disjoint_shares_of_the_work() {
    let Some((server, sb, folders, want)) = setup(4, 50) else {
        return;
    };
    let store = server.store_url(0, "parts");
    let mut embedded = 0;
    let mut indexed: Vec<String> = Vec::new();
    for part in ["0/2", "1/2"] {
        let data = sb.path(&format!("part-{}", &part[..1]));
        let out = run_ok(ingest_cmd(
            &data,
            Some(&store),
            &["--partition", part],
            &folders,
        ));
        let mut lines = json_lines(&out);
        let summary = lines.pop().unwrap();
        // A chunk whose text came before in the run takes that vector (chunks_reused).
        embedded += summary["summary"]["chunks_embedded"].as_u64().unwrap()
            + summary["summary"]["chunks_reused"].as_u64().unwrap();
        indexed.extend(
            lines
                .iter()
                .filter(|l| l["status"] == "indexed" || l["status"] == "duplicate")
                .map(|l| l["locator"].as_str().unwrap().to_string()),
        );
    }
    // Every file once, by one node or the other.
    let n = indexed.len();
    indexed.sort();
    indexed.dedup();
    assert_eq!((n, indexed.len()), (200, 200));
    // Each content embedded once, but for a repeated one whose files fell to both nodes.
    assert!(
        embedded >= want.len() as u64 && embedded <= want.len() as u64 + 8,
        "{embedded}"
    );
    let got = points(&sb, &sb.path("part-0"), None);
    assert!(want == got, "{}", diff(&want, &got));
}

/// A node killed (at a chosen write) while another node works: after its next sync, the
/// collection equals the single-node reference.
#[test]
fn qdrant_a_node_killed_mid_run_is_repaired_by_its_next_sync() {
    let Some((server, sb, folders, want)) = setup(4, 50) else {
        return;
    };
    for (n, failpoint) in ["store.upsert=3", "store.set_locators=1", "catalog.save=4"]
        .iter()
        .enumerate()
    {
        let store = server.store_url(0, &format!("killed{n}"));
        let (a, b) = (sb.path(&format!("a{n}")), sb.path(&format!("b{n}")));
        let mut killed = ingest_cmd(&a, Some(&store), &["--checkpoint-ms", "0"], &folders[..3]);
        killed.env(ingest_base::failpoint::ENV, failpoint);
        let killed = spawn(killed);
        let other = spawn(ingest_cmd(&b, Some(&store), &[], &folders[1..]));
        let out = killed.wait_with_output().unwrap();
        assert_ne!(out.status.code(), Some(0), "{failpoint} did not fire");
        wait_ok(other, "node b");
        // Node a again: it repairs, then syncs what it did not finish.
        run_ok(ingest_cmd(&a, None, &[], &folders[..3]));
        let got = points(&sb, &a, None);
        assert!(want == got, "{failpoint}: {}", diff(&want, &got));
    }
}

/// `export` then `import` moves an index from the embedded shard to a server and back:
/// the same ids, payloads and search answers, nothing embedded, and the moved data dir's
/// next sync finds everything unchanged.
#[test]
fn qdrant_export_and_import_move_an_index_without_embedding() {
    let Some((server, sb, folders, want)) = setup(2, 30) else {
        return;
    };
    let data = sb.path("reference");
    let file = sb.path("moved.jsonl.gz");
    run_ok(ingest_cmd(
        &data,
        None,
        &["export"],
        std::slice::from_ref(&file),
    ));
    let store = server.store_url(0, "moved");
    // A store other than the recorded one is refused without the move.
    let refused = ingest_cmd(&data, Some(&store), &["search"], &[PathBuf::from("x")])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("ingest import"));
    let before = search_mode(&data, None, "harbour glacier ledger", "dense");
    let out = run_ok(ingest_cmd(
        &data,
        Some(&store),
        &["import"],
        std::slice::from_ref(&file),
    ));
    assert!(String::from_utf8_lossy(&out.stdout).contains(&format!("\"imported\":{}", want.len())));
    // The data dir now records the server: no --store needed.
    assert!(want == points(&sb, &data, None));
    assert_eq!(
        search_mode(&data, None, "harbour glacier ledger", "dense"),
        before
    );
    let out = run_ok(ingest_cmd(&data, None, &[], &folders));
    let summary = json_lines(&out).pop().unwrap();
    assert_eq!(summary["summary"]["chunks_embedded"], 0, "{summary}");
    assert_eq!(summary["summary"]["unchanged"], 60, "{summary}");
    // And back, into a new embedded data dir.
    let back = sb.path("back");
    let file2 = sb.path("back.jsonl");
    run_ok(ingest_cmd(
        &data,
        None,
        &["export"],
        std::slice::from_ref(&file2),
    ));
    run_ok(ingest_cmd(&back, None, &["import"], &[file2]));
    assert!(want == points(&sb, &back, None));
    assert_eq!(
        search_mode(&back, None, "harbour glacier ledger", "dense"),
        before
    );
}

/// A 3-node cluster (3 shards, 2 copies each): one peer stopped in the middle of an ingest
/// loses nothing. The ingest retries and completes, searches keep answering while the peer
/// is down, and after it is back the collection equals the reference.
#[test]
fn qdrant_cluster_loses_nothing_when_a_peer_stops_mid_ingest() {
    let Some(mut cluster) = QdrantServer::start_cluster() else {
        eprintln!("{QDRANT_SKIPPED}");
        return;
    };
    let sb = Sandbox::new();
    let folders = write_corpus(&sb.path("corpus"), 4, 75);
    let want = reference(&sb, &folders);
    let store = format!(
        "{}?shards=3&replication=2",
        cluster.store_url(0, "replicated")
    );
    // A reader node, on the same collection, to search while the peer is down.
    let reader = sb.path("reader");
    let mut ingest = spawn(ingest_cmd(&sb.path("writer"), Some(&store), &[], &folders));
    let stdout = ingest.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut seen = 0;
    while seen < 60 {
        let line = lines.next().expect("the ingest ended early").unwrap();
        if line.contains("\"indexed\"") {
            seen += 1;
        }
    }
    cluster.stop(2);
    let hits = search_mode(&reader, Some(&store), "K3X", "keyword");
    assert!(
        hits[0]["locator"]
            .as_str()
            .unwrap()
            .contains("note-0003.txt"),
        "{hits:#?}"
    );
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = ingest.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut ingest.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(0), "{stderr}\n{rest:#?}");
    cluster.restart(2).unwrap();
    let got = points(&sb, &sb.path("writer"), None);
    assert!(want == got, "{}", diff(&want, &got));
}
