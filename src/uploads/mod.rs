//! Uploads: files handed over by a caller that must not wait for them to be indexed.
//!
//! [`Uploads::submit`] streams a body to disk (hashed on the way, never whole in memory),
//! records the job durably and returns its [`JobId`] at once; a scope's jobs then go through
//! one pipeline run that takes each as it comes ([`runner`]), several at a time, so a small
//! upload is not stuck behind a large one. [`Uploads::job`] and [`Uploads::file_status`] say
//! where a job or a file stands (`pending → extracted → embedding → indexed | failed`, with a
//! line per archive member), [`Uploads::delete`] removes a file and everything derived from
//! it. Jobs survive a crash or a restart: a job not ended is queued again when the data
//! directory is opened next.
//!
//! ```no_run
//! use std::sync::Arc;
//! use ingest::{Config, Ingestor, Scope, UploadOptions, Uploads, UploadsConfig};
//!
//! # fn main() -> Result<(), ingest::Error> {
//! let ingestor = Arc::new(Ingestor::open(Config::new("/var/lib/ingest"))?);
//! let uploads = Uploads::start(Arc::clone(&ingestor), UploadsConfig::default())?;
//! let scope = Scope::user("alice");
//! let body = std::fs::File::open("report.zip").unwrap();
//! let job = uploads.submit("report.zip", body, &scope, &UploadOptions::default())?;
//! let status = uploads.wait(&job, &scope, std::time::Duration::from_secs(600));
//! println!("{:?}", status.map(|s| s.state));
//! uploads.shutdown();
//! # Ok(())
//! # }
//! ```

mod jobs;
mod metrics;
mod runner;
mod spool;

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use extractors::Scope;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::index::EntryStatus;
use crate::ingestor::Ingestor;
use crate::lock;

pub use jobs::{FileLine, JobId, JobKind, JobState, JobStatus};

pub use crate::names::{upload_name, MAX_NAME_BYTES, MAX_NAME_SEGMENTS, MAX_SEGMENT_BYTES};
use jobs::JobRecord;
pub(crate) use runner::top_name;
use runner::{Job, Shared, State};
pub(crate) use spool::kept_path;

/// How the upload queue is bounded. Every bound refuses work instead of queueing it
/// without end: [`Error::TooLarge`], [`Error::Busy`] or [`Error::QueueFull`] (with a time to
/// retry after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadsConfig {
    /// The largest upload, in bytes.
    pub max_upload_bytes: u64,
    /// Upload bodies received at once; one more is refused as busy.
    pub max_receiving: usize,
    /// Upload bodies received at once for one scope (user, feature instance, mandate); one
    /// more is refused as busy, so one caller cannot take every place.
    pub max_receiving_per_scope: usize,
    /// Jobs accepted and not ended (queued or running); one more is refused as the queue
    /// being full.
    pub max_open_jobs: usize,
    /// Jobs accepted and not ended for one scope; one more is refused as busy.
    pub max_open_jobs_per_scope: usize,
    /// Scopes whose pipeline runs go at once (each run is a set of pipeline threads).
    pub max_scope_runs: usize,
    /// How long the status of an ended job is kept (its files stay in the index).
    pub keep_ended: Duration,
    /// Bytes of uploads kept, per key (principal: user, feature instance, mandate): archives
    /// whose members a limit left out (`extract_container_item` extracts them on demand),
    /// PDFs and pictures (`render_page` renders them). A key's oldest are evicted past it
    /// (never another key's), and a kept upload is deleted with it. 0 keeps none.
    pub max_kept_bytes: u64,
    /// Catalog entries (files, archives, members; shared or not) one scope may hold; an
    /// upload past it is refused ([`Error::Quota`]) until files are deleted.
    pub max_files_per_scope: usize,
    /// Limits for every upload's container tree (an upload's own
    /// [`UploadOptions::limits`] win); `None`: the ingestor's.
    pub limits: Option<crate::Limits>,
    /// Where upload bodies wait for their jobs: a folder every node of a shared catalog
    /// reads and writes (an NFS or SMB mount), required with one; `None`: the data dir's.
    pub spool_dir: Option<PathBuf>,
    /// How long a node's claim on a job of a shared queue lasts without being renewed (it
    /// renews every quarter of it): a node that died gives its jobs to the others this long
    /// after its last renewal.
    pub job_lease: Duration,
}

