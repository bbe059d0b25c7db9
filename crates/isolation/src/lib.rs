//! Extraction in isolated worker processes.
//!
//! Some parsers abort the whole process on hostile input (allocations sized from declared
//! lengths, stack overflows) or never return (exponential content streams); `catch_unwind`
//! cannot stop either. So documents are parsed by a small pool of worker processes — the same
//! binary started with [`WORKER_ARG`] — that get one file's bytes over a pipe and send back
//! the serialized [`Extraction`]. Each worker runs under an address-space limit and a CPU-time
//! limit (`setrlimit`), and each job under a wall-clock deadline kept by a watchdog thread. A
//! worker that dies, is killed or overruns costs exactly the file it was working on: the job
//! fails with the reason, the worker is replaced on the next job, and the run goes on.
//!
//! The files: this one holds the configuration ([`IsolationConfig`], [`Isolation`]), the
//! worker entry point ([`run_worker_if_requested`]) and the choice of extractor (`build`:
//! a [`WorkerPool`] or [`InProcess`]); `frame.rs` is the wire format on the pipes,
//! `worker.rs` both ends of one worker process (the serve loop and the parent's handle),
//! `pool.rs` the pool that runs jobs on them and `watchdog.rs` the thread that kills a job
//! past its deadline.

// The base layer, under the names the modules here have always used.
pub(crate) use ingest_base::{failpoint, lock};

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use extractors::{ExtractError, ExtractInput, Extraction, Extractor};

mod frame;
mod pool;
mod watchdog;
mod worker;

pub use pool::WorkerPool;

/// The first argument that turns a process into an extraction worker.
pub const WORKER_ARG: &str = "__extract-worker";

/// How extraction is kept apart from the process that owns the index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Isolation {
    /// Worker processes (the default): a parser that aborts, overflows its stack, exhausts
    /// its memory or hangs costs one file.
    Processes,
    /// In this process, with panics caught: faster to start, but an abort takes the process
    /// down. For trusted input, debugging and benchmarks.
    InProcess,
}

/// Limits and the program of extraction workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationConfig {
    /// Worker processes (default) or in-process.
    pub mode: Isolation,
    /// The worker executable; `None` runs the current executable, whose `main` must call
    /// [`run_worker_if_requested`] first (the `ingest` binary does).
    pub program: Option<PathBuf>,
    /// Address space of a worker (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// CPU time one job may use (`RLIMIT_CPU`, moved on before each job), plus
    /// [`SECONDS_PER_MIB`] for each MiB of input past the first.
    pub cpu_seconds: u64,
    /// Wall-clock time one job may take before its worker is killed, plus
    /// [`SECONDS_PER_MIB`] for each MiB of input past the first.
    pub deadline: Duration,
}

/// Time allowed per MiB of input past the first, on top of the deadline and CPU limit: a
/// 4.7 MB, 1 158-page manual needs 15–20 s to extract on an idle core and well over 60 s on a
/// busy one, while the hostile inputs the limits are for are small files that expand or loop.
pub const SECONDS_PER_MIB: u64 = 20;

/// CPU seconds one rendering (`render_page`) may take, whatever its file's size: a page is
/// drawn from the objects it uses, so a file padded with megabytes it never uses earns it no
/// more time (its wall-clock deadline: [`RENDER_DEADLINE`]). Lower when the configured
/// limits are lower.
pub const RENDER_CPU_SECONDS: u64 = 20;
/// The wall-clock deadline of one rendering, whatever its file's size.
pub const RENDER_DEADLINE: Duration = Duration::from_secs(30);

/// The CPU time and the wall-clock deadline of a job: an extraction's grow with its input
/// ([`allowance`]), a rendering's are fixed ([`RENDER_CPU_SECONDS`], [`RENDER_DEADLINE`]).
pub fn job_limits(
    cpu_seconds: u64,
    deadline: Duration,
    input: &ExtractInput<'_>,
) -> (u64, Duration) {
    if input.options.render.is_some() {
        return (
            cpu_seconds.min(RENDER_CPU_SECONDS),
            deadline.min(RENDER_DEADLINE),
        );
    }
    (
        allowance(Duration::from_secs(cpu_seconds), input.bytes.len()).as_secs(),
        allowance(deadline, input.bytes.len()),
    )
}

/// `base` plus [`SECONDS_PER_MIB`] for each whole MiB of an input of `bytes`, past the first.
pub fn allowance(base: Duration, bytes: usize) -> Duration {
    let extra_mib = (bytes as u64 / (1024 * 1024)).saturating_sub(1);
    base.saturating_add(Duration::from_secs(
        extra_mib.saturating_mul(SECONDS_PER_MIB),
    ))
}

impl Default for IsolationConfig {
    fn default() -> Self {
        IsolationConfig {
            mode: Isolation::Processes,
            program: None,
            memory_bytes: 1024 * 1024 * 1024,
            cpu_seconds: 60,
            deadline: Duration::from_secs(60),
        }
    }
}

