//! One extraction worker process, from both ends: [`serve`], the loop a worker runs (limits
//! first, then one job per request frame), and [`Worker`], the parent's handle on a live worker
//! (start it, send a job, read the answer, and tell why it died from its exit status and the
//! end of its stderr).

use std::collections::VecDeque;
use std::io::{self, BufReader, BufWriter, Read};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use extractors::{ExtractError, ExtractInput, Extraction};

use super::frame::{read_request, read_response, write_request, write_response};
use super::IsolationConfig;
use crate::lock;

/// Bytes of a worker's stderr kept to explain its death.
const STDERR_TAIL: usize = 4096;

/// The worker's loop: tied to its parent's life first, then limits, then one job per request
/// frame until stdin closes (the parent is done, or gone).
pub(super) fn serve(
    memory_bytes: Option<u64>,
    cpu_seconds: u64,
    parent: Option<i32>,
) -> io::Result<()> {
    use nix::sys::resource::{setrlimit, Resource, RLIM_INFINITY};
    // Killed when the parent dies, even in the middle of a job (stdin's end is only seen
    // between jobs). The signal is sent when the thread that started this process ends:
    // the parent starts workers from one thread that lives as long as it (`Worker::spawn`).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(io::Error::other)?;
    // A parent that died before the signal was asked for: no one to serve.
    if parent.is_some_and(|p| nix::unistd::getppid().as_raw() != p) {
        return Err(io::Error::other("the parent process is gone"));
    }
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
        let input = ExtractInput {
            bytes: &bytes,
            locator: &header.locator,
            file_hash: &header.file_hash,
            detected: &header.detected,
            options: &header.options,
        };
        // A rendering's limit is fixed, an extraction's grows with its input.
        let (allowed, _) = super::job_limits(cpu_seconds, Duration::MAX, &input);
        setrlimit(
            Resource::RLIMIT_CPU,
            used.saturating_add(allowed),
            RLIM_INFINITY,
        )
        .map_err(io::Error::other)?;
        crate::failpoint::hit("extract.job");
        let result = extractors::extract(&input);
        drop(bytes);
        write_response(&mut output, &result)?;
    }
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

/// One live worker process.
pub(super) struct Worker {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The end of what the worker wrote to stderr (a panic message, "memory allocation of …
    /// failed", "has overflowed its stack").
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// The thread filling `stderr`; it ends when the worker's stderr closes.
    stderr_thread: std::thread::JoinHandle<()>,
}

/// A request to start a worker, and where its answer goes.
type SpawnRequest = (IsolationConfig, mpsc::Sender<io::Result<Worker>>);

/// The thread that starts every worker of this process: a worker's parent-death signal
/// fires when the thread that started it ends, so they are all started by this one, which
/// lives as long as the process. `None` if it could not be started.
fn spawner() -> Option<&'static Mutex<mpsc::Sender<SpawnRequest>>> {
    static SPAWNER: OnceLock<Option<Mutex<mpsc::Sender<SpawnRequest>>>> = OnceLock::new();
    SPAWNER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<SpawnRequest>();
            let started = std::thread::Builder::new()
                .name("worker-spawner".into())
                .spawn(move || {
                    for (config, reply) in rx {
                        let _ = reply.send(Worker::spawn_here(&config));
                    }
                });
            match started {
                Ok(_) => Some(Mutex::new(tx)),
                Err(e) => {
                    tracing::error!("no thread to start extraction workers: {e}");
                    None
                }
            }
        })
        .as_ref()
}

impl Worker {
    /// Start a worker (on the process's spawner thread, see [`spawner`]).
    pub(super) fn spawn(config: &IsolationConfig) -> io::Result<Worker> {
        let spawner = spawner().ok_or_else(|| io::Error::other("no thread to start workers"))?;
        let (reply, answer) = mpsc::channel();
        lock(spawner)
            .send((config.clone(), reply))
            .map_err(|_| io::Error::other("the worker spawner thread is gone"))?;
        answer
            .recv()
            .map_err(|_| io::Error::other("the worker spawner thread is gone"))?
    }

    /// Start a worker from this thread.
    fn spawn_here(config: &IsolationConfig) -> io::Result<Worker> {
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

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the worker process is still running (false once it exited or cannot be asked).
    pub(super) fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Reap a worker that is no longer running.
    pub(super) fn reap(mut self) {
        let _ = self.child.wait();
    }

    /// Kill the worker and reap it.
    pub(super) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Close the worker's stdin, which ends its loop; kill it in case it is stuck, and reap it.
    pub(super) fn shut_down(self) {
        let Worker {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
    }

    pub(super) fn send(&mut self, input: &ExtractInput<'_>) -> io::Result<()> {
        write_request(&mut self.stdin, input)
    }

    /// The worker's answer; a frame longer than the worker could hold in memory (`max`) is
    /// corrupt and refused before anything is allocated for it.
    pub(super) fn receive(&mut self, max: u64) -> io::Result<Result<Extraction, ExtractError>> {
        read_response(&mut self.stdout, max)
    }

    /// Why the worker is gone: reap it and read its exit status and last words.
    pub(super) fn death(mut self, timed_out: Option<Duration>, cpu_seconds: u64) -> String {
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