impl Default for UploadsConfig {
    fn default() -> Self {
        UploadsConfig {
            max_upload_bytes: 1 << 30,
            max_receiving: 16,
            max_receiving_per_scope: 4,
            max_open_jobs: 1000,
            max_open_jobs_per_scope: 250,
            max_scope_runs: 2,
            keep_ended: Duration::from_secs(7 * 24 * 3600),
            max_kept_bytes: 1 << 30,
            max_files_per_scope: 500_000,
            limits: None,
            spool_dir: None,
            job_lease: Duration::from_secs(30),
        }
    }
}

/// Per-upload choices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UploadOptions {
    /// Index it as shared within the scope's mandate (visible to every user of it).
    pub shared: bool,
    /// Limits for this upload's container tree instead of the configured ones.
    pub limits: Option<crate::Limits>,
    /// A smaller size limit than [`UploadsConfig::max_upload_bytes`] for this upload.
    pub max_bytes: Option<u64>,
    /// User metadata: tags stored with every chunk of the file (and of every member of an
    /// archive), which a search filter can require ([`crate::SearchFilter::tags`], as
    /// `key=value`). Keys are 1–64 of `A-Z a-z 0-9 _ - .`; values at most 256 bytes without
    /// control characters; at most 32 tags. An upload of the same name replaces the tags.
    pub tags: BTreeMap<String, String>,
}

/// The most tags one upload carries.
pub const MAX_TAGS: usize = 32;

/// `tags` as chunks carry them and filters name them: `key=value`, sorted by key. Refused
/// with [`Error::Upload`] when a key or value breaks the rules of [`UploadOptions::tags`].
pub fn encode_tags(tags: &BTreeMap<String, String>) -> Result<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(Error::Upload(format!(
            "{} tags: at most {MAX_TAGS} are allowed",
            tags.len()
        )));
    }
    tags.iter()
        .map(|(key, value)| {
            let key_ok = (1..=64).contains(&key.len())
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !key_ok {
                return Err(Error::Upload(format!(
                    "bad tag key {key:?}: 1-64 characters of A-Z a-z 0-9 _ - ."
                )));
            }
            if value.len() > 256 || value.chars().any(char::is_control) {
                return Err(Error::Upload(format!(
                    "bad value for tag {key:?}: at most 256 bytes, no control characters"
                )));
            }
            Ok(format!("{key}={value}"))
        })
        .collect()
}

/// Where a file stands: a file of a job not ended, or an entry of the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileState {
    /// The file's own line: locator, `pending`, `extracted`, `embedding`, `indexed`,
    /// `failed` or `skipped`, reason, chunks, whether it is an archive.
    #[serde(flatten)]
    pub file: FileLine,
    /// The job working on it, while one is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobId>,
    /// Whose file it is, when it is not the caller's own: another user's shared file, or the
    /// caller's in another feature instance (`user`, `user/instance`, `… (shared)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// An archive's members, at any depth.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<FileLine>,
}

/// The upload queue of one [`Ingestor`]: submit, follow and delete uploads. `Send + Sync`;
/// one per data directory (it is the directory's writer, like the watch daemon).
pub struct Uploads {
    shared: Arc<Shared>,
    receiving: Arc<Mutex<ReceivingCounts>>,
}

impl std::fmt::Debug for Uploads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Uploads")
            .field("data_dir", &self.shared.data)
            .finish()
    }
}

/// Bodies being received: in all, and per scope (its key without the shared flag).
#[derive(Debug, Default)]
struct ReceivingCounts {
    total: usize,
    by_scope: HashMap<String, usize>,
}

/// A place to receive one upload's body, taken before any of it is read
/// ([`Uploads::reserve`]) and given back when it is dropped.
#[derive(Debug)]
pub struct Reservation {
    counts: Arc<Mutex<ReceivingCounts>>,
    principal: String,
    scope: Scope,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut c = lock(&self.counts);
        c.total = c.total.saturating_sub(1);
        if let Some(n) = c.by_scope.get_mut(&self.principal) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.by_scope.remove(&self.principal);
            }
        }
    }
}

