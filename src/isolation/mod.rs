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
//! Frames on the pipes: a request is `u32` header length, the JSON header (locator, hash,
//! detected type), `u64` payload length and the file's bytes; a response is `u64` length and
//! the JSON of `Result<Extraction, ExtractError>`. All integers are little-endian.

use std::collections::{HashMap, VecDeque};
use std::ffi::OsString;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use extractors::{Detected, ExtractError, ExtractInput, Extraction, Extractor, Locator};

use crate::lock;
use serde::{Deserialize, Serialize};

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
    pub mode: Isolation,
    /// The worker executable; `None` runs the current executable, whose `main` must call
    /// [`run_worker_if_requested`] first (the `ingest` binary does).
    pub program: Option<PathBuf>,
    /// Address space of a worker (`RLIMIT_AS`).
    pub memory_bytes: u64,
    /// CPU time one job may use (`RLIMIT_CPU`, moved on before each job).
    pub cpu_seconds: u64,
    /// Wall-clock time one job may take before its worker is killed.
    pub deadline: Duration,
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
    pub(crate) fn command(&self) -> io::Result<(PathBuf, Vec<OsString>)> {
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
        ];
        Ok((program, args))
    }
}

/// If this process was started as an extraction worker, serve jobs on stdin/stdout until
/// stdin closes, then exit. Call it first thing in `main` of every binary that uses the
/// library with [`Isolation::Processes`] and no explicit worker program.
pub fn run_worker_if_requested() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(WORKER_ARG)) {
        return;
    }
    let mut memory = None;
    let mut cpu = None;
    for a in args {
        let a = a.to_string_lossy();
        if let Some(v) = a.strip_prefix("--memory-bytes=") {
            memory = v.parse().ok();
        } else if let Some(v) = a.strip_prefix("--cpu-seconds=") {
            cpu = v.parse().ok();
        }
    }
    let code = match serve(memory, cpu.unwrap_or(60)) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("extraction worker: {e}");
            3
        }
    };
    std::process::exit(code);
}

#[derive(Serialize, Deserialize)]
struct JobHeader {
    locator: Locator,
    file_hash: String,
    detected: Detected,
}

/// The worker's loop: limits first, then one job per request frame.
fn serve(memory_bytes: Option<u64>, cpu_seconds: u64) -> io::Result<()> {
    use nix::sys::resource::{setrlimit, Resource, RLIM_INFINITY};
    // No core files from a job that hits a limit; then the memory cap.
    setrlimit(Resource::RLIMIT_CORE, 0, 0).map_err(io::Error::other)?;
    if let Some(bytes) = memory_bytes {
        setrlimit(Resource::RLIMIT_AS, bytes, bytes).map_err(io::Error::other)?;
    }
    let mut input = BufReader::new(io::stdin().lock());
    let mut output = BufWriter::new(io::stdout().lock());
    loop {
        let Some((header, bytes)) = read_request(&mut input)? else {
            return Ok(());
        };
        // The CPU limit counts from what this worker used so far.
        let used = cpu_used().as_secs();
        setrlimit(
            Resource::RLIMIT_CPU,
            used.saturating_add(cpu_seconds),
            RLIM_INFINITY,
        )
        .map_err(io::Error::other)?;
        let result = extractors::extract(&ExtractInput {
            bytes: &bytes,
            locator: &header.locator,
            file_hash: &header.file_hash,
            detected: &header.detected,
        });
        drop(bytes);
        write_response(&mut output, &result)?;
    }
}

/// Write one request frame: the job's header, then the file's bytes.
fn write_request(w: &mut impl Write, input: &ExtractInput<'_>) -> io::Result<()> {
    let header = serde_json::to_vec(&JobHeader {
        locator: input.locator.clone(),
        file_hash: input.file_hash.to_string(),
        detected: input.detected.clone(),
    })
    .map_err(io::Error::other)?;
    let header_len = u32::try_from(header.len()).map_err(io::Error::other)?;
    w.write_all(&header_len.to_le_bytes())?;
    w.write_all(&header)?;
    w.write_all(&(input.bytes.len() as u64).to_le_bytes())?;
    w.write_all(input.bytes)?;
    w.flush()
}

