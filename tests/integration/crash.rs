//! Crash safety at chosen points. The binary is killed with SIGKILL right after a chosen write
//! (a failpoint: `INGEST_FAILPOINTS=site=N`, see `crates/base/src/failpoint.rs`) — for every write site
//! of a run, at its 1st, 2nd, 3rd, 5th, 8th… pass — and then run again without failpoints.
//! After that one clean run the index must equal a reference index built without any crash:
//! the same points (content, chunk, locators), the same catalog, no run marker left. Nothing
//! lost, nothing stale, nothing duplicated.
//!
//! Three phases, each a test: a crash during the first ingest of a folder; a crash during the
//! sync of a changed folder (edits, deletions, a rename, a swap, duplicates appearing and
//! disappearing, a changed archive); a crash while the next start repairs an earlier crash
//! (repair writes too) or during the sync after it.
//!
//! The catalog is checkpointed after every stored item (`--checkpoint-ms 0`), so the kills
//! land between every pair of writes the checkpoints could separate.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;
use ingest_index::prelude::*;
use ingest_index::IndexRead;

/// Passes of a site to kill at: the first few, then sparser (a site can pass dozens of times).
const SCHEDULE: &[u64] = &[1, 2, 3, 5, 8, 13, 21, 34, 55, 89];

/// A test's working area: a folder to ingest and a data dir, at fixed paths so that saved
/// states can be restored by copying (catalog entries name absolute paths).
struct Area {
    _root: tempfile::TempDir,
    folder: PathBuf,
    data: PathBuf,
    saved: PathBuf,
}

