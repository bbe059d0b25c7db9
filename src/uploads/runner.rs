//! Running jobs: one pipeline run per scope with work, fed while jobs keep coming.
//!
//! ```text
//!  submit ──▶ scope queue ──pump──▶ feed (channel) ──▶ pipeline run of the scope ──▶ lines
//!                                                        (one thread per busy scope)
//! ```
//!
//! A scope's run takes each job as it is queued, so a small upload behind a large one is
//! unpacked, parsed and embedded beside it (the embed stage draws batches round-robin from
//! every waiting file) instead of after it. Runs of different scopes go at once, up to
//! [`super::UploadsConfig::max_scope_runs`]. Two jobs on the same name never run together:
//! the later waits, so that an upload and a delete of one file happen in the order they were
//! accepted. A run whose jobs are all done is closed (the pipeline finishes its run: archives
//! recorded, orphans deleted, the index optimized); jobs queued meanwhile start a new one.
//! A run also takes no more jobs, and closes once those it took are done, when another run
//! (a folder sync, an on-demand extraction) waits for its scope: run slots are served in
//! turn, so a steady stream of uploads cannot keep the others out.
//!
//! With a catalog shared by many nodes ([`crate::index::CatalogJobs::shares_jobs`]) the catalog
//! is the queue: an accepted job is a row nobody holds; a node claims rows under a lease
//! (the node that received the upload first, right away; any node with room, every quarter
//! of a lease), renews the lease of what it holds while it runs, and runs what it claimed as
//! above. A node that dies stops renewing: once its leases run out another node claims its
//! jobs and runs them again from their bodies in the shared spool (a run is idempotent: the
//! same bytes under the same name make the same points and entries). A node that stops
//! releases what it holds.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crossbeam_channel::Sender;
use extractors::Scope;

use super::jobs::{self, JobId, JobKind, JobLines, JobRecord, JobState};
use super::metrics::Metrics;
use crate::ingestor::Ingestor;
use crate::lock;
use crate::pipeline::FileStage;
use crate::pipeline::Input;
use crate::report::FileReport;

/// A job the runner knows: queued, running, or ended (kept for status queries).
pub(crate) struct Job {
    pub record: JobRecord,
    pub progress: JobLines,
    /// The state the job's shared record says (a shared catalog's).
    pub published: JobState,
}

impl Job {
    pub fn new(record: JobRecord) -> Self {
        Job {
            published: record.status.state,
            record,
            progress: JobLines::default(),
        }
    }
}

/// A scope's pipeline run.
struct ActiveRun {
    /// Closed (None) once every job sent is done and nothing waits: the run then ends.
    feed: Option<Sender<Input>>,
    /// Jobs in the order they were sent (the pipeline numbers inputs so).
    sent: Vec<JobId>,
    /// Top-level name → the job running on it.
    running: HashMap<String, JobId>,
}

#[derive(Default)]
pub(crate) struct State {
    pub jobs: HashMap<JobId, Job>,
    /// Scope key → jobs waiting, in the order accepted.
    queues: HashMap<String, VecDeque<JobId>>,
    runs: HashMap<String, ActiveRun>,
    pub threads: Vec<std::thread::JoinHandle<()>>,
    /// Jobs of a shared queue that ended here but whose end is not recorded yet.
    unrecorded: std::collections::HashSet<JobId>,
}

impl State {
    /// Jobs accepted and not ended.
    pub fn open_jobs(&self) -> usize {
        self.queues.values().map(VecDeque::len).sum::<usize>()
            + self.runs.values().map(|r| r.running.len()).sum::<usize>()
    }

    /// Jobs of scope `key` accepted and not ended.
    pub fn open_jobs_of(&self, key: &str) -> usize {
        self.queues.get(key).map_or(0, VecDeque::len)
            + self.runs.get(key).map_or(0, |r| r.running.len())
    }

    /// Jobs waiting for a run.
    pub fn queued(&self) -> usize {
        self.queues.values().map(VecDeque::len).sum()
    }

    /// Whether a job not ended holds top-level name `name` in scope `key`.
    pub fn name_busy(&self, key: &str, name: &str) -> bool {
        self.runs
            .get(key)
            .is_some_and(|r| r.running.contains_key(name))
            || self.queues.get(key).is_some_and(|q| {
                q.iter().any(|id| {
                    self.jobs
                        .get(id)
                        .is_some_and(|j| top_name(&j.record.status.locator) == name)
                })
            })
    }
}

