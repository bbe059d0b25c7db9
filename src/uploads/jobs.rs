//! Jobs: what an upload or a delete is, where it stands, and its record on disk.
//!
//! A job's record (`uploads/jobs/ID.json`) is written durably before the job is accepted and
//! again when it ends: a job whose record is not final when the service starts is queued
//! again (its spooled body is kept until then), so nothing accepted is lost. The stages in
//! between (`extracted`, `embedding`) are kept in memory only: after a restart the job starts
//! over and passes them again.
//!
//! With a catalog shared by many nodes the record is the job's row in the catalog instead
//! (its stages written there too, as they change), and the catalog is the queue: see
//! [`super::runner`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use extractors::Scope;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::report::{FileReport, FileStatus};
use crate::DataDir;

/// A job's id: the submission time (11 hex digits of milliseconds, so ids sort by
/// submission) and 128 random bits from the operating system (32 hex digits), so an id
/// cannot be guessed from another. Ids of earlier versions (16 hex digits) still parse.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobId(String);

/// Hex digits of a [`JobId`], and of an id written before they carried random bits.
const JOB_ID_LEN: usize = 43;
const OLD_JOB_ID_LEN: usize = 16;

impl JobId {
    /// A new id: milliseconds since the epoch, then 128 random bits.
    pub(crate) fn new() -> Self {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        JobId(format!(
            "{:011x}{:032x}",
            ms & 0xfff_ffff_ffff,
            crate::access::random_u128()
        ))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for JobId {
    type Err = Error;

    /// Parse an id as [`JobId`]'s `Display` writes it (43 hex digits; 16 for an id of an
    /// earlier version).
    fn from_str(s: &str) -> Result<Self> {
        if matches!(s.len(), JOB_ID_LEN | OLD_JOB_ID_LEN)
            && s.bytes().all(|b| b.is_ascii_hexdigit())
        {
            Ok(JobId(s.to_ascii_lowercase()))
        } else {
            Err(Error::NotFound("no such job".into()))
        }
    }
}

/// What a job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    /// Index an uploaded file (an archive with its members).
    Upload,
    /// Remove a file (an archive with its members) from the index.
    Delete,
}

/// Where a job, or one file of it, stands: `pending → extracted → embedding → indexed`, or
/// `failed` with a reason; a delete ends `deleted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    /// Accepted, waiting or being unpacked and parsed.
    Pending,
    /// Parsed and chunked, waiting for the model.
    Extracted,
    /// Being embedded.
    Embedding,
    /// Searchable (for an archive: the members that could be read are).
    Indexed,
    /// Nothing of it could be indexed; the reason says why.
    Failed,
    /// Removed from the index (a delete job).
    Deleted,
}

impl JobState {
    /// Whether the job is over.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            JobState::Indexed | JobState::Failed | JobState::Deleted
        )
    }

    /// The lowercase word used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Extracted => "extracted",
            JobState::Embedding => "embedding",
            JobState::Indexed => "indexed",
            JobState::Failed => "failed",
            JobState::Deleted => "deleted",
        }
    }
}

/// One file of a job: an upload's own line, and one per archive member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLine {
    /// The file's locator (`upload.zip!/docs/a.pdf`).
    pub locator: String,
    /// `pending`, `extracted`, `embedding`, or the ledger's word once decided: `indexed`,
    /// `unchanged` (the same bytes were indexed under this name already), `duplicate`,
    /// `skipped`, `failed`, `removed`.
    pub status: String,
    /// Why (skipped, failed, duplicate) or what (an archive's member count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Chunks it has in the index.
    pub chunks: u32,
    /// The line is an archive's own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub archive: bool,
}

impl From<&FileReport> for FileLine {
    fn from(r: &FileReport) -> Self {
        FileLine {
            locator: r.locator.clone(),
            status: r.status.as_str().to_string(),
            reason: r.reason.clone(),
            chunks: r.chunks,
            archive: r.archive,
        }
    }
}