/// Upload jobs of `data`'s own queue (its job files) that have not ended.
pub(crate) fn open_job_records(data: &crate::DataDir) -> Result<usize> {
    Ok(jobs::load_all(data)?
        .iter()
        .filter(|r| !r.status.state.is_final())
        .count())
}

/// This process's name in a shared queue: its host, its pid and random bits (a restarted
/// node is a new one; what the old one held is claimed after its lease).
fn node_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| {
            h.trim()
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect()
        })
        .unwrap_or_else(|_| String::from("node"));
    format!(
        "{host}:{}:{:08x}",
        std::process::id(),
        crate::access::random_u128() as u32
    )
}

/// A scope's key without its shared flag: one caller, shared uploads or not.
fn principal_key(scope: &Scope) -> String {
    Scope {
        is_shared: false,
        ..scope.clone()
    }
    .key()
}

/// `locator` with its first segment in NFC when it is an upload's name, as names are
/// stored; a path on this machine (absolute) and members' names are kept as spelled.
fn stored_locator(locator: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    if locator.starts_with('/') {
        return locator.to_string();
    }
    match extractors::split_top(locator) {
        (top, Some(rest)) => format!(
            "{}{}{rest}",
            top.nfc().collect::<String>(),
            extractors::MEMBER_SEPARATOR
        ),
        (_, None) => locator.nfc().collect(),
    }
}

impl Uploads {
    /// Start the queue on `ingestor`'s data directory: jobs a previous process accepted and
    /// did not end are queued again, ended jobs older than [`UploadsConfig::keep_ended`] are
    /// forgotten. With a catalog shared by many nodes the catalog is the queue: this node
    /// claims from it what it has room for (see the runner's notes); [`Error::Config`] when
    /// no [`UploadsConfig::spool_dir`] is given then.
    pub fn start(ingestor: Arc<Ingestor>, config: UploadsConfig) -> Result<Self> {
        let data = ingestor.data().clone();
        let sharing = ingestor.catalog().shares_jobs();
        if sharing && config.spool_dir.is_none() {
            return Err(Error::Config(
                "a shared catalog is the upload queue of every node: give spool_dir, a folder \
                 every node reads and writes, so that any node can run a job another received"
                    .into(),
            ));
        }
        if config.job_lease < Duration::from_secs(1) {
            return Err(Error::Config("job_lease_secs must be at least 1".into()));
        }
        let spool = spool::spool_dir(&data, config.spool_dir.as_deref());
        if sharing {
            // Kept archives beside the shared bodies: any node extracts what any node kept.
            ingestor.keep_archives_in(crate::DataDir::kept_in_shared_spool(&spool));
        }
        spool::sweep_earlier_layout(&ingestor.kept_root());
        crate::perms::create_dir(&data.uploads())?;
        crate::perms::create_dir(&jobs::records_dir(&data))?;
        crate::perms::create_dir(&spool)?;
        let shared = Arc::new(Shared {
            ing: ingestor,
            data,
            spool,
            node: sharing.then(node_name),
            poke: Condvar::new(),
            claiming: Mutex::new(()),
            config,
            state: Mutex::new(State::default()),
            ended: Condvar::new(),
            stop: AtomicBool::new(false),
            metrics: Default::default(),
        });
        let oldest = jobs::now() - shared.config.keep_ended.as_secs_f64();
        shared.ing.catalog().forget_jobs_ended_before(oldest);
        if sharing {
            Self::join_shared_queue(&shared)?;
        } else {
            Self::resume_own_jobs(&shared, oldest)?;
        }
        Ok(Uploads {
            shared,
            receiving: Arc::new(Mutex::new(ReceivingCounts::default())),
        })
    }