/// What the runner shares with the facade and its run threads.
pub(crate) struct Shared {
    pub ing: Arc<Ingestor>,
    /// The data directory (its `uploads/` is the queue's).
    pub data: crate::DataDir,
    /// The folder of spooled bodies (shared by every node of a shared catalog).
    pub spool: std::path::PathBuf,
    /// This node's name in a shared queue (`None`: the queue is this node's own).
    pub node: Option<String>,
    /// Signalled when the shared queue may hold work for this node (a job here ended, the
    /// service stops).
    pub poke: Condvar,
    /// Held by a claim from the shared queue while it runs.
    pub claiming: Mutex<()>,
    pub config: super::UploadsConfig,
    pub state: Mutex<State>,
    /// Signalled when a job ends.
    pub ended: Condvar,
    /// Set by shutdown: runs stop taking inputs, what is in flight is stored.
    pub stop: AtomicBool,
    pub metrics: Metrics,
}

/// The first segment of a locator: the name a job runs on.
pub(crate) fn top_name(locator: &str) -> &str {
    extractors::split_top(locator).0
}

impl Shared {
    /// Record `record` as a job and queue it.
    pub fn add(self: &Arc<Self>, state: &mut State, record: JobRecord) -> JobId {
        let id = record.status.id.clone();
        state.jobs.insert(id.clone(), Job::new(record));
        self.enqueue(state, id.clone());
        id
    }

    /// Queue job `id` (already in `state.jobs`) and start what can start.
    pub fn enqueue(self: &Arc<Self>, state: &mut State, id: JobId) {
        let key = match state.jobs.get(&id) {
            Some(j) => j.record.scope.key(),
            None => return,
        };
        state.queues.entry(key.clone()).or_default().push_back(id);
        self.pump(state, &key);
    }

    /// Start a run for scope `key` if it has jobs and none, and send it every job whose name
    /// is free.
    fn pump(self: &Arc<Self>, state: &mut State, key: &str) {
        if self.stop.load(Ordering::SeqCst) {
            return;
        }
        let waiting = state.queues.get(key).is_some_and(|q| !q.is_empty());
        if !state.runs.contains_key(key) {
            if !waiting || state.runs.len() >= self.config.max_scope_runs.max(1) {
                return;
            }
            let Some(scope) = state
                .queues
                .get(key)
                .and_then(|q| q.front())
                .and_then(|id| state.jobs.get(id))
                .map(|j| j.record.scope.clone())
            else {
                return;
            };
            let (tx, rx) = crossbeam_channel::unbounded::<Input>();
            state.runs.insert(
                key.to_string(),
                ActiveRun {
                    feed: Some(tx),
                    sent: Vec::new(),
                    running: HashMap::new(),
                },
            );
            let shared = Arc::clone(self);
            let run_key = key.to_string();
            let spawned = std::thread::Builder::new()
                .name("upload-run".into())
                .spawn(move || shared.run_scope(run_key, scope, rx));
            match spawned {
                Ok(handle) => state.threads.push(handle),
                Err(e) => {
                    tracing::error!("cannot start a run thread: {e}");
                    state.runs.remove(key);
                    return;
                }
            }
        }
        let (Some(queue), Some(run)) = (state.queues.get_mut(key), state.runs.get_mut(key)) else {
            return;
        };
        let Some(feed) = run.feed.as_ref() else {
            return; // closing: the next run takes them
        };
        if !run.sent.is_empty() && self.ing.runs().wanted(key) {
            // Another run (a sync, an on-demand extraction) waits for this scope: no more
            // jobs for this run, so that it ends and the other goes; the next run takes them.
            // (A run given none yet may be the one waiting: it takes them, in its turn.)
            return;
        }
        let mut i = 0;
        while let Some(id) = queue.get(i).cloned() {
            let Some(job) = state.jobs.get(&id) else {
                queue.remove(i);
                continue;
            };
            let name = top_name(&job.record.status.locator).to_string();
            if run.running.contains_key(&name) {
                i += 1;
                continue;
            }
            queue.remove(i);
            let input = match job.record.status.kind {
                JobKind::Upload => Input::Upload {
                    name: job.record.status.locator.clone(),
                    path: super::spool::body_path(&self.spool, &id),
                    limits: job.record.limits.clone(),
                    tags: job.record.tags.clone(),
                },
                JobKind::Delete => Input::Remove {
                    locator: job.record.status.locator.clone(),
                },
            };
            if feed.send(input).is_err() {
                // The run ended under us (it failed): the job waits for the next one.
                queue.push_front(id);
                return;
            }
            run.sent.push(id.clone());
            run.running.insert(name, id);
        }
    }

