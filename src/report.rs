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
    pub locator: String,
    pub status: FileStatus,
    pub reason: Option<String>,
    /// Chunks the file's content has in the index.
    pub chunks: u32,
    /// Content hash (blake3, hex), when the bytes were read.
    pub hash: Option<String>,
    /// The line is an archive's own (its members have lines of their own).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archive: bool,
}

/// Busy seconds per stage (summed over the threads of a stage).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageSeconds {
    pub unpack: f64,
    pub extract: f64,
    pub chunk: f64,
    pub embed: f64,
    pub store: f64,
    /// Wall-clock seconds of the whole run.
    pub total: f64,
}

/// Totals of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub files: u64,
    pub indexed: u64,
    pub unchanged: u64,
    pub skipped: u64,
    pub failed: u64,
    pub duplicate: u64,
    pub removed: u64,
    #[serde(default)]
    pub ignored: u64,
    /// Lines that are archives (the other lines are files).
    pub archives: u64,
    /// Chunks embedded in this run (content already indexed elsewhere is not embedded again).
    pub chunks_embedded: u64,
    pub seconds: StageSeconds,
}

impl Summary {
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
    pub files: Vec<FileReport>,
    pub summary: Summary,
}

/// Seconds since the Unix epoch (0 if the clock is before it): the time stamps of catalog
/// entries and runs.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