/// Read one request frame; `None` when the input ends cleanly before a frame starts.
fn read_request(r: &mut impl Read) -> io::Result<Option<(JobHeader, Vec<u8>)>> {
    let Some(header_len) = read_u32_or_eof(r)? else {
        return Ok(None);
    };
    let header = read_exact_vec(r, u64::from(header_len), MAX_HEADER)?;
    let header: JobHeader = serde_json::from_slice(&header).map_err(io::Error::other)?;
    let payload_len = read_u64(r)?;
    let bytes = read_exact_vec(r, payload_len, u64::MAX)?;
    Ok(Some((header, bytes)))
}

/// Write one response frame: the JSON of the job's result.
fn write_response(w: &mut impl Write, result: &Result<Extraction, ExtractError>) -> io::Result<()> {
    let response = serde_json::to_vec(result).map_err(io::Error::other)?;
    w.write_all(&(response.len() as u64).to_le_bytes())?;
    w.write_all(&response)?;
    w.flush()
}

/// Read one response frame; a frame longer than `max` is corrupt and refused before
/// anything is allocated for it.
fn read_response(r: &mut impl Read, max: u64) -> io::Result<Result<Extraction, ExtractError>> {
    let len = read_u64(r)?;
    let body = read_exact_vec(r, len, max)?;
    serde_json::from_slice(&body).map_err(io::Error::other)
}

fn cpu_used() -> Duration {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_SELF).map_or(Duration::ZERO, |u| {
        let t = |tv: nix::sys::time::TimeVal| {
            Duration::new(
                u64::try_from(tv.tv_sec()).unwrap_or(0),
                u32::try_from(tv.tv_usec()).unwrap_or(0) * 1000,
            )
        };
        t(u.user_time()) + t(u.system_time())
    })
}

/// Largest request header (locator, hash, type) accepted.
const MAX_HEADER: u64 = 16 * 1024 * 1024;
/// Bytes of a worker's stderr kept to explain its death.
const STDERR_TAIL: usize = 4096;

fn read_u32_or_eof(r: &mut impl Read) -> io::Result<Option<u32>> {
    let mut b = [0u8; 4];
    let mut got = 0;
    while let Some(rest) = b.get_mut(got..).filter(|rest| !rest.is_empty()) {
        match r.read(rest) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(u32::from_le_bytes(b)))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Read exactly `len` bytes, refusing lengths above `max` (a corrupt frame).
fn read_exact_vec(r: &mut impl Read, len: u64, max: u64) -> io::Result<Vec<u8>> {
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame of {len} bytes (limit {max})"),
        ));
    }
    // Grown as bytes arrive, not reserved from the declared length.
    let mut out = Vec::new();
    io::copy(&mut r.take(len), &mut out)?;
    if out.len() as u64 != len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(out)
}

