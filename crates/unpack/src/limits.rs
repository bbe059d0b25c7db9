//! The hard limits of one container tree: the unpacker's own settings, composed into
//! `ingest::Config` as its `limits`.

/// Hard limits applied to one container tree (a top-level archive and everything nested in
/// it). Sizes are counted on bytes actually decompressed, never on declared sizes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Decompressed bytes, summed over the whole tree.
    pub max_total_bytes: u64,
    /// Members, summed over the whole tree: every entry counts (links, devices, duplicate
    /// names, encrypted and overlapping entries too). The member past it ends the walk and
    /// its archive's line says `limit: file-count`, so a tree yields at most `max_files + 1`
    /// ledger lines.
    pub max_files: u64,
    /// Nesting depth: a member of a member of a top-level archive is at depth 2.
    pub max_depth: usize,
    /// Decompressed bytes per byte of container, over a whole container.
    pub max_ratio: u64,
    /// Output below this many bytes is never flagged by the ratio check (tiny files compress
    /// extremely well without being bombs).
    pub ratio_grace_bytes: u64,
    /// Largest single file that is read for extraction.
    pub max_file_bytes: u64,
    /// Longest name of a member inside an archive (its path in the archive), in bytes. A
    /// longer one is `skipped` (`limit: name-length`) under a shortened name: every
    /// ledger line, catalog entry and stored point names its file, so a name's length is
    /// work and memory for each of them.
    pub max_member_name_bytes: usize,
    /// Most folders a member's path inside an archive may have (`a/b/c.txt` has 2). A
    /// deeper one is `skipped` (`limit: path-depth`): a search can filter by any folder
    /// above a file, so every folder is stored with each of its chunks.
    pub max_member_folders: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_total_bytes: 500 * 1024 * 1024,
            max_files: 10_000,
            max_depth: 5,
            max_ratio: 250,
            ratio_grace_bytes: 4 * 1024 * 1024,
            max_file_bytes: 256 * 1024 * 1024,
            max_member_name_bytes: 1024,
            max_member_folders: 64,
        }
    }
}
