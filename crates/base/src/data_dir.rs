//! [`DataDir`]: the data directory, the one place that knows its layout (what lies where,
//! under which name), its modes, and which of its parts a repair reconciles. Every other
//! module asks it for a path; none joins a name onto the directory itself.
//!
//! ```text
//! DATA_DIR/                       owner-only (0700 folders, 0600 files: crate::perms)
//!   catalog.sqlite(-wal,-shm)     the embedded catalog            (index/catalog.rs)
//!   catalog.json.migrated         a catalog of the earlier layout, after its move
//!   content/<hash>.json|.pack     content indexes, object packs   (index/catalog.rs)
//!   shard/                        the embedded Qdrant Edge shard  (index/edge.rs)
//!   store, node                   which store the catalog describes, this node's name
//!   embedding-model               the model variant the index is embedded with
//!   embedding-recipe.json         how its chunks and cards were made
//!   run-in-progress               set while a run writes: the next start repairs
//!   partial/                      vectors of contents being embedded (resume)
//!   uploads/jobs|spool|kept/      the upload queue's records, bodies, kept archives
//!   sources/spool/<pid>-<n>/      objects of remote sources being read, per sync (sources/mod.rs)
//!   workflows.sqlite, workflows/  workflow records, their legacy folders
//!   daemon.sock                   `ingest watch`'s socket
//! ```
//!
//! **What repair reconciles** (`index/repair.rs`, run when `run-in-progress` is found): the
//! catalog against the store (entries without their points are forgotten, points without
//! an entry deleted, holders rewritten), and `content/` against the catalog (content
//! indexes no scope holds are deleted). `partial/` is swept by age; `uploads/` is
//! reconciled by the queue when it starts (jobs not ended are queued again).

use std::path::{Path, PathBuf};

use crate::error::Result;

/// A data directory (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// The data directory at `root` (nothing is touched).
    pub fn at(root: impl Into<PathBuf>) -> DataDir {
        DataDir { root: root.into() }
    }

    /// Create it if needed and make it, and everything in it, owner-only.
    pub fn prepare(&self) -> Result<()> {
        crate::perms::prepare_data_dir(&self.root)
    }

    /// The folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether it holds an index (or a daemon serving one): something only an index makes.
    pub fn holds_index(&self) -> bool {
        self.root.is_dir()
            && [
                self.catalog(),
                self.legacy_catalog(),
                self.model_record(),
                self.recipe_record(),
                self.store_record(),
                self.shard(),
            ]
            .iter()
            .any(|p| p.exists())
    }

    /// The embedded catalog's database.
    pub fn catalog(&self) -> PathBuf {
        self.root.join("catalog.sqlite")
    }

    /// The catalog of the earlier layout (one JSON file), moved into the database on open.
    pub fn legacy_catalog(&self) -> PathBuf {
        self.root.join("catalog.json")
    }

    /// The folder of content indexes and object packs.
    pub fn contents(&self) -> PathBuf {
        self.root.join("content")
    }

    /// The embedded Qdrant Edge shard.
    pub fn shard(&self) -> PathBuf {
        self.root.join("shard")
    }

    /// The record of the store the catalog describes.
    pub fn store_record(&self) -> PathBuf {
        self.root.join("store")
    }

    /// This node's name (writing a shared store).
    pub fn node_record(&self) -> PathBuf {
        self.root.join("node")
    }

    /// The record of the model variant the index is embedded with.
    pub fn model_record(&self) -> PathBuf {
        self.root.join("embedding-model")
    }

    /// The record of the recipe its chunks and cards were made with.
    pub fn recipe_record(&self) -> PathBuf {
        self.root.join("embedding-recipe.json")
    }

    /// Present while a run writes (see the index's repair).
    pub fn run_marker(&self) -> PathBuf {
        self.root.join("run-in-progress")
    }

    /// Vectors of contents being embedded, kept so an interrupted run goes on from there.
    pub fn partial(&self) -> PathBuf {
        self.root.join("partial")
    }

    /// The upload queue's folder.
    pub fn uploads(&self) -> PathBuf {
        self.root.join("uploads")
    }

    /// The upload queue's job records.
    pub fn upload_jobs(&self) -> PathBuf {
        self.uploads().join("jobs")
    }

    /// Upload bodies received and not yet ingested.
    pub fn upload_spool(&self) -> PathBuf {
        self.uploads().join("spool")
    }

    /// Objects of remote sources downloaded for one sync, each deleted once read.
    pub fn source_spool(&self) -> PathBuf {
        self.root.join("sources").join("spool")
    }

    /// Uploaded archives kept for on-demand extraction.
    pub fn kept_uploads(&self) -> PathBuf {
        self.uploads().join("kept")
    }

    /// Uploaded archives kept for on-demand extraction by the nodes of a shared catalog: in
    /// their shared spool folder `spool` (`spool_dir`), so that every node reads them.
    pub fn kept_in_shared_spool(spool: &Path) -> PathBuf {
        spool.join("kept")
    }

    /// The workflows' database.
    pub fn workflows_db(&self) -> PathBuf {
        self.root.join("workflows.sqlite")
    }

    /// The workflows' folders of the earlier layout (one record file each).
    pub fn legacy_workflows(&self) -> PathBuf {
        self.root.join("workflows")
    }

    /// The socket `ingest watch` answers on.
    pub fn daemon_socket(&self) -> PathBuf {
        self.root.join("daemon.sock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_is_a_folder_holding_what_only_an_index_makes() {
        let dir = tempfile::tempdir().unwrap();
        let data = DataDir::at(dir.path());
        assert!(!DataDir::at(dir.path().join("nope")).holds_index());
        assert!(!data.holds_index(), "an empty folder is no index");
        std::fs::write(data.catalog(), "").unwrap();
        assert!(data.holds_index());
        std::fs::remove_file(data.catalog()).unwrap();
        std::fs::write(data.legacy_catalog(), "{}").unwrap();
        assert!(data.holds_index(), "a catalog from before the database");
    }

    #[test]
    fn every_part_lies_inside_the_folder_under_its_own_name() {
        let data = DataDir::at("/d");
        let parts = [
            data.catalog(),
            data.legacy_catalog(),
            data.contents(),
            data.shard(),
            data.store_record(),
            data.node_record(),
            data.model_record(),
            data.recipe_record(),
            data.run_marker(),
            data.partial(),
            data.uploads(),
            data.upload_jobs(),
            data.upload_spool(),
            data.kept_uploads(),
            data.workflows_db(),
            data.legacy_workflows(),
            data.daemon_socket(),
        ];
        let names: std::collections::HashSet<_> = parts.iter().collect();
        assert_eq!(names.len(), parts.len());
        assert!(parts
            .iter()
            .all(|p| p.starts_with("/d") && p != Path::new("/d")));
    }
}