/// One live worker process.
struct Worker {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The end of what the worker wrote to stderr (a panic message, "memory allocation of …
    /// failed", "has overflowed its stack").
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// The thread filling `stderr`; it ends when the worker's stderr closes.
    stderr_thread: std::thread::JoinHandle<()>,
}

impl Worker {
    fn spawn(config: &IsolationConfig) -> io::Result<Worker> {
        let (program, args) = config.command()?;
        let mut child = Command::new(&program)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", program.display())))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("worker pipes missing"));
        };
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let sink = Arc::clone(&tail);
        let stderr_thread = std::thread::Builder::new()
            .name("worker-stderr".into())
            .spawn(move || drain_stderr(stderr, &sink))?;
        Ok(Worker {
            child,
            stdin: BufWriter::new(stdin),
            stdout: BufReader::new(stdout),
            stderr: tail,
            stderr_thread,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, input: &ExtractInput<'_>) -> io::Result<()> {
        write_request(&mut self.stdin, input)
    }

    /// The worker's answer; a frame longer than the worker could hold in memory (`max`) is
    /// corrupt and refused before anything is allocated for it.
    fn receive(&mut self, max: u64) -> io::Result<Result<Extraction, ExtractError>> {
        read_response(&mut self.stdout, max)
    }

    /// Why the worker is gone: reap it and read its exit status and last words.
    fn death(mut self, timed_out: Option<Duration>, cpu_seconds: u64) -> String {
        use std::os::unix::process::ExitStatusExt;
        let _ = self.child.kill();
        let status = self.child.wait();
        if let Some(limit) = timed_out {
            return format!("timed out after {} s", limit.as_secs_f64());
        }
        // The worker is gone, so its stderr is closed: the thread ends with the last bytes.
        let _ = self.stderr_thread.join();
        let said: String = {
            let tail = lock(&self.stderr);
            let bytes: Vec<u8> = tail.iter().copied().collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        let last_words = said
            .lines()
            .rev()
            .find(|l| {
                l.contains("memory allocation")
                    || l.contains("overflowed its stack")
                    || l.contains("panicked")
                    || l.contains("extraction worker:")
            })
            .map(|l| l.trim().to_string());
        let how = match status {
            Ok(s) => match (s.signal(), s.code()) {
                (Some(24), _) => format!("exceeded the CPU time limit of {cpu_seconds} s"),
                (Some(9), _) => "killed (signal 9)".to_string(),
                (Some(6), _) => "aborted (signal 6)".to_string(),
                (Some(11), _) => "crashed (segmentation fault)".to_string(),
                (Some(sig), _) => format!("killed by signal {sig}"),
                (None, Some(code)) => format!("exited with status {code}"),
                (None, None) => "ended".to_string(),
            },
            Err(e) => format!("could not be reaped: {e}"),
        };
        match last_words {
            Some(w) if w.contains("overflowed its stack") => format!("stack overflow: {how}"),
            Some(w) if w.contains("memory allocation") => {
                format!("out of memory ({w}): {how}")
            }
            Some(w) => format!("{how}: {w}"),
            None => how,
        }
    }
}

fn drain_stderr(mut stderr: impl Read, tail: &Mutex<VecDeque<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match stderr.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut t = lock(tail);
                t.extend(buf.get(..n).unwrap_or(&[]));
                let excess = t.len().saturating_sub(STDERR_TAIL);
                t.drain(..excess);
            }
        }
    }
}

/// Kills workers whose job is past its deadline.
struct Watchdog {
    state: Mutex<WatchState>,
    wake: Condvar,
}

#[derive(Default)]
struct WatchState {
    /// job → (worker pid, deadline)
    jobs: HashMap<u64, (u32, Instant)>,
    /// Jobs whose worker the watchdog killed.
    expired: Vec<u64>,
    stop: bool,
}

impl Watchdog {
    fn start() -> Arc<Watchdog> {
        let dog = Arc::new(Watchdog {
            state: Mutex::new(WatchState::default()),
            wake: Condvar::new(),
        });
        let weak = Arc::downgrade(&dog);
        let _ = std::thread::Builder::new()
            .name("extract-watchdog".into())
            .spawn(move || {
                while let Some(dog) = weak.upgrade() {
                    if !dog.tick() {
                        return;
                    }
                }
            });
        dog
    }

    /// Wait for the next deadline (or a change), kill what is overdue. False once stopped.
    fn tick(&self) -> bool {
        let mut st = lock(&self.state);
        if st.stop {
            return false;
        }
        let now = Instant::now();
        let overdue: Vec<(u64, u32)> = st
            .jobs
            .iter()
            .filter(|(_, (_, deadline))| *deadline <= now)
            .map(|(job, (pid, _))| (*job, *pid))
            .collect();
        for (job, pid) in overdue {
            st.jobs.remove(&job);
            st.expired.push(job);
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let wait = st
            .jobs
            .values()
            .map(|(_, d)| d.saturating_duration_since(now))
            .min()
            .unwrap_or(Duration::from_millis(500))
            .min(Duration::from_millis(500));
        drop(self.wake.wait_timeout(st, wait));
        true
    }

    fn watch(&self, job: u64, pid: u32, deadline: Instant) {
        lock(&self.state).jobs.insert(job, (pid, deadline));
        self.wake.notify_all();
    }

    /// Stop watching `job`; true if the watchdog already killed its worker.
    fn release(&self, job: u64) -> bool {
        let mut st = lock(&self.state);
        st.jobs.remove(&job);
        match st.expired.iter().position(|j| *j == job) {
            Some(i) => {
                st.expired.swap_remove(i);
                true
            }
            None => false,
        }
    }

    fn stop(&self) {
        lock(&self.state).stop = true;
        self.wake.notify_all();
    }
}

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
    pub fn new(config: IsolationConfig) -> Self {
        WorkerPool {
            config,
            idle: Mutex::new(Vec::new()),
            watchdog: Watchdog::start(),
            next_job: AtomicU64::new(0),
        }
    }