impl IsolationConfig {
    /// The worker program and its arguments.
    pub fn command(&self) -> io::Result<(PathBuf, Vec<OsString>)> {
        let program = match &self.program {
            Some(p) => p.clone(),
            // The running executable itself, even after its file was replaced (an upgrade
            // while a daemon runs): `/proc/self/exe` names the inode, not the path.
            None => Some(PathBuf::from("/proc/self/exe"))
                .filter(|p| p.metadata().is_ok_and(|m| m.is_file()))
                .map_or_else(std::env::current_exe, Ok)?,
        };
        let args = vec![
            OsString::from(WORKER_ARG),
            OsString::from(format!("--memory-bytes={}", self.memory_bytes)),
            OsString::from(format!("--cpu-seconds={}", self.cpu_seconds)),
            OsString::from(format!("--parent={}", std::process::id())),
        ];
        Ok((program, args))
    }
}

/// If this process was started as an extraction worker, serve jobs on stdin/stdout until
/// stdin closes (or its parent dies: it is killed with it), then exit. Call it first thing in `main` of every binary that uses the
/// library with [`Isolation::Processes`] and no explicit worker program.
pub fn run_worker_if_requested() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(WORKER_ARG)) {
        return;
    }
    let mut memory = None;
    let mut cpu = None;
    let mut parent = None;
    for a in args {
        let a = a.to_string_lossy();
        if let Some(v) = a.strip_prefix("--memory-bytes=") {
            memory = v.parse().ok();
        } else if let Some(v) = a.strip_prefix("--cpu-seconds=") {
            cpu = v.parse().ok();
        } else if let Some(v) = a.strip_prefix("--parent=") {
            parent = v.parse().ok();
        }
    }
    let code = match worker::serve(memory, cpu.unwrap_or(60), parent) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("extraction worker: {e}");
            3
        }
    };
    std::process::exit(code);
}

/// Extraction in this process (panics caught by [`extractors::extract`]).
#[derive(Debug, Default)]
pub struct InProcess;

impl Extractor for InProcess {
    fn name(&self) -> &'static str {
        "in-process"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        let result = extractors::extract(input);
        log_ocr_notes(input, &result);
        result
    }
}

/// Log what OCR could not do for a file: a missing program once per process (every file
/// says so in its objects' `ocr_error`), other errors and skipped pages per file.
pub fn log_ocr_notes(input: &ExtractInput<'_>, result: &Result<Extraction, ExtractError>) {
    static MISSING_LOGGED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Ok(extraction) = result else { return };
    let mut errors = extraction
        .objects
        .iter()
        .filter_map(|o| o.metadata.get("ocr_error").and_then(|v| v.as_str()));
    if let Some(error) = errors.next() {
        if error.contains("not found") {
            // Once per missing program.
            let mut logged = crate::lock(&MISSING_LOGGED);
            if !logged.iter().any(|e| e == error) {
                logged.push(error.to_string());
                tracing::warn!("OCR unavailable, files are indexed without OCR text: {error}");
            }
        } else {
            tracing::warn!(file = %input.locator, "OCR failed: {error}");
        }
    }
    if let Some(note) = extraction
        .objects
        .iter()
        .find_map(|o| o.metadata.get("ocr_note").and_then(|v| v.as_str()))
    {
        tracing::warn!(file = %input.locator, "not every image-only page was OCR'd: {note}");
    }
}

/// The extractor for `config`.
pub fn build(config: &IsolationConfig) -> Box<dyn Extractor> {
    match config.mode {
        Isolation::Processes => Box::new(WorkerPool::new(config.clone())),
        Isolation::InProcess => Box::new(InProcess),
    }
}

#[cfg(test)]
mod allowance_tests {
    use super::*;

    #[test]
    fn big_inputs_get_more_time_small_ones_the_base() {
        let base = Duration::from_secs(60);
        assert_eq!(allowance(base, 0), base);
        assert_eq!(allowance(base, 1024 * 1024), base);
        assert_eq!(allowance(base, 1024 * 1024 + 1), base);
        assert_eq!(
            allowance(base, 2 * 1024 * 1024 + 1),
            Duration::from_secs(80)
        );
        // The 4.7 MB octave manual of the dev corpus: 60 + 3 × 20 s.
        assert_eq!(allowance(base, 4_707_275), Duration::from_secs(120));
        assert_eq!(allowance(Duration::MAX, usize::MAX), Duration::MAX);
    }

    #[test]
    fn a_rendering_has_fixed_limits_whatever_its_files_size() {
        let bytes = vec![b' '; 30 * 1024 * 1024];
        let locator = extractors::Locator::root("padded.pdf");
        let detected = extractors::detect(b"%PDF-1.4\n", "padded.pdf");
        let extract = extractors::ExtractOptions::default();
        let render = extractors::ExtractOptions {
            render: Some(extractors::RenderRequest {
                page: 1,
                dpi: 100,
                region: None,
                max_bytes: 1_000_000,
            }),
            ..extractors::ExtractOptions::default()
        };
        let limits = |options: &extractors::ExtractOptions, cpu: u64, wall: u64| {
            job_limits(
                cpu,
                Duration::from_secs(wall),
                &ExtractInput {
                    bytes: &bytes,
                    locator: &locator,
                    file_hash: "feed",
                    detected: &detected,
                    options,
                },
            )
        };
        // An extraction of 30 MiB: 60 + 29 × 20 s.
        assert_eq!(limits(&extract, 60, 60), (640, Duration::from_secs(640)));
        // A rendering of the same file: the fixed limits, or the configured ones if lower.
        assert_eq!(
            limits(&render, 60, 60),
            (RENDER_CPU_SECONDS, RENDER_DEADLINE)
        );
        assert_eq!(limits(&render, 5, 3), (5, Duration::from_secs(3)));
    }
}