    /// Queue again the jobs this data dir's previous process accepted and did not end;
    /// forget ended jobs older than `oldest`; remove bodies no job waits for.
    fn resume_own_jobs(shared: &Arc<Shared>, oldest: f64) -> Result<()> {
        let records = jobs::load_all(&shared.data)?;
        let mut state = lock(&shared.state);
        let mut resumed = 0;
        for mut record in records {
            let id = record.status.id.clone();
            if record.status.state.is_final() {
                if record.status.finished_at.unwrap_or(0.0) < oldest {
                    jobs::forget(&shared.data, &id);
                } else {
                    state.jobs.insert(id, Job::new(record));
                }
                continue;
            }
            let body = spool::body_path(&shared.spool, &id);
            record.status.state = jobs::JobState::Pending;
            let lost = record.status.kind == JobKind::Upload && !body.is_file();
            state.jobs.insert(id.clone(), Job::new(record));
            if lost {
                if let Some(job) = state.jobs.get_mut(&id) {
                    job.record.status.state = JobState::Failed;
                    job.record.status.reason = Some("its spooled body was lost".into());
                    job.record.status.finished_at = Some(jobs::now());
                    let _ = jobs::save(&shared.data, shared.ing.catalog(), &job.record, None);
                }
                continue;
            }
            resumed += 1;
            shared.enqueue(&mut state, id);
        }
        // Bodies no job waits for: never accepted (a crash while receiving), or of a job
        // that ended just before a crash removed them.
        // A configured spool may be another process's too: only day-old leftovers go there.
        spool::sweep(&shared.spool, shared.config.spool_dir.is_some(), |id| {
            state
                .jobs
                .get(id)
                .is_some_and(|j| !j.record.status.state.is_final())
        });
        drop(state);
        if resumed > 0 {
            tracing::info!("{resumed} upload jobs accepted before the last stop are queued again");
        }
        Ok(())
    }

    /// Take part in a shared catalog's queue: remove day-old bodies of ended or unknown
    /// jobs from the shared spool, claim what this node has room for, and start the thread
    /// that renews its leases and claims more.
    fn join_shared_queue(shared: &Arc<Shared>) -> Result<()> {
        let catalog = shared.ing.catalog();
        spool::sweep(&shared.spool, true, |id| {
            jobs::shared_record(catalog, id).is_some_and(|r| !r.status.state.is_final())
        });
        tracing::info!(
            node = shared.node.as_deref().unwrap_or_default(),
            spool = %shared.spool.display(),
            "taking jobs from the shared upload queue"
        );
        shared.claim();
        let poller = Arc::clone(shared);
        let handle = std::thread::Builder::new()
            .name("upload-queue".into())
            .spawn(move || poller.poll_queue())
            .map_err(|e| Error::Upload(format!("cannot start the queue thread: {e}")))?;
        lock(&shared.state).threads.push(handle);
        Ok(())
    }

    /// The ingestor the queue feeds (for searches and the agent's tools).
    pub fn ingestor(&self) -> &Arc<Ingestor> {
        &self.shared.ing
    }

    /// The bounds it was started with.
    pub fn config(&self) -> &UploadsConfig {
        &self.shared.config
    }

    /// Accept an upload: stream `body` to disk, record the job durably and queue it; returns
    /// as soon as the body is received. `name` is its locator's first segment (`report.zip`,
    /// `team/notes.md`; not starting with `/`, without `!/` or `#`). An upload of a name the
    /// scope already holds replaces it (members gone from a new version of an archive are
    /// removed). Errors: [`Error::TooLarge`], [`Error::Busy`] and [`Error::QueueFull`]
    /// (retry later),
    /// [`Error::Upload`] (a bad name, a body that could not be read), [`Error::ShuttingDown`].
    pub fn submit(
        &self,
        name: &str,
        body: impl Read,
        scope: &Scope,
        options: &UploadOptions,
    ) -> Result<JobId> {
        let reservation = self.reserve(scope)?;
        self.submit_reserved(reservation, name, body, options)
    }