    /// Process ids of the idle workers (for tests and diagnostics).
    pub fn idle_pids(&self) -> Vec<u32> {
        lock(&self.idle).iter().map(Worker::pid).collect()
    }

    /// A live idle worker, or a new one.
    fn checkout(&self) -> io::Result<Worker> {
        loop {
            let candidate = lock(&self.idle).pop();
            match candidate {
                Some(mut w) => {
                    if matches!(w.child.try_wait(), Ok(None)) {
                        return Ok(w);
                    }
                    let _ = w.child.wait(); // died while idle: costs nothing, replace it
                }
                None => return Worker::spawn(&self.config),
            }
        }
    }

    fn run(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
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
                Err(_) => {
                    let _ = w.child.kill();
                    let _ = w.child.wait();
                }
            }
        }
        let Some(mut w) = worker else {
            return aborted("extraction worker did not accept the job".into());
        };
        let job = self.next_job.fetch_add(1, Ordering::Relaxed);
        self.watchdog
            .watch(job, w.pid(), Instant::now() + self.config.deadline);
        let answer = w.receive(self.config.memory_bytes);
        let expired = self.watchdog.release(job);
        match answer {
            Ok(result) if !expired => {
                lock(&self.idle).push(w);
                result
            }
            _ => {
                let timed_out = expired.then_some(self.config.deadline);
                aborted(w.death(timed_out, self.config.cpu_seconds))
            }
        }
    }
}

impl Extractor for WorkerPool {
    fn name(&self) -> &'static str {
        "isolated"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        self.run(input)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.watchdog.stop();
        for mut w in lock(&self.idle).drain(..) {
            // Closing stdin ends the worker's loop; kill in case it is stuck.
            drop(w.stdin);
            let _ = w.child.kill();
            let _ = w.child.wait();
        }
    }
}

/// Extraction in this process (panics caught by [`extractors::extract`]).
#[derive(Debug, Default)]
pub struct InProcess;

impl Extractor for InProcess {
    fn name(&self) -> &'static str {
        "in-process"
    }

    fn extract(&self, input: &ExtractInput<'_>) -> Result<Extraction, ExtractError> {
        extractors::extract(input)
    }
}