    /// Pump every scope (after a run ended, a slot may be free).
    fn pump_all(self: &Arc<Self>, state: &mut State) {
        let keys: Vec<String> = state.queues.keys().cloned().collect();
        for key in keys {
            self.pump(state, &key);
        }
    }

    /// A run thread: one pipeline run fed with the scope's jobs until its feed closes.
    fn run_scope(
        self: Arc<Self>,
        key: String,
        scope: Scope,
        feed: crossbeam_channel::Receiver<Input>,
    ) {
        let progress = RunProgress {
            shared: &self,
            key: &key,
        };
        let result = self.ing.run_inputs(
            Box::new(feed.into_iter()),
            &scope,
            &progress,
            &self.stop,
            false,
        );
        let mut state = lock(&self.state);
        match &result {
            Ok(report) => self.metrics.add_run(&report.summary),
            Err(e) => tracing::error!("upload run of a scope failed: {e}"),
        }
        if let Some(run) = state.runs.remove(&key) {
            let unfinished: Vec<JobId> = run.running.into_values().collect();
            for id in unfinished {
                match &result {
                    // Stopped: the record on disk still says pending, so the next start
                    // queues it again; its lines so far are forgotten.
                    _ if self.stop.load(Ordering::SeqCst) => {
                        if let Some(job) = state.jobs.get_mut(&id) {
                            job.progress = JobLines::default();
                        }
                    }
                    Err(e) => {
                        let reason = format!("the run it was in failed: {e}");
                        self.end_job(&mut state, &id, Some(reason));
                    }
                    // A job the pipeline never completed although its run ended normally.
                    Ok(_) => self.end_job(&mut state, &id, None),
                }
            }
        }
        self.pump_all(&mut state);
        self.ended.notify_all();
    }

    /// Job `id` has all its lines: record its end durably, drop its body.
    fn end_job(&self, state: &mut State, id: &JobId, failure: Option<String>) {
        let Some(job) = state.jobs.get_mut(id) else {
            return;
        };
        let progress = std::mem::take(&mut job.progress);
        // Whether a limit left members out, from every line (an ended job keeps only some).
        let left_out = progress.lines.values().any(|l| {
            l.status == "skipped" && l.reason.as_deref().is_some_and(|r| r.contains("limit: "))
        });
        // A PDF or picture that failed is never rendered: its bytes are not kept for it.
        let top_failed = progress
            .lines
            .get(job.record.status.locator.as_str())
            .is_some_and(|l| {
                l.status == crate::report::FileStatus::Failed.as_str()
                    || l.status == crate::report::FileStatus::Skipped.as_str()
            });
        progress.finish(&mut job.record.status);
        if let Some(reason) = failure {
            job.record.status.state = JobState::Failed;
            job.record.status.reason = Some(reason);
        }
        self.metrics.job_ended(&job.record.status);
        match jobs::save(
            &self.data,
            self.ing.catalog(),
            &job.record,
            self.node.as_deref(),
        ) {
            Ok(true) => {}
            Ok(false) => tracing::warn!(
                "job {id} ended here after another node took it over (this node's lease \
                 lapsed): its end here is not recorded, the other node's is"
            ),
            Err(e) => {
                tracing::error!("recording the end of job {id}: {e}");
                if self.node.is_some() {
                    // Tried again by the queue's thread, its lease kept meanwhile.
                    state.unrecorded.insert(id.clone());
                }
            }
        }
        if job.record.status.kind == JobKind::Upload {
            let body = super::spool::body_path(&self.spool, id);
            let (scope, name) = (&job.record.scope, job.record.status.locator.as_str());
            let kept_root = self.ing.kept_root();
            let quarantined = job.record.status.state == JobState::Failed
                && job.record.status.reason.as_deref().is_some_and(|r| {
                    r.contains(&format!("({}: ", crate::pipeline::quarantine::QUARANTINED))
                });
            if quarantined {
                // Kept for the operator beside its quarantine mark (`ingest quarantine`).
                crate::pipeline::quarantine::keep_body(&self.data, &scope.key(), name, &body);
            }
            // Kept for extract_container_item (members left out) and for render_page (a PDF
            // or a picture that was indexed is looked at again; one that failed is not, and
            // costs no quota), within the principal's kept-bytes quota.
            let renderable = !top_failed && super::spool::renderable(&body, name);
            let kept = (left_out || renderable)
                && super::spool::keep(&kept_root, &body, scope, name, self.config.max_kept_bytes)
                    .map_err(|e| tracing::warn!("keeping an archive for extraction: {e}"))
                    .is_ok();
            if !kept {
                super::spool::unkeep(&kept_root, scope, name);
                let _ = std::fs::remove_file(&body);
            }
        } else if job.record.status.state == JobState::Deleted {
            // The deleted name's kept bytes go now (a sweep of a shared spool leaves the
            // newest alone for a while).
            let (scope, name) = (&job.record.scope, job.record.status.locator.as_str());
            super::spool::unkeep(&self.ing.kept_root(), scope, name);
        }
        self.sweep_kept(&job.record.scope);
        self.ended.notify_all();
        // A later job on the name may wait for this one in the shared queue.
        self.poke.notify_all();
    }