/// A job as its submitter sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStatus {
    /// The job's id.
    pub id: JobId,
    /// Upload or delete.
    pub kind: JobKind,
    /// The uploaded file's locator (its name), or the locator deleted.
    pub locator: String,
    /// Where it stands.
    pub state: JobState,
    /// Why it failed: the first file that failed or was skipped, with its reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The upload's size in bytes.
    pub bytes: u64,
    /// The upload's blake3 hash (hex), computed while it was received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Seconds since the Unix epoch when it was accepted.
    pub submitted_at: f64,
    /// When it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<f64>,
    /// Chunks its files have in the index.
    pub chunks: u64,
    /// One line per file (the upload itself, and each archive member), in locator order; of
    /// an ended job at most [`MAX_ENDED_LINES`], the files that are not indexed first.
    pub files: Vec<FileLine>,
    /// Lines of the ended job not kept in `files` (`GET /v1/files/status` of the upload
    /// lists every member).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub files_omitted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The most lines an ended job keeps: its record lives for days, and an archive may hold
/// ten thousand members.
pub const MAX_ENDED_LINES: usize = 1000;

impl JobStatus {
    /// A job just accepted.
    pub(crate) fn accepted(
        id: JobId,
        kind: JobKind,
        locator: &str,
        bytes: u64,
        hash: Option<String>,
    ) -> Self {
        JobStatus {
            id,
            kind,
            locator: locator.to_string(),
            state: JobState::Pending,
            reason: None,
            bytes,
            hash,
            submitted_at: now(),
            finished_at: None,
            chunks: 0,
            files: Vec::new(),
            files_omitted: 0,
        }
    }
}

/// A job on disk: its status and what is needed to run it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JobRecord {
    pub status: JobStatus,
    pub scope: Scope,
    /// Limits for this upload's container tree.
    #[serde(default)]
    pub limits: Option<crate::Limits>,
    /// User tags (`key=value`, sorted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// A job's lines while it runs: ledger lines and the stages of files without one yet.
#[derive(Debug, Default)]
pub(crate) struct JobLines {
    pub lines: BTreeMap<String, FileLine>,
}

impl JobLines {
    pub fn stage(&mut self, locator: &str, state: JobState) {
        let line = self
            .lines
            .entry(locator.to_string())
            .or_insert_with(|| FileLine {
                locator: locator.to_string(),
                status: String::new(),
                reason: None,
                chunks: 0,
                archive: false,
            });
        line.status = state.as_str().to_string();
    }

    pub fn file(&mut self, report: &FileReport) {
        self.lines
            .insert(report.locator.clone(), FileLine::from(report));
    }

    /// The job's state while it runs: the least advanced of its files.
    pub fn running_state(&self) -> JobState {
        let has = |s: JobState| self.lines.values().any(|l| l.status == s.as_str());
        if self.lines.is_empty() || has(JobState::Pending) {
            JobState::Pending
        } else if has(JobState::Extracted) {
            JobState::Extracted
        } else if has(JobState::Embedding) {
            JobState::Embedding
        } else {
            JobState::Pending
        }
    }