/// The extractor for `config`.
pub(crate) fn build(config: &IsolationConfig) -> Box<dyn Extractor> {
    match config.mode {
        Isolation::Processes => Box::new(WorkerPool::new(config.clone())),
        Isolation::InProcess => Box::new(InProcess),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_frame(bytes: &[u8]) -> Vec<u8> {
        let locator = Locator::root("in.zip").member("a.txt");
        let detected = extractors::detect(bytes, "a.txt");
        let mut frame = Vec::new();
        write_request(
            &mut frame,
            &ExtractInput {
                bytes,
                locator: &locator,
                file_hash: "feed",
                detected: &detected,
            },
        )
        .unwrap();
        frame
    }

    fn response_frame(result: &Result<Extraction, ExtractError>) -> Vec<u8> {
        let mut frame = Vec::new();
        write_response(&mut frame, result).unwrap();
        frame
    }

    fn a_result() -> Result<Extraction, ExtractError> {
        let locator = Locator::root("a.txt");
        let detected = extractors::detect(b"one\n\ntwo\n", "a.txt");
        extractors::extract(&ExtractInput {
            bytes: b"one\n\ntwo\n",
            locator: &locator,
            file_hash: "feed",
            detected: &detected,
        })
    }

    #[test]
    fn request_frames_round_trip_and_end_cleanly() {
        let mut stream = request_frame(b"hello\n");
        stream.extend(request_frame(b""));
        let mut r = stream.as_slice();
        let (header, bytes) = read_request(&mut r).unwrap().unwrap();
        assert_eq!(header.locator.to_string(), "in.zip!/a.txt");
        assert_eq!(header.file_hash, "feed");
        assert_eq!(header.detected, extractors::detect(b"hello\n", "a.txt"));
        assert_eq!(bytes, b"hello\n");
        let (_, bytes) = read_request(&mut r).unwrap().unwrap();
        assert!(bytes.is_empty());
        assert!(read_request(&mut r).unwrap().is_none(), "clean end");
    }

    #[test]
    fn response_frames_round_trip_results_and_errors() {
        let ok = a_result();
        assert!(ok.as_ref().is_ok_and(|e| !e.objects.is_empty()));
        let err: Result<Extraction, ExtractError> =
            Err(ExtractError::Aborted("killed (signal 9)".into()));
        let mut stream = response_frame(&ok);
        stream.extend(response_frame(&err));
        let mut r = stream.as_slice();
        assert_eq!(read_response(&mut r, u64::MAX).unwrap(), ok);
        assert_eq!(read_response(&mut r, u64::MAX).unwrap(), err);
    }

    #[test]
    fn a_truncated_frame_is_an_error_at_every_cut() {
        let request = request_frame(b"some bytes of a file");
        assert!(read_request(&mut &request[..0]).unwrap().is_none());
        for cut in 1..request.len() {
            let e = read_request(&mut &request[..cut]).map(|_| ()).unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::UnexpectedEof,
                "request cut at {cut}"
            );
        }
        let response = response_frame(&a_result());
        for cut in 0..response.len() {
            let e = read_response(&mut &response[..cut], u64::MAX)
                .map(|_| ())
                .unwrap_err();
            assert_eq!(
                e.kind(),
                io::ErrorKind::UnexpectedEof,
                "response cut at {cut}"
            );
        }
    }

    #[test]
    fn an_oversized_length_is_refused_before_reading_the_body() {
        // A response longer than the limit: refused by its length alone.
        let response = response_frame(&a_result());
        let len = response.len() as u64 - 8;
        let e = read_response(&mut response.as_slice(), len - 1).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains(&format!("limit {}", len - 1)), "{e}");
        assert!(read_response(&mut response.as_slice(), len).is_ok());
        // A length no worker could answer with, and nothing behind it.
        let e = read_response(&mut &u64::MAX.to_le_bytes()[..], 1 << 30).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // A request header over MAX_HEADER.
        let header_len = u32::try_from(MAX_HEADER + 1).unwrap();
        let e = read_request(&mut &header_len.to_le_bytes()[..])
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    /// A real process that would run for a minute.
    fn sleeper() -> Child {
        Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("start sleep")
    }

    /// The child's exit status, or `None` if it is still running after `limit` (a hang
    /// guard, not a timing assertion).
    fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Some(status) = child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    #[test]
    fn the_watchdog_kills_a_job_past_its_deadline_and_only_that_one() {
        use std::os::unix::process::ExitStatusExt;
        let dog = Watchdog::start();
        let mut late = sleeper();
        let mut on_time = sleeper();
        dog.watch(1, late.id(), Instant::now() + Duration::from_millis(100));
        dog.watch(2, on_time.id(), Instant::now() + Duration::from_secs(3600));
        let status = exit_within(&mut late, Duration::from_secs(30));
        assert_eq!(
            status.and_then(|s| s.signal()),
            Some(9),
            "killed by SIGKILL"
        );
        assert!(dog.release(1), "job 1 reported as expired");
        assert!(!dog.release(1), "reported once");
        // The other job's worker lives on and is released as not expired.
        assert!(on_time.try_wait().unwrap().is_none());
        assert!(!dog.release(2));
        dog.stop();
        on_time.kill().unwrap();
        on_time.wait().unwrap();
    }

    #[test]
    fn a_released_job_is_not_killed_at_its_deadline() {
        let dog = Watchdog::start();
        let mut child = sleeper();
        dog.watch(7, child.id(), Instant::now() + Duration::from_millis(100));
        assert!(!dog.release(7));
        // Long past the deadline, the watchdog having woken up several times meanwhile.
        std::thread::sleep(Duration::from_millis(600));
        assert!(
            child.try_wait().unwrap().is_none(),
            "released job's worker killed"
        );
        dog.stop();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