    /// Claim from the shared queue as many jobs as this node has room for, and queue them
    /// here. A claimed upload whose body is not in the spool ends failed, saying so.
    pub fn claim(self: &Arc<Self>) {
        let Some(node) = self.node.as_deref() else {
            return;
        };
        if self.stop.load(Ordering::SeqCst) {
            return;
        }
        // One claim at a time on this node: jobs on one name are queued here in the order
        // they were claimed, and a job is never claimed by two of this node's threads.
        let _claiming = lock(&self.claiming);
        let room = {
            let state = lock(&self.state);
            self.config.max_open_jobs.saturating_sub(state.open_jobs())
        };
        let claimed = match self
            .ing
            .catalog()
            .claim_jobs(node, self.config.job_lease, room)
        {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("claiming upload jobs: {e}");
                return;
            }
        };
        let mut state = lock(&self.state);
        for json in claimed {
            let record: JobRecord = match serde_json::from_str(&json) {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!("a claimed job's record is unreadable ({e}); left out");
                    continue;
                }
            };
            let mut record = record;
            record.status.state = JobState::Pending; // it starts over here
            let id = record.status.id.clone();
            if state
                .jobs
                .get(&id)
                .is_some_and(|j| !j.record.status.state.is_final())
            {
                continue; // already running here (the lease was renewed late)
            }
            let body = super::spool::body_path(&self.spool, &id);
            if record.status.kind == JobKind::Upload && !body.is_file() {
                state.jobs.insert(id.clone(), Job::new(record));
                let reason = format!(
                    "its body is not in the spool {} of this node: every node of a shared \
                     catalog needs the same spool_dir",
                    self.spool.display()
                );
                self.end_job(&mut state, &id, Some(reason));
                continue;
            }
            if state.jobs.contains_key(&id) {
                tracing::info!("job {id} is claimed again (its earlier end was not recorded)");
            } else {
                tracing::info!("job {id} claimed from the shared queue");
            }
            self.add(&mut state, record);
        }
    }

    /// The shared queue's thread: renew this node's leases and claim what it has room for,
    /// every quarter of a lease and whenever poked, until the service stops.
    pub fn poll_queue(self: Arc<Self>) {
        let Some(node) = self.node.clone() else {
            return;
        };
        let every = (self.config.job_lease / 4).clamp(
            std::time::Duration::from_millis(100),
            std::time::Duration::from_secs(5),
        );
        loop {
            {
                let state = lock(&self.state);
                if self.stop.load(Ordering::SeqCst) {
                    return;
                }
                drop(self.poke.wait_timeout(state, every));
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            // Ends whose record failed (the database was away) are recorded again first:
            // until then the job is renewed, so no node runs it again.
            let (unrecorded, running): (Vec<JobRecord>, Vec<String>) = {
                let state = lock(&self.state);
                let unrecorded = state
                    .unrecorded
                    .iter()
                    .filter_map(|id| state.jobs.get(id))
                    .map(|j| j.record.clone())
                    .collect();
                let running = state
                    .jobs
                    .iter()
                    .filter(|(id, j)| {
                        !j.record.status.state.is_final() || state.unrecorded.contains(id)
                    })
                    .map(|(id, _)| id.as_str().to_string())
                    .collect();
                (unrecorded, running)
            };
            if let Err(e) = self
                .ing
                .catalog()
                .renew_jobs(&node, self.config.job_lease, &running)
            {
                tracing::warn!("renewing the leases of this node's upload jobs: {e}");
            }
            for record in unrecorded {
                if jobs::save(&self.data, self.ing.catalog(), &record, Some(&node)).is_ok() {
                    lock(&self.state).unrecorded.remove(&record.status.id);
                }
            }
            self.claim();
        }
    }

    /// The record of job `id` with the state it is in now, when that is not what its shared
    /// record says (to write it there, outside the state's lock).
    fn to_publish(&self, state: &mut State, id: &JobId) -> Option<JobRecord> {
        self.node.as_ref()?;
        let job = state.jobs.get_mut(id)?;
        let now = job.progress.running_state();
        if now == job.published || job.record.status.state.is_final() {
            return None;
        }
        job.published = now;
        let mut record = job.record.clone();
        record.status.state = now;
        Some(record)
    }

    /// Write `record` (a job's stage) where every node reads it.
    fn publish(&self, record: Option<JobRecord>) {
        if let Some(record) = record {
            match jobs::save(
                &self.data,
                self.ing.catalog(),
                &record,
                self.node.as_deref(),
            ) {
                Ok(true) => {}
                Ok(false) => tracing::warn!(
                    "job {} was taken over by another node (this node's lease lapsed); \
                     its stage here is not recorded",
                    record.status.id
                ),
                Err(e) => tracing::warn!("recording job {}'s stage: {e}", record.status.id),
            }
        }
    }

    /// Forget the kept archives of `scope`'s principal that no top-level entry of it holds
    /// any more (deleted, replaced uploads): a deleted upload leaves none of its bytes
    /// behind. Reads only that principal's entries and folder.
    fn sweep_kept(&self, scope: &extractors::Scope) {
        let kept_root = self.ing.kept_root();
        if !super::spool::has_kept(&kept_root) {
            return;
        }
        let catalog = self.ing.catalog();
        // The principal's uploads, private and shared, share its folder.
        let mut wanted = std::collections::HashSet::new();
        for is_shared in [false, true] {
            let s = extractors::Scope {
                is_shared,
                workflow_id: None,
                ..scope.clone()
            };
            for e in catalog.entries(&s) {
                if e.parent.is_none() {
                    wanted.insert(super::spool::kept_path(&kept_root, &s, &e.locator));
                }
            }
        }
        super::spool::sweep_kept(&kept_root, scope, self.node.is_some(), &wanted);
    }

    /// The pipeline completed input `n` of scope `key`'s run.
    fn input_done(self: &Arc<Self>, key: &str, n: usize) {
        let mut state = lock(&self.state);
        let Some(id) = state.runs.get(key).and_then(|r| r.sent.get(n)).cloned() else {
            return;
        };
        self.end_job(&mut state, &id, None);
        let name = state
            .jobs
            .get(&id)
            .map(|j| top_name(&j.record.status.locator).to_string())
            .unwrap_or_default();
        if let Some(run) = state.runs.get_mut(key) {
            run.running.remove(&name);
        }
        self.pump(&mut state, key);
        let idle = state.queues.get(key).is_none_or(VecDeque::is_empty);
        let yielding = self.ing.runs().wanted(key);
        if let Some(run) = state.runs.get_mut(key) {
            if run.running.is_empty() && (idle || yielding) {
                run.feed = None; // the run finishes and ends
            }
        }
    }

    /// The job running on `locator`'s name in scope `key`.
    fn job_of(&self, state: &State, key: &str, locator: &str) -> Option<JobId> {
        state
            .runs
            .get(key)
            .and_then(|r| r.running.get(top_name(locator)))
            .cloned()
    }

    /// Close every feed: runs end once what is in flight is stored.
    pub fn close_feeds(&self) {
        let mut state = lock(&self.state);
        for run in state.runs.values_mut() {
            run.feed = None;
        }
    }

    /// The run threads, to join.
    pub fn take_threads(&self) -> Vec<std::thread::JoinHandle<()>> {
        std::mem::take(&mut lock(&self.state).threads)
    }
}