    /// Take a place to receive one upload of `scope`, before anything of its body is read:
    /// refused with [`Error::ShuttingDown`], [`Error::QueueFull`] (every open job the
    /// service queues), or [`Error::Busy`] (every body it receives at once, or as many jobs
    /// or bodies as one scope may have), each with a time to retry after. An HTTP front end
    /// calls it first, so that a refusal costs the caller no upload.
    pub fn reserve(&self, scope: &Scope) -> Result<Reservation> {
        let shared = &self.shared;
        if shared.stop.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        crate::access::check_scope(&Scope {
            is_shared: false,
            ..scope.clone()
        })
        .map_err(Error::Scope)?;
        let principal = principal_key(scope);
        let held = shared.ing.catalog().len_of_owner(scope);
        if held >= shared.config.max_files_per_scope {
            shared.metrics.refused("quota");
            return Err(Error::Quota(format!(
                "your files hold {held} entries (files and archive members), the most one \
                 caller may: delete some first"
            )));
        }
        let open_here = self.open_jobs_of(scope)?;
        let open = lock(&shared.state).open_jobs();
        if open >= shared.config.max_open_jobs {
            shared.metrics.refused("queue_full");
            return Err(Error::QueueFull {
                reason: format!(
                    "{} jobs are open, the most this service queues",
                    shared.config.max_open_jobs
                ),
                retry_after_secs: 10,
            });
        }
        if open_here >= shared.config.max_open_jobs_per_scope.max(1) {
            shared.metrics.refused("busy");
            return Err(Error::Busy {
                reason: format!("{open_here} of your jobs are open, the most one caller may have"),
                retry_after_secs: 10,
            });
        }
        let mut counts = lock(&self.receiving);
        let max = shared.config.max_receiving.max(1);
        let max_here = shared.config.max_receiving_per_scope.max(1);
        let here = counts.by_scope.get(&principal).copied().unwrap_or(0);
        if counts.total >= max || here >= max_here {
            shared.metrics.refused("busy");
            return Err(Error::Busy {
                reason: if here >= max_here {
                    format!("{here} of your uploads are being received, the most at once")
                } else {
                    format!("{max} uploads are being received, the most at once")
                },
                retry_after_secs: 1,
            });
        }
        counts.total += 1;
        *counts.by_scope.entry(principal.clone()).or_default() += 1;
        Ok(Reservation {
            counts: Arc::clone(&self.receiving),
            principal,
            scope: scope.clone(),
        })
    }

    /// [`Uploads::submit`] on a place [`Uploads::reserve`] gave (for its scope).
    pub fn submit_reserved(
        &self,
        reservation: Reservation,
        name: &str,
        mut body: impl Read,
        options: &UploadOptions,
    ) -> Result<JobId> {
        let shared = &self.shared;
        if shared.stop.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        let name = upload_name(name)?;
        let name = name.as_str();
        let tags = encode_tags(&options.tags)?;
        let mut scope = reservation.scope.clone();
        scope.is_shared = options.shared;
        crate::access::check_scope(&scope).map_err(Error::Scope)?;
        let id = JobId::new();
        let max = options
            .max_bytes
            .map_or(shared.config.max_upload_bytes, |m| {
                m.min(shared.config.max_upload_bytes)
            });
        let path = spool::body_path(&shared.spool, &id);
        let spooled = match spool::receive(&mut body, &path, max) {
            Ok(s) => s,
            Err(e) => {
                if matches!(e, Error::TooLarge { .. }) {
                    shared.metrics.refused("too_large");
                }
                return Err(e);
            }
        };
        drop(reservation);
        let status =
            JobStatus::accepted(id, JobKind::Upload, name, spooled.bytes, Some(spooled.hash));
        let record = JobRecord {
            status,
            scope,
            limits: options
                .limits
                .clone()
                .or_else(|| shared.config.limits.clone()),
            tags,
        };
        if let Err(e) = jobs::save(&shared.data, shared.ing.catalog(), &record, None) {
            let _ = std::fs::remove_file(&spooled.path);
            return Err(e);
        }
        shared.metrics.accepted(spooled.bytes);
        Ok(self.queue(record))
    }

    /// Job `id` as `scope` sees it: `None` when it does not exist or is another owner's.
    pub fn job(&self, id: &JobId, scope: &Scope) -> Option<JobStatus> {
        let state = lock(&self.shared.state);
        let Some(job) = state.jobs.get(id) else {
            drop(state);
            // Another node's job, when the catalog is shared: its record as that node last
            // wrote it (accepted, then ended).
            let record = jobs::shared_record(self.shared.ing.catalog(), id)?;
            return crate::access::same_principal(&record.scope, scope).then_some(record.status);
        };
        if !crate::access::same_principal(&job.record.scope, scope) {
            return None;
        }
        let mut status = job.record.status.clone();
        if !status.state.is_final() {
            status.state = job.progress.running_state();
            status.files = job.progress.lines.values().cloned().collect();
            status.chunks = status.files.iter().map(|l| u64::from(l.chunks)).sum();
        }
        Some(status)
    }

