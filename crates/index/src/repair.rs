//! Crash recovery: making the catalog and the vector index agree again.
//!
//! A run writes to two places, the shard and the catalog, and a process can be killed between
//! any two writes. Rather than a two-phase commit, every writing run leaves a marker file while
//! it works ([`DirtyMarker`]); if a run did not end cleanly, the next start reconciles:
//! - a content the catalog says is indexed but whose points are missing or incomplete is
//!   forgotten (its files, and the archives holding them, are indexed again by the next sync);
//! - points of contents no catalog entry holds (upserted before the crash, or left over from
//!   an old version) are deleted;
//! - the `locators` payload of every content is set to the files that hold it;
//! - a failed, skipped or archive entry whose card point is missing is marked so, and the
//!   next run writes it; a card no such entry holds is deleted like stale content;
//! - content indexes (`content/<hash>.json`) of contents no scope holds are deleted.
//!
//! Point ids derive from (scope, content hash, chunk index), so upserting again never creates
//! a second copy of a point: after a repair and a sync, the index is exactly the folder's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Catalog, Holders, VectorIndex};
use crate::error::{Error, Result};

/// Present in the data directory while a run writes; removed when it ends with store and
/// catalog in agreement.
#[derive(Debug)]
pub struct DirtyMarker {
    path: PathBuf,
}

impl DirtyMarker {
    /// Whether a previous run did not finish.
    pub fn present(data_dir: &Path) -> bool {
        crate::DataDir::at(data_dir).run_marker().exists()
    }

    /// Mark the data directory as being written (durably, before the first write).
    pub fn set(data_dir: &Path) -> Result<Self> {
        let path = crate::DataDir::at(data_dir).run_marker();
        let file = crate::perms::create_file(&path)?;
        file.sync_all().map_err(|e| Error::io(&path, e))?;
        crate::failpoint::hit("run.marked");
        Ok(DirtyMarker { path })
    }

    /// The run ended cleanly.
    pub fn clear(self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&self.path, e)),
            _ => Ok(()),
        }
    }
}

/// What a repair changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// Catalog entries dropped because their points were missing (they are indexed again).
    pub entries_forgotten: u64,
    /// Contents whose points no catalog entry held, deleted.
    pub stale_contents_deleted: u64,
    /// Contents whose `locators` (or `tags`) payload was out of date.
    pub locators_fixed: u64,
    /// Content index files (`content/<hash>.json`) of contents no scope holds, deleted.
    pub content_indexes_deleted: u64,
    /// Cards of failed, skipped or archive entries found missing (the next run writes them).
    pub cards_missing: u64,
}