/// What a scope's run reports, routed to the jobs.
struct RunProgress<'a> {
    shared: &'a Arc<Shared>,
    key: &'a str,
}

impl crate::pipeline::RunObserver for RunProgress<'_> {
    fn file(&self, report: &FileReport) {
        self.shared.metrics.file(report);
        let mut state = lock(&self.shared.state);
        let Some(id) = self.shared.job_of(&state, self.key, &report.locator) else {
            return;
        };
        if let Some(job) = state.jobs.get_mut(&id) {
            job.progress.file(report);
        }
        let publish = self.shared.to_publish(&mut state, &id);
        drop(state);
        self.shared.publish(publish);
    }

    fn stage(&self, locator: &str, stage: FileStage) {
        let mut state = lock(&self.shared.state);
        let Some(id) = self.shared.job_of(&state, self.key, locator) else {
            return;
        };
        if let Some(job) = state.jobs.get_mut(&id) {
            let s = match stage {
                FileStage::Extracted => JobState::Extracted,
                FileStage::Embedding => JobState::Embedding,
            };
            job.progress.stage(locator, s);
        }
        let publish = self.shared.to_publish(&mut state, &id);
        drop(state);
        self.shared.publish(publish);
    }

    fn input_done(&self, input: usize) {
        self.shared.input_done(self.key, input);
    }
}
