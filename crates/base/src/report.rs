//! Per-file reports and the run summary: what the CLI prints and the library returns.

use serde::{Deserialize, Serialize};

/// The outcome for one file or archive member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    /// Extracted, embedded and stored in this run (or its identical content already was).
    Indexed,
    /// Same bytes as last time: nothing was done.
    Unchanged,
    /// Not read: a limit, a link, a special or encrypted file.
    Skipped,
    /// Could not be read or extracted.
    Failed,
    /// The same bytes as another file in the index (named in the reason): found under both
    /// names, extracted and embedded once.
    Duplicate,
    /// No longer there (deleted, renamed, or gone from its archive): its points are gone too,
    /// or re-pointed at the files that still hold the same bytes.
    Removed,
    /// Left out by the walk's rules, not by a problem: a hidden file or folder (name starting
    /// with `.`; `--hidden` ingests them). Nothing under it was read. Not an error.
    Ignored,
}

impl FileStatus {
    /// The lowercase word used in JSON and on the terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Indexed => "indexed",
            FileStatus::Unchanged => "unchanged",
            FileStatus::Skipped => "skipped",
            FileStatus::Failed => "failed",
            FileStatus::Duplicate => "duplicate",
            FileStatus::Removed => "removed",
            FileStatus::Ignored => "ignored",
        }
    }
}

/// One line of the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    /// Where the file is: a path, or a path into containers.
    pub locator: String,
    /// What happened to it.
    pub status: FileStatus,
    /// Why (for skipped, failed, duplicate, ignored) or what (an archive's member count).
    pub reason: Option<String>,
    /// Chunks the file's content has in the index.
    pub chunks: u32,
    /// Content hash (blake3, hex), when the bytes were read.
    pub hash: Option<String>,
    /// The line is an archive's own (its members have lines of their own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archive: bool,
}

impl FileReport {
    /// A line for `locator` with no reason, chunks or hash; the setters below add them.
    pub fn new(locator: impl Into<String>, status: FileStatus) -> Self {
        FileReport {
            locator: locator.into(),
            status,
            reason: None,
            chunks: 0,
            hash: None,
            archive: false,
        }
    }

    pub fn reason(mut self, reason: Option<String>) -> Self {
        self.reason = reason;
        self
    }

    pub fn chunks(mut self, chunks: u32) -> Self {
        self.chunks = chunks;
        self
    }

    pub fn hash(mut self, hash: Option<String>) -> Self {
        self.hash = hash;
        self
    }

    /// Mark the line as an archive's own.
    pub fn archive(mut self, archive: bool) -> Self {
        self.archive = archive;
        self
    }
}

/// Busy seconds per stage (summed over the threads of a stage).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageSeconds {
    /// Walking folders and unpacking containers.
    pub unpack: f64,
    /// Parsing documents (in workers).
    pub extract: f64,
    /// Cutting text into chunks.
    pub chunk: f64,
    /// Computing embeddings.
    pub embed: f64,
    /// Writing to the index.
    pub store: f64,
    /// Building search structures (HNSW) for the index's grown segments, after the run.
    #[serde(default)]
    pub optimize: f64,
    /// Wall-clock seconds of the whole run.
    pub total: f64,
}

/// Totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Ledger lines: files and archives.
    pub files: u64,
    /// Lines whose content was indexed in this run.
    pub indexed: u64,
    /// Lines found unchanged (nothing read or embedded again).
    pub unchanged: u64,
    /// Lines skipped by a limit, a link, a device, an encrypted entry…
    pub skipped: u64,
    /// Lines that failed, with a reason.
    pub failed: u64,
    /// Lines whose bytes were already indexed under another name.
    pub duplicate: u64,
    /// Lines of files gone from their folder or archive, removed from the index.
    pub removed: u64,
    #[serde(default)]
    /// Hidden entries not read.
    pub ignored: u64,
    /// Lines that are archives (the other lines are files).
    pub archives: u64,
    /// Chunks embedded in this run (content already indexed elsewhere is not embedded again).
    pub chunks_embedded: u64,
    /// Chunks whose text (with its contextual header) was embedded before in this run: the
    /// vector taken again instead of a model run (not counted in `chunks_embedded`).
    #[serde(default)]
    pub chunks_reused: u64,
    /// Model tokens in those chunks (special tokens excluded): with `seconds.embed`, the
    /// embedding throughput.
    #[serde(default)]
    pub tokens_embedded: u64,
    /// Of those chunks, the ones in other languages than English that the multilingual model
    /// embedded too (a second vector each; see `ingest::Config::multilingual`).
    #[serde(default)]
    pub chunks_multilingual: u64,
    /// Cards stored for files without content of their own (failed, skipped) and archives,
    /// so that they are found by their names (not counted in `chunks_embedded`).
    #[serde(default)]
    pub entry_cards: u64,
    /// Busy seconds per stage.
    pub seconds: StageSeconds,
    /// The model that embedded this run's chunks, its runtime and the precision it computed
    /// in (empty when nothing was embedded).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub model: String,
}

impl Summary {
    /// Count one ledger line.
    pub fn add(&mut self, r: &FileReport) {
        self.files += 1;
        match r.status {
            FileStatus::Indexed => self.indexed += 1,
            FileStatus::Unchanged => self.unchanged += 1,
            FileStatus::Skipped => self.skipped += 1,
            FileStatus::Failed => self.failed += 1,
            FileStatus::Duplicate => self.duplicate += 1,
            FileStatus::Removed => self.removed += 1,
            FileStatus::Ignored => self.ignored += 1,
        }
        if r.archive {
            self.archives += 1;
        }
    }

    /// Whether every file went through (nothing failed or skipped; ignored is by choice).
    pub fn all_ok(&self) -> bool {
        self.failed == 0 && self.skipped == 0
    }
}

/// Everything a run produced.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IngestReport {
    /// Every ledger line, in locator order.
    pub files: Vec<FileReport>,
    /// The counts of those lines.
    pub summary: Summary,
}

/// Seconds since the Unix epoch (0 if the clock is before it): the time stamps of catalog
/// entries and runs.
pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