    /// The job's end, from its lines: an upload is `indexed` when some file of it is
    /// searchable or nothing in it went wrong (an empty archive), else `failed` with the
    /// first problem as the reason; a delete is `deleted`.
    pub fn finish(self, status: &mut JobStatus) {
        let files: Vec<FileLine> = self.lines.into_values().collect();
        status.chunks = files
            .iter()
            .filter(|l| !l.archive)
            .map(|l| u64::from(l.chunks))
            .sum();
        let searchable = |l: &FileLine| {
            !l.archive
                && [
                    FileStatus::Indexed,
                    FileStatus::Unchanged,
                    FileStatus::Duplicate,
                ]
                .iter()
                .any(|s| l.status == s.as_str())
        };
        let problem = files.iter().find(|l| {
            l.status == FileStatus::Failed.as_str() || l.status == FileStatus::Skipped.as_str()
        });
        status.state = match status.kind {
            JobKind::Delete => JobState::Deleted,
            JobKind::Upload if files.iter().any(searchable) || problem.is_none() => {
                JobState::Indexed
            }
            JobKind::Upload => JobState::Failed,
        };
        let describe = |l: &FileLine| match &l.reason {
            Some(r) => format!("{}: {} ({r})", l.locator, l.status),
            None => format!("{}: {}", l.locator, l.status),
        };
        status.reason = match (status.state, problem) {
            (JobState::Failed, Some(l)) => Some(describe(l)),
            (JobState::Indexed, Some(l)) => {
                let all = files.iter().filter(|l| !l.archive).count();
                let unindexed = all.saturating_sub(files.iter().filter(|l| searchable(l)).count());
                Some(format!(
                    "{unindexed} of {all} files not indexed; the first: {}",
                    describe(l)
                ))
            }
            _ => None,
        };
        let mut files = files;
        if files.len() > MAX_ENDED_LINES {
            // Keep what went wrong first (stable: locator order within each group).
            files.sort_by_key(|l| searchable(l) || l.archive);
            status.files_omitted = (files.len() - MAX_ENDED_LINES) as u64;
            files.truncate(MAX_ENDED_LINES);
            files.sort_by(|a, b| a.locator.cmp(&b.locator));
        }
        status.files = files;
        status.finished_at = Some(now());
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The folder of job records.
pub(crate) fn records_dir(data: &DataDir) -> PathBuf {
    data.upload_jobs()
}

/// Write `record` durably: where every node reads it when the catalog is the queue of many
/// nodes ([`crate::index::CatalogJobs::shares_jobs`]: its row there is the record), else in the
/// data dir (a temporary file renamed over the old one, both synced). `node` is the node
/// running the job (`None` when accepting it): a shared record is written only while that
/// node holds the job; `Ok(false)` when another node took it over (or it has ended).
pub(crate) fn save(
    data: &DataDir,
    catalog: &dyn crate::index::Catalog,
    record: &JobRecord,
    node: Option<&str>,
) -> Result<bool> {
    if !catalog.shares_jobs() {
        return save_file(data, record).map(|()| true);
    }
    let json = serde_json::to_string(record).map_err(|e| Error::Pipeline(e.to_string()))?;
    let scope = record.scope.key();
    let name_key = name_key(&scope, &record.status.locator);
    catalog.put_job(&crate::index::JobRow {
        id: record.status.id.as_str(),
        scope: &scope,
        name_key: &name_key,
        record: &json,
        ended_at: record.status.finished_at,
        node,
    })
}

/// What orders the jobs of one name in a shared queue: a hash of the scope's key and the
/// top-level name the job runs on (the name itself is data and stays out of the key).
pub(crate) fn name_key(scope_key: &str, locator: &str) -> String {
    let mut h = blake3::Hasher::new();
    h.update(scope_key.as_bytes());
    h.update(&[0]);
    h.update(super::runner::top_name(locator).as_bytes());
    h.finalize().to_hex().to_string()
}

/// The record a shared catalog keeps of job `id`, if any.
pub(crate) fn shared_record(catalog: &dyn crate::index::Catalog, id: &JobId) -> Option<JobRecord> {
    serde_json::from_str(&catalog.job(id.as_str())?).ok()
}

/// Write `record`'s file in the data dir.
fn save_file(data: &DataDir, record: &JobRecord) -> Result<()> {
    let dir = records_dir(data);
    let path = dir.join(format!("{}.json", record.status.id));
    let tmp = path.with_extension("json.tmp");
    let bytes = serde_json::to_vec(record).map_err(|e| Error::Catalog {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    crate::perms::write_file(&tmp, &bytes)?;
    sync_file(&tmp)?;
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    sync_file(&dir)
}

/// fsync a file or a folder.
pub(crate) fn sync_file(path: &Path) -> Result<()> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(path, e))
}

/// Every record on disk, oldest first. Unreadable records are logged and skipped.
pub(crate) fn load_all(data: &DataDir) -> Result<Vec<JobRecord>> {
    let dir = records_dir(data);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut records = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&dir, e))?.path();
        if path.extension().is_some_and(|e| e == "tmp") {
            let _ = std::fs::remove_file(&path);
            continue;
        }
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<JobRecord>(&b).map_err(|e| e.to_string()))
        {
            Ok(r) => records.push(r),
            Err(e) => tracing::warn!("job record {}: {e}; left out", path.display()),
        }
    }
    records.sort_by(|a, b| a.status.id.cmp(&b.status.id));
    Ok(records)
}

/// Delete a job's record.
pub(crate) fn forget(data: &DataDir, id: &JobId) {
    let _ = std::fs::remove_file(records_dir(data).join(format!("{id}.json")));
}