impl Area {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(root.path()).unwrap();
        Area {
            folder: base.join("logbook"),
            data: base.join("data"),
            saved: base.join("saved"),
            _root: root,
        }
    }

    /// `ingest --json --checkpoint-ms 0 FOLDER` with `failpoints` armed (empty: none).
    fn ingest(&self, failpoints: &str) -> std::process::Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingest"));
        cmd.args(["--json", "--checkpoint-ms", "0", "--data-dir"])
            .arg(&self.data)
            .arg(&self.folder)
            .env_remove(ingest_base::failpoint::ENV);
        if !failpoints.is_empty() {
            cmd.env(ingest_base::failpoint::ENV, failpoints);
        }
        cmd.output().expect("run ingest")
    }

    /// A clean run must succeed: exit 0, every line indexed, unchanged, duplicate or removed.
    fn ingest_clean(&self) {
        let out = self.ingest("");
        // Any line but these says why the run did not end cleanly.
        let stdout = String::from_utf8_lossy(&out.stdout);
        let odd: Vec<&str> = stdout
            .lines()
            .filter(|l| {
                !["indexed", "unchanged", "duplicate", "removed"]
                    .iter()
                    .any(|s| l.contains(&format!("\"status\":\"{s}\"")))
            })
            .collect();
        assert_eq!(
            out.status.code(),
            Some(0),
            "clean run: {:?}\nstderr: {}\nother lines: {odd:#?}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Save folder and data dir (`cp -a` keeps mtimes, so the catalog's size + mtime
    /// shortcut holds for the restored copy as for the original).
    fn save(&self) {
        let _ = std::fs::remove_dir_all(&self.saved);
        std::fs::create_dir_all(&self.saved).unwrap();
        copy_tree(&self.folder, &self.saved.join("logbook"));
        copy_tree(&self.data, &self.saved.join("data"));
    }

    fn restore(&self) {
        for d in [&self.folder, &self.data] {
            let _ = std::fs::remove_dir_all(d);
        }
        copy_tree(&self.saved.join("logbook"), &self.folder);
        copy_tree(&self.saved.join("data"), &self.data);
    }

    /// The index as comparable data, with the folder's path cut from every locator.
    fn snapshot(&self) -> Snapshot {
        let prefix = format!("{}/", self.folder.display());
        let rel = |l: &str| l.replacen(&prefix, "", 1);
        let store = ingest_index::EdgeIndex::open(&self.data).unwrap();
        let points = store
            .point_records()
            .unwrap()
            .into_iter()
            .map(|p| {
                let locators = p.locators.iter().map(|l| rel(l)).collect();
                // An entry card's key is a hash of its (absolute) locator: the locators
                // name it here, where two runs' folders differ.
                let key = if p.content_hash.starts_with("entry-") {
                    "entry card".to_string()
                } else {
                    p.content_hash
                };
                (key, p.chunk_index, locators)
            })
            .collect::<Vec<_>>();
        drop(store);
        let total = points.len();
        let points: BTreeSet<_> = points.into_iter().collect();
        assert_eq!(points.len(), total, "two points with the same identity");
        let catalog = ingest_index::SqliteCatalog::open(&self.data).unwrap();
        let entries = catalog
            .entries(&ingest::Scope::user("local"))
            .into_iter()
            .map(|e| {
                (
                    rel(&e.locator),
                    (format!("{:?}", e.status), e.hash, e.chunks),
                )
            })
            .collect();
        Snapshot {
            points,
            catalog: entries,
            marker_left: self.data.join("run-in-progress").exists(),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Snapshot {
    /// (content hash, chunk index, locators) of every point.
    points: BTreeSet<(String, Option<u32>, Vec<String>)>,
    /// locator → (status, hash, chunks).
    catalog: BTreeMap<String, (String, Option<String>, u32)>,
    marker_left: bool,
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(
        status.success(),
        "cp -a {} {}",
        from.display(),
        to.display()
    );
}

fn write(folder: &Path, name: &str, bytes: &[u8]) {
    let path = folder.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn text(id: u64, version: u64) -> String {
    document(id, version, &mut Lcg(id * 31 + version)).1
}

/// The folder before: eight files, two identical twins, an archive of two members.
fn write_v0(folder: &Path) {
    for id in 0..8 {
        write(folder, &format!("entry-{id}.txt"), text(id, 0).as_bytes());
    }
    write(folder, "twin-a.txt", text(8, 0).as_bytes());
    write(folder, "twin-b.txt", text(8, 0).as_bytes());
    write(
        folder,
        "pack.zip",
        &zip_of(&[
            ("inner/m1.txt", text(9, 0).as_bytes()),
            ("m2.txt", text(10, 0).as_bytes()),
        ]),
    );
}

/// The folder after: an edit, a deletion, a rename, a twin gone, a copy appearing, two files
/// swapping contents, a new file, and the archive with one member changed and one added.
fn change_to_v1(folder: &Path) {
    write(folder, "entry-0.txt", text(0, 1).as_bytes());
    std::fs::remove_file(folder.join("entry-1.txt")).unwrap();
    std::fs::rename(folder.join("entry-2.txt"), folder.join("moved-2.txt")).unwrap();
    std::fs::remove_file(folder.join("twin-b.txt")).unwrap();
    write(folder, "copy-3.txt", text(3, 0).as_bytes());
    write(folder, "entry-4.txt", text(5, 0).as_bytes());
    write(folder, "entry-5.txt", text(4, 0).as_bytes());
    write(folder, "entry-11.txt", text(11, 0).as_bytes());
    write(
        folder,
        "pack.zip",
        &zip_of(&[
            ("inner/m1.txt", text(9, 1).as_bytes()),
            ("m2.txt", text(10, 0).as_bytes()),
            ("m3.txt", text(12, 0).as_bytes()),
        ]),
    );
}

/// The index a crash-free ingest of the folder's current state builds, in a separate area
/// whose folder has the same contents at the same relative paths.
fn reference(prepare: impl Fn(&Path)) -> Snapshot {
    let area = Area::new();
    prepare(&area.folder);
    area.ingest_clean();
    let snap = area.snapshot();
    assert!(!snap.points.is_empty() && !snap.marker_left);
    snap
}

/// For every failpoint site and pass in [`SCHEDULE`]: restore the saved state, run with the
/// failpoint armed, expect a SIGKILL (or a normal end once the site has no more passes), run
/// clean, and compare with `expected`. Returns how many kills landed at each site.
fn kill_everywhere(area: &Area, expected: &Snapshot) -> BTreeMap<&'static str, u64> {
    let mut kills = BTreeMap::new();
    let mut mismatches = Vec::new();
    for &site in ingest_base::failpoint::SITES {
        for &n in SCHEDULE {
            area.restore();
            let out = area.ingest(&format!("{site}={n}"));
            match out.status.signal() {
                Some(9) => {}
                None => {
                    // The site has fewer than n passes in this run: it ended normally.
                    assert!(
                        matches!(out.status.code(), Some(0)),
                        "{site}={n}: {:?}\n{}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    );
                    break;
                }
                Some(other) => panic!(
                    "{site}={n}: killed by signal {other}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                ),
            }
            *kills.entry(site).or_default() += 1;
            area.ingest_clean();
            let got = area.snapshot();
            if &got != expected {
                mismatches.push(format!("{site}={n}: {}", diff(expected, &got)));
            }
        }
    }
    eprintln!("kills per site: {kills:?}");
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    kills
}

fn diff(want: &Snapshot, got: &Snapshot) -> String {
    let missing: Vec<_> = want.points.difference(&got.points).collect();
    let extra: Vec<_> = got.points.difference(&want.points).collect();
    let catalog: Vec<_> = want
        .catalog
        .iter()
        .filter(|(k, v)| got.catalog.get(*k) != Some(v))
        .map(|(k, v)| (k, v, got.catalog.get(k)))
        .chain(
            got.catalog
                .iter()
                .filter(|(k, _)| !want.catalog.contains_key(*k))
                .map(|(k, v)| (k, v, None)),
        )
        .collect();
    format!(
        "points missing {missing:?}, points extra {extra:?}, catalog differences (want, got) {catalog:?}, marker left {}",
        got.marker_left
    )
}

#[test]
fn a_crash_at_any_write_of_a_first_ingest_is_repaired_by_the_next_run() {
    let expected = reference(write_v0);
    let area = Area::new();
    write_v0(&area.folder);
    std::fs::create_dir_all(&area.data).unwrap();
    area.save();
    let kills = kill_everywhere(&area, &expected);
    for site in [
        "run.marked",
        "content.written",
        "store.upsert",
        "catalog.save",
        "store.flush",
    ] {
        assert!(kills.contains_key(site), "{site} never reached: {kills:?}");
    }
}

/// The index of the changed folder built without a crash, and an area whose folder changed
/// after a clean ingest of the old one (nothing synced yet).
fn changed_after_a_clean_ingest() -> (Snapshot, Area) {
    let expected = reference(|f| {
        write_v0(f);
        change_to_v1(f);
    });
    let area = Area::new();
    write_v0(&area.folder);
    area.ingest_clean();
    change_to_v1(&area.folder);
    (expected, area)
}

#[test]
fn a_crash_at_any_write_of_a_sync_is_repaired_by_the_next_run() {
    let (expected, area) = changed_after_a_clean_ingest();
    area.save();
    let kills = kill_everywhere(&area, &expected);
    for &site in ingest_base::failpoint::SITES {
        if site != "repair.store" {
            assert!(kills.contains_key(site), "{site} never reached: {kills:?}");
        }
    }
}

#[test]
fn a_crash_during_repair_or_the_sync_after_it_is_repaired_by_the_next_run() {
    let (expected, area) = changed_after_a_clean_ingest();
    // A crash after some of the sync's writes: the next start has to repair.
    let out = area.ingest("store.upsert=1");
    assert_eq!(out.status.signal(), Some(9), "{:?}", out.status);
    assert!(area.data.join("run-in-progress").exists());
    area.save();
    let kills = kill_everywhere(&area, &expected);
    for site in ["repair.store", "store.delete", "catalog.save"] {
        assert!(kills.contains_key(site), "{site} never reached: {kills:?}");
    }
}

/// A content index that cannot be written fails its file instead of being logged: none of
/// its points stay, the other file is indexed, the ledger says why, and `--retry` indexes it
/// with its content readable (an indexed file always has its content files).
#[test]
fn a_content_index_that_cannot_be_written_fails_its_file() {
    let sb = Sandbox::new();
    let docs = sb.path("docs");
    sb.write(
        "docs/alpha.md",
        b"# Alpha\n\nThe quokka ledger holds the alpha notes.\n",
    );
    sb.write(
        "docs/beta.md",
        b"# Beta\n\nThe narwhal register holds the beta notes.\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(sb.data_dir())
        .arg(&docs)
        .env(ingest_base::failpoint::ENV, "content.write=1:error")
        .output()
        .expect("run ingest");
    assert_eq!(out.status.code(), Some(2), "a failed file: exit 2");
    let mut lines = json_lines(&out);
    lines.pop(); // the summary
    let failed: Vec<&Value> = lines.iter().filter(|l| l["status"] == "failed").collect();
    let indexed: Vec<&Value> = lines.iter().filter(|l| l["status"] == "indexed").collect();
    assert_eq!((failed.len(), indexed.len()), (1, 1), "{lines:#?}");
    let reason = failed[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("content index could not be written"),
        "{reason}"
    );
    let failed_loc = failed[0]["locator"].as_str().unwrap().to_string();
    let (lost, kept) = if failed_loc.ends_with("alpha.md") {
        ("quokka", "narwhal")
    } else {
        ("narwhal", "quokka")
    };
    let found = |word: &str| -> Vec<String> {
        let out = sb.run(&["search", "--json", "--mode", "keyword", word]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        search_hits(&out)
            .iter()
            .filter_map(|h| h["locator"].as_str().map(str::to_string))
            .collect()
    };
    assert!(found(lost).is_empty(), "no point of the failed file stays");
    assert!(!found(kept).is_empty());
    assert_store_matches_catalog(&sb);
    // The read tools do not pretend it is there.
    let out = sb.run(&["read", &failed_loc]);
    assert!(!out.status.success());
    // Retried without the failpoint, it is indexed and readable.
    let (lines, summary, code) = sb.ingest_with(&["--retry"], &[&docs]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(by_name(&lines, &failed_loc)["status"], "indexed");
    assert_eq!(summary["failed"], 0);
    assert!(found(lost).iter().any(|l| l.starts_with(&failed_loc)));
    let out = sb.run(&["read", &failed_loc]);
    assert!(out.status.success(), "{}", crate::util::told(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(lost));
    assert_store_matches_catalog(&sb);
}