    /// Wait until job `id` ends or `timeout` passes; its status then (`None` as for
    /// [`Uploads::job`]).
    pub fn wait(&self, id: &JobId, scope: &Scope, timeout: Duration) -> Option<JobStatus> {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.shared.state);
        loop {
            let Some(ended) = state.jobs.get(id).map(|j| j.record.status.state.is_final()) else {
                drop(state);
                return self.wait_shared(id, scope, deadline);
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if ended || left.is_zero() {
                break;
            }
            state = self
                .shared
                .ended
                .wait_timeout(state, left.min(Duration::from_millis(500)))
                .map(|(s, _)| s)
                .unwrap_or_else(|p| p.into_inner().0);
        }
        drop(state);
        self.job(id, scope)
    }

    /// [`Uploads::wait`] for a job another node of a shared queue runs: its shared record,
    /// read again every quarter second until it ended or `deadline` passed (or until this
    /// node claims it).
    fn wait_shared(&self, id: &JobId, scope: &Scope, deadline: Instant) -> Option<JobStatus> {
        loop {
            let status = self.job(id, scope)?;
            let here = lock(&self.shared.state).jobs.contains_key(id);
            if status.state.is_final() || Instant::now() >= deadline {
                return Some(status);
            }
            if here {
                return self.wait(
                    id,
                    scope,
                    deadline.saturating_duration_since(Instant::now()),
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Jobs of `scope`'s principal (its own and its shared ones) not ended: on every node
    /// of a shared queue, else here.
    fn open_jobs_of(&self, scope: &Scope) -> Result<usize> {
        let keys = [
            principal_key(scope),
            Scope {
                is_shared: true,
                ..scope.clone()
            }
            .key(),
        ];
        if self.shared.node.is_some() {
            let open = self.shared.ing.catalog().open_jobs(&keys)?;
            return Ok(usize::try_from(open).unwrap_or(usize::MAX));
        }
        let state = lock(&self.shared.state);
        Ok(keys.iter().map(|k| state.open_jobs_of(k)).sum())
    }

    /// Where `locator` (a file or an archive member, without `#fragment`) stands for
    /// `scope`: the job of the scope working on it if one is, else the catalog's entry that
    /// the one access rule lets `scope` read (its own first; another user's shared file says
    /// whose it is in `owner`). `None` when the scope may read no such file (another
    /// mandate's or user's private files included).
    pub fn file_status(&self, locator: &str, scope: &Scope) -> Option<FileState> {
        let locator = stored_locator(locator);
        let locator = locator.as_str();
        let key = scope.key();
        {
            let state = lock(&self.shared.state);
            let job = state.jobs.values().find(|j| {
                !j.record.status.state.is_final()
                    && j.record.scope.key() == key
                    && j.record.status.kind == JobKind::Upload
                    && top_name(&j.record.status.locator) == top_name(locator)
            });
            if let Some(job) = job {
                let line = job.progress.lines.get(locator);
                let nested = format!("{locator}!/");
                let file = line.cloned().unwrap_or_else(|| FileLine {
                    locator: locator.to_string(),
                    status: job.progress.running_state().as_str().to_string(),
                    reason: None,
                    chunks: 0,
                    archive: false,
                });
                return Some(FileState {
                    file,
                    job: Some(job.record.status.id.clone()),
                    owner: None,
                    members: job
                        .progress
                        .lines
                        .values()
                        .filter(|l| l.locator.starts_with(&nested))
                        .cloned()
                        .collect(),
                });
            }
        }
        let catalog = self.shared.ing.catalog();
        let (owner, entry) = crate::access::readable_owners(catalog.scopes(), scope, None)
            .into_iter()
            .find_map(|o| catalog.get(&o, locator).map(|e| (o, e)))?;
        let word = |s: EntryStatus| match s {
            EntryStatus::Indexed | EntryStatus::Container => "indexed",
            EntryStatus::Failed => "failed",
            EntryStatus::Skipped => "skipped",
        };
        let nested = format!("{locator}!/");
        let mut members: Vec<FileLine> = catalog
            .under(&owner, &nested)
            .into_iter()
            .map(|e| FileLine {
                status: word(e.status).to_string(),
                archive: e.status == EntryStatus::Container,
                chunks: e.content_chunks(),
                locator: e.locator,
                reason: e.reason,
            })
            .collect();
        members.sort_by(|a, b| a.locator.cmp(&b.locator));
        Some(FileState {
            file: FileLine {
                chunks: entry.content_chunks(),
                locator: entry.locator,
                status: word(entry.status).to_string(),
                reason: entry.reason,
                archive: entry.status == EntryStatus::Container,
            },
            job: None,
            owner: (crate::access::closeness(scope, &owner) > 0)
                .then(|| crate::access::owner_label(&owner)),
            members,
        })
    }

    /// Queue the removal of `locator` (a file, or an archive with its members) and of
    /// everything derived from it; it runs after any job on the same name accepted before.
    /// Only the caller's own files are removed (its exact scope, shared or not as `scope`
    /// says): [`Error::NotFound`] when `scope` may read no such file and no job is bringing
    /// one, [`Error::Forbidden`] when it may read it but it is another owner's.
    pub fn delete(&self, locator: &str, scope: &Scope) -> Result<JobId> {
        let shared = &self.shared;
        if shared.stop.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        let locator = stored_locator(locator);
        let locator = locator.as_str();
        let key = scope.key();
        let (catalogued, holder) = {
            let catalog = shared.ing.catalog();
            let holds = |owner: &Scope| catalog.holds(owner, locator);
            // Who holds it that the caller may read: the one matching the call's shared flag
            // first (a shared delete most likely means a shared file).
            let mut holders: Vec<Scope> =
                crate::access::readable_owners(catalog.scopes(), scope, None)
                    .into_iter()
                    .filter(|o| holds(o))
                    .collect();
            holders.sort_by_key(|o| o.is_shared != scope.is_shared);
            let holder = holders.into_iter().next();
            (holds(scope), holder)
        };
        let open_here = self.open_jobs_of(scope)?;
        // An upload of the name that another node accepted and has not run yet.
        let catalog = shared.ing.catalog();
        let queued_elsewhere = !catalogued
            && catalog.shares_jobs()
            && catalog.name_has_open_jobs(&jobs::name_key(&key, locator))?;
        let state = lock(&shared.state);
        if open_here >= shared.config.max_open_jobs_per_scope.max(1) {
            shared.metrics.refused("busy");
            return Err(Error::Busy {
                reason: format!("{open_here} of your jobs are open, the most one caller may have"),
                retry_after_secs: 10,
            });
        }
        if !catalogued && !queued_elsewhere && !state.name_busy(&key, top_name(locator)) {
            return Err(match holder {
                // The caller's own file, shared or private as the call did not say.
                Some(o) if crate::access::same_principal(&o, scope) => Error::Forbidden(format!(
                    "{locator} is your {} file: delete it with shared={}",
                    if o.is_shared { "shared" } else { "private" },
                    o.is_shared
                )),
                Some(o) => Error::Forbidden(format!(
                    "{locator} is {}'s: only its owner can delete it",
                    crate::access::owner_label(&o)
                )),
                None => Error::NotFound(format!("no file {locator}")),
            });
        }
        let record = JobRecord {
            status: JobStatus::accepted(JobId::new(), JobKind::Delete, locator, 0, None),
            scope: scope.clone(),
            limits: None,
            tags: Vec::new(),
        };
        jobs::save(&shared.data, shared.ing.catalog(), &record, None)?;
        drop(state);
        Ok(self.queue(record))
    }

    /// Run job `record` (recorded durably): on this node, or, in a shared queue, on
    /// whichever node claims it (this one first, when it has room and no other node holds an
    /// earlier job on the name).
    fn queue(&self, record: JobRecord) -> JobId {
        let shared = &self.shared;
        if shared.node.is_some() {
            let id = record.status.id.clone();
            shared.claim();
            id
        } else {
            shared.add(&mut lock(&shared.state), record)
        }
    }

    /// Counts for monitoring, in the Prometheus text format: files by status, jobs,
    /// queue depth, uploads and refusals, chunks, busy seconds per stage.
    pub fn metrics(&self) -> String {
        let (queued, open_jobs) = {
            let state = lock(&self.shared.state);
            (state.queued(), state.open_jobs())
        };
        self.shared.metrics.render(&metrics::Gauges {
            queued,
            open_jobs,
            receiving: lock(&self.receiving).total,
            catalog: self.shared.ing.stats(None),
            workflows: self.shared.ing.workflows().stats().unwrap_or_else(|e| {
                tracing::warn!("workflow counts: {e}");
                crate::workflow::WorkflowStats::default()
            }),
        })
    }

    /// Count an upload refused as too large before its body reached [`Uploads::submit`]
    /// (an HTTP front end checking the declared length).
    pub fn refused_too_large(&self) {
        self.shared.metrics.refused("too_large");
    }

    /// Jobs accepted and not ended.
    pub fn open_jobs(&self) -> usize {
        lock(&self.shared.state).open_jobs()
    }

    /// Stop: refuse new uploads, let every run store what is in flight, and return once the
    /// runs ended. Jobs not ended keep their records and bodies and are queued again by the
    /// next [`Uploads::start`] on this data directory.
    pub fn shutdown(&self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        {
            // Under the lock the queue's thread checks `stop` with, so it cannot miss this.
            let _state = lock(&self.shared.state);
            self.shared.poke.notify_all();
        }
        self.shared.close_feeds();
        for handle in self.shared.take_threads() {
            let _ = handle.join();
        }
        if let Some(node) = &self.shared.node {
            // What is not ended goes to the other nodes now, not after its lease.
            if let Err(e) = self.shared.ing.catalog().release_jobs(node) {
                tracing::warn!("releasing this node's upload jobs: {e}");
            }
        }
        let left = lock(&self.shared.state)
            .jobs
            .values()
            .filter(|j| !j.record.status.state.is_final())
            .count();
        if left > 0 {
            tracing::info!("{left} upload jobs not ended are left for the next start");
        }
    }
}

impl Drop for Uploads {
    fn drop(&mut self) {
        if !self.shared.stop.load(Ordering::SeqCst) {
            self.shutdown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_relative_names_in_nfc() {
        for good in [
            "report.pdf",
            "team/notes.md",
            "a b (1).zip",
            "ünï.txt",
            "x..y.txt",
        ] {
            assert_eq!(upload_name(good).unwrap(), good);
        }
        // NFD in, NFC stored: the two spellings are one name.
        assert_eq!(upload_name("u\u{308}.txt").unwrap(), "\u{fc}.txt");
        let long_segment = "x".repeat(MAX_SEGMENT_BYTES + 1);
        let deep = "d/".repeat(MAX_NAME_SEGMENTS) + "f.txt";
        for bad in [
            "",
            " ",
            " x ",
            "x ",
            "/etc/passwd",
            "..",
            ".",
            "a/../b.txt",
            "./a.txt",
            "dir/",
            "a//b",
            "a\\b.txt",
            "a.zip!/b.txt",
            "a#page=1",
            "a\nb",
            "evil\u{202e}fdp.exe",
            "zero\u{200b}width.txt",
            "bom\u{feff}.txt",
            "line\u{2028}sep.txt",
            "wide\u{3000}space.txt",
            "a/ b/c",
            long_segment.as_str(),
            deep.as_str(),
        ] {
            let e = upload_name(bad).unwrap_err().to_string();
            assert!(e.contains("bad upload name"), "{bad:?}: {e}");
        }
    }

    #[test]
    fn tags_are_key_value_strings_sorted_by_key_within_the_rules() {
        let tags = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            encode_tags(&tags(&[("team", "ops"), ("case-id", "A=17 b")])).unwrap(),
            ["case-id=A=17 b", "team=ops"]
        );
        for bad in [
            ("", "x"),
            ("a=b", "x"),
            ("sp ace", "x"),
            ("k", "line\nbreak"),
        ] {
            assert!(encode_tags(&tags(&[bad])).is_err(), "{bad:?}");
        }
        let long = "v".repeat(257);
        assert!(encode_tags(&tags(&[("k", &long)])).is_err());
        let many: BTreeMap<String, String> = (0..=MAX_TAGS)
            .map(|i| (format!("k{i}"), "v".into()))
            .collect();
        assert!(encode_tags(&many).is_err());
    }
}