/// Reconcile `catalog` with `store` (see the module docs), then save both.
pub fn repair(catalog: &dyn Catalog, store: &dyn VectorIndex) -> Result<RepairReport> {
    let mut stored = store.inventory()?;
    let mut report = RepairReport::default();
    for scope in catalog.scopes() {
        let key = scope.key();
        // content hash → (chunks, the locators holding it, in locator order)
        let mut held: BTreeMap<String, (u32, Vec<String>)> = BTreeMap::new();
        // entry card key → (the entry's locator, its tags)
        let mut cards: Vec<(String, String, Vec<String>)> = Vec::new();
        for e in catalog.entries(&scope) {
            if let Some((hash, chunks)) = e.content() {
                held.entry(hash)
                    .or_insert((chunks, Vec::new()))
                    .1
                    .push(e.locator);
            } else if let Some((card, _)) = e.card() {
                cards.push((card, e.locator, e.tags));
            }
        }
        for (hash, (chunks, locators)) in held {
            let holders = catalog.holders(&scope, &hash);
            let points = stored.remove(&(key.clone(), hash.clone()));
            let complete = match &points {
                None => chunks == 0,
                Some(p) => p.chunk_indexes.iter().copied().eq(0..chunks),
            };
            if !complete {
                for locator in &locators {
                    catalog.forget(&scope, locator);
                }
                if points.is_some() {
                    store.delete_content(&scope, &hash)?;
                }
                report.entries_forgotten += locators.len() as u64;
            } else if points
                .is_some_and(|p| p.locators != holders.locators || p.tags != holders.tags)
            {
                store.set_holders(&scope, &hash, &holders)?;
                report.locators_fixed += 1;
            }
        }
        // An entry's card is one point; a missing one is written by the next run.
        for (card, locator, tags) in cards {
            if catalog
                .get(&scope, &locator)
                .and_then(|e| e.card())
                .is_none()
            {
                continue; // forgotten above with a member: its card goes as stale below
            }
            let holders = Holders {
                locators: vec![locator.clone()],
                tags,
            };
            match stored.remove(&(key.clone(), card.clone())) {
                Some(p) if p.chunk_indexes.iter().copied().eq(0..1) => {
                    if p.locators != holders.locators || p.tags != holders.tags {
                        store.set_holders(&scope, &card, &holders)?;
                        report.locators_fixed += 1;
                    }
                }
                found => {
                    if found.is_some() {
                        store.delete_content(&scope, &card)?;
                    }
                    catalog.set_card_missing(&scope, &locator);
                    report.cards_missing += 1;
                }
            }
        }
    }
    for (scope_key, hash) in stored.into_keys() {
        store.delete_content_by_key(&scope_key, &hash)?;
        report.stale_contents_deleted += 1;
    }
    store.flush();
    crate::failpoint::hit("repair.store");
    catalog.save()?;
    // After the save: a content index is only deleted once no saved entry holds it.
    report.content_indexes_deleted = catalog.drop_unheld_content_indexes()?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{chunks, inventory};
    use crate::{CatalogEntries, CatalogEntry, EdgeIndex, EntryStatus, ServerIndex, SqliteCatalog};
    use extractors::Scope;

    fn indexed(locator: &str, hash: &str, chunks: u32, parent: Option<&str>) -> CatalogEntry {
        CatalogEntry::indexed(locator, parent.map(str::to_string), hash, 1, 1, chunks)
    }

    fn locators(catalog: &dyn Catalog, scope: &Scope) -> Vec<String> {
        catalog
            .entries(scope)
            .into_iter()
            .map(|e| e.locator)
            .collect()
    }

    #[test]
    fn repair_makes_store_and_catalog_agree_and_a_second_repair_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        repair_agrees(dir.path(), &EdgeIndex::open(dir.path()).unwrap());
    }

    /// The same on a Qdrant server collection (one node).
    #[test]
    fn qdrant_repair_makes_store_and_catalog_agree_and_a_second_repair_changes_nothing() {
        let Some(server) = crate::testkit::QdrantServer::start() else {
            eprintln!("{}", crate::testkit::QDRANT_SKIPPED);
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = crate::conformance::test_server_config(
            &server.grpc[0],
            &crate::conformance::fresh_collection(),
        );
        repair_agrees(dir.path(), &ServerIndex::open(&config, "node-a").unwrap());
    }

    fn repair_agrees(dir: &std::path::Path, store: &dyn VectorIndex) {
        let catalog = SqliteCatalog::open(dir).unwrap();
        let u = Scope::user("u");
        let gone = Scope::user("gone");

        // Sound: two chunks stored, two catalogued.
        catalog.put(&u, indexed("a.txt", "ha", 2, None));
        store.upsert(&u, &chunks("ha", 2, "a.txt", 0)).unwrap();
        // A point missing (chunk 2 of 3): the entry is forgotten, the rest deleted.
        catalog.put(&u, indexed("b.txt", "hb", 3, None));
        store.upsert(&u, &chunks("hb", 2, "b.txt", 10)).unwrap();
        // No points at all, inside an archive: the member and its archive are forgotten.
        catalog.put(
            &u,
            CatalogEntry::container("z.zip", "hz", 1, 1, "zip", Vec::new()),
        );
        catalog.put(&u, indexed("z.zip!/m.txt", "hm", 1, Some("z.zip")));
        // Held by two files, stored naming another: the locators are fixed.
        catalog.put(&u, indexed("d1.txt", "hd", 1, None));
        catalog.put(&u, indexed("d2.txt", "hd", 1, None));
        store.upsert(&u, &chunks("hd", 1, "old.txt", 20)).unwrap();
        // The right file, stored without the tags it was given since: the tags are fixed.
        catalog.put(
            &u,
            indexed("t.txt", "ht", 1, None).with_tags(vec!["team=ops".into()]),
        );
        store.upsert(&u, &chunks("ht", 1, "t.txt", 25)).unwrap();
        // An empty file holds no points and needs none.
        catalog.put(&u, indexed("empty.txt", "he", 0, None));
        // A failed file holds nothing either.
        catalog.put(
            &u,
            CatalogEntry::unindexed("bad.pdf", None, "hf", 1, 1, EntryStatus::Failed, "broken"),
        );
        // A failed file's card, stored: kept.
        let mut carded =
            CatalogEntry::unindexed("card.pdf", None, "hc", 1, 1, EntryStatus::Failed, "broken");
        carded.chunks = 1;
        catalog.put(&u, carded);
        let card = crate::entry_card_key("card.pdf");
        store.upsert(&u, &chunks(&card, 1, "card.pdf", 50)).unwrap();
        // A skipped file whose card is missing: marked so (the next run writes it).
        let mut lost =
            CatalogEntry::without_content("lost.bin", None, None, EntryStatus::Skipped, "too big");
        lost.chunks = 1;
        catalog.put(&u, lost);
        // An archive with its card, forgotten with its member: its card is deleted.
        let mut archive = CatalogEntry::container("y.zip", "hy", 1, 1, "zip", Vec::new());
        archive.chunks = 1;
        catalog.put(&u, archive);
        catalog.put(&u, indexed("y.zip!/n.txt", "hn", 1, Some("y.zip")));
        let archive_card = crate::entry_card_key("y.zip");
        store
            .upsert(&u, &chunks(&archive_card, 1, "y.zip", 60))
            .unwrap();
        // Stale: points no entry holds, in a known scope and in a scope the catalog lacks.
        store.upsert(&u, &chunks("stale", 2, "x.txt", 30)).unwrap();
        store.upsert(&gone, &chunks("old", 1, "y.txt", 40)).unwrap();

        let report = repair(&catalog, store).unwrap();
        assert_eq!(
            report,
            RepairReport {
                entries_forgotten: 3,
                stale_contents_deleted: 3,
                locators_fixed: 2,
                content_indexes_deleted: 0,
                cards_missing: 1,
            }
        );
        let lost = catalog.get(&u, "lost.bin").unwrap();
        assert!(lost.wants_card(), "{lost:?}");
        let expected_store = vec![
            (u.key(), card.clone(), vec![0], vec!["card.pdf".to_string()]),
            (
                u.key(),
                "ha".to_string(),
                vec![0, 1],
                vec!["a.txt".to_string()],
            ),
            (
                u.key(),
                "hd".into(),
                vec![0],
                vec!["d1.txt".into(), "d2.txt".into()],
            ),
            (u.key(), "ht".into(), vec![0], vec!["t.txt".into()]),
        ];
        assert_eq!(inventory(store), expected_store);
        let tags = &store.inventory().unwrap()[&(u.key(), "ht".to_string())].tags;
        assert_eq!(tags, &["team=ops"]);
        let expected_catalog = [
            "a.txt",
            "bad.pdf",
            "card.pdf",
            "d1.txt",
            "d2.txt",
            "empty.txt",
            "lost.bin",
            "t.txt",
        ];
        assert_eq!(locators(&catalog, &u), expected_catalog);
        // The repaired catalog was saved.
        assert_eq!(
            locators(&SqliteCatalog::open(dir).unwrap(), &u),
            expected_catalog
        );

        // Nothing left to repair.
        assert_eq!(repair(&catalog, store).unwrap(), RepairReport::default());
        assert_eq!(inventory(store), expected_store);
        assert_eq!(locators(&catalog, &u), expected_catalog);
    }

    #[test]
    fn the_marker_is_present_from_set_until_clear() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!DirtyMarker::present(dir.path()));
        let marker = DirtyMarker::set(dir.path()).unwrap();
        assert!(DirtyMarker::present(dir.path()));
        marker.clear().unwrap();
        assert!(!DirtyMarker::present(dir.path()));
    }
}
