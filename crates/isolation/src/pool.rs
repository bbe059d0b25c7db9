//! The pool of extraction workers: an [`Extractor`] that runs each job on an idle worker (or a
//! new one), under the watchdog's deadline, and replaces a worker that died or was killed.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use extractors::{ExtractError, ExtractInput, Extraction, Extractor};

use super::watchdog::Watchdog;
use super::worker::Worker;
use super::IsolationConfig;
use crate::lock;

/// A pool of extraction workers: an [`Extractor`] that runs every job in a worker process.
/// Blocking: `extract` returns when the worker answers, dies or is killed at its deadline.
pub struct WorkerPool {
    config: IsolationConfig,
    idle: Mutex<Vec<Worker>>,
    watchdog: Arc<Watchdog>,
    next_job: AtomicU64,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("config", &self.config)
            .finish()
    }
}

impl WorkerPool {
    /// A pool that starts workers on demand with `config`'s limits.
    pub fn new(config: IsolationConfig) -> Self {
        WorkerPool {
            config,
            idle: Mutex::new(Vec::new()),
            watchdog: Watchdog::start(),
            next_job: AtomicU64::new(0),
        }
    }

    /// Process ids of the idle workers (for `ingest::testing::idle_worker_pids`).
    pub fn idle_pids(&self) -> Vec<u32> {
        lock(&self.idle).iter().map(Worker::pid).collect()
    }

    /// A live idle worker, or a new one.
    fn checkout(&self) -> io::Result<Worker> {
        loop {
            let candidate = lock(&self.idle).pop();
            match candidate {
                Some(mut w) => {
                    if w.is_running() {
                        return Ok(w);
                    }
                    w.reap(); // died while idle: costs nothing, replace it
                }
                None => return Worker::spawn(&self.config),
            }
        }
    }

    fn run(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        // OCR stops starting pages at three quarters of the deadline: a long scan loses OCR
        // pages (the file says which), not the whole file to the watchdog.
        let (cpu_seconds, deadline) =
            super::job_limits(self.config.cpu_seconds, self.config.deadline, input);
        let mut options = input.options.clone();
        let budget = deadline.mul_f64(0.75);
        options.ocr.file_budget = Some(options.ocr.file_budget.map_or(budget, |b| b.min(budget)));
        let input = &ExtractInput {
            options: &options,
            ..*input
        };
        let aborted = |reason: String| Err(ExtractError::Aborted(reason));
        // A worker that died while idle fails the write: retry once with a fresh one.
        let mut worker = None;
        for _ in 0..2 {
            let mut w = match self.checkout() {
                Ok(w) => w,
                Err(e) => return aborted(format!("cannot start an extraction worker: {e}")),
            };
            match w.send(input) {
                Ok(()) => {
                    worker = Some(w);
                    break;
                }
                Err(_) => w.kill(),
            }
        }
        let Some(mut w) = worker else {
            return aborted("extraction worker did not accept the job".into());
        };
        let job = self.next_job.fetch_add(1, Ordering::Relaxed);
        self.watchdog.watch(job, w.pid(), Instant::now() + deadline);
        let answer = w.receive(self.config.memory_bytes);
        let expired = self.watchdog.release(job);
        match answer {
            Ok(result) if !expired => {
                lock(&self.idle).push(w);
                result
            }
            _ => {
                let timed_out = expired.then_some(deadline);
                aborted(w.death(timed_out, cpu_seconds))
            }
        }
    }
}

impl Extractor for WorkerPool {
    fn name(&self) -> &'static str {
        "isolated"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let result = self.run(input);
        super::log_ocr_notes(input, &result);
        result
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.watchdog.stop();
        for w in lock(&self.idle).drain(..) {
            w.shut_down();
        }
    }
}
