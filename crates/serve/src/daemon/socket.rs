//! The daemon's local socket. While `ingest watch` runs it holds the index (the store allows
//! one writer), so `ingest search`, `ingest status` and the agent's tools (the CLI faces and
//! `ingest mcp`, through [`ingest::ToolHost`]) ask the daemon instead of opening the data
//! directory: one JSON request per connection, one JSON answer. A lingering reader
//! ([`Listening::serve_reader`], the process a read command leaves behind) answers the same
//! requests, and also [`Request::StepAside`], which a writer sends to have the store back.
//!
//! The socket is owner-only (`0600`, in the owner-only data directory); at most
//! [`MAX_CONNECTIONS`] are answered at a time (one more gets a `busy` error and is closed), a
//! client that has not sent its whole request within [`REQUEST_TIMEOUT`] (however it trickles)
//! is dropped, the requests being read hold at most [`MAX_REQUEST_BYTES_IN_FLIGHT`] bytes
//! together (more: `busy`), and a request's JSON values are counted before they are built
//! (`ingest_base::bounded_json`).

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

pub use ingest::tools::daemon_client::{
    ask, ask_tool, Request, REQUEST_TIMEOUT, TOOL_ANSWER_TIMEOUT,
};
use ingest::Ingestor;
use ingest_base::error::{Error, Result};
use ingest_base::gate::{ByteGate, Permit};
use ingest_base::lock;

/// The longest request line a client may send (a query and its scope, or a tool call: a
/// `store_tool_result` carries a tool result of up to the default
/// `WorkflowConfig::max_result_bytes`, 16 MiB, escaped as JSON).
const MAX_REQUEST_BYTES: u64 = 64 * 1024 + 2 * 16 * 1024 * 1024;

/// Connections answered at the same time; more are told the daemon is busy.
pub const MAX_CONNECTIONS: usize = 32;

/// Bytes of requests being read at once, every connection together: two of the longest.
pub const MAX_REQUEST_BYTES_IN_FLIGHT: u64 = 2 * MAX_REQUEST_BYTES;

/// What a lingering reader's owner watches: when it was last asked something, and whether a
/// writer asked it to step aside.
#[derive(Debug)]
pub struct Lingering {
    started: std::time::Instant,
    /// Milliseconds after `started` of the last connection accepted or answered.
    last_request_ms: AtomicU64,
    /// Connections being answered now.
    busy: AtomicUsize,
    step_aside: AtomicBool,
}

impl Lingering {
    fn new() -> Self {
        Lingering {
            started: std::time::Instant::now(),
            last_request_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
            step_aside: AtomicBool::new(false),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_request_ms.store(now, Ordering::SeqCst);
    }

    /// How long no client has been connected (zero while one is being answered).
    pub fn idle(&self) -> Duration {
        if self.busy.load(Ordering::SeqCst) > 0 {
            return Duration::ZERO;
        }
        let last = Duration::from_millis(self.last_request_ms.load(Ordering::SeqCst));
        self.started.elapsed().saturating_sub(last)
    }

    /// Whether a writer asked this reader to let go of the store.
    pub fn asked_to_step_aside(&self) -> bool {
        self.step_aside.load(Ordering::SeqCst)
    }
}

/// Answers requests on a Unix socket until dropped.
pub struct Server {
    path: PathBuf,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A bound socket that does not answer yet: clients that connect wait in its backlog until
/// [`Listening::serve`] starts. Dropped unserved, it removes its socket file.
pub struct Listening {
    /// `None` once handed to the server, which then owns the socket file.
    listener: Option<UnixListener>,
    path: PathBuf,
}

impl Drop for Listening {
    fn drop(&mut self) {
        if self.listener.is_some() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Listening {
    /// Answer requests with `ingestor`; `status` is merged into status answers.
    pub fn serve(mut self, ingestor: Arc<Ingestor>, status: Arc<Mutex<Value>>) -> Result<Server> {
        let listener = self
            .listener
            .take()
            .ok_or_else(|| Error::Daemon("socket already served".into()))?;
        Server::start(ingestor, listener, &self.path, status, None)
    }

    /// Answer requests as a lingering reader: as [`Listening::serve`], and a
    /// [`Request::StepAside`] is granted. The owner watches the returned [`Lingering`] and
    /// drops the server when it is idle or asked to step aside.
    pub fn serve_reader(
        mut self,
        ingestor: Arc<Ingestor>,
        status: Arc<Mutex<Value>>,
    ) -> Result<(Server, Arc<Lingering>)> {
        let listener = self
            .listener
            .take()
            .ok_or_else(|| Error::Daemon("socket already served".into()))?;
        let lingering = Arc::new(Lingering::new());
        let server = Server::start(
            ingestor,
            listener,
            &self.path,
            status,
            Some(Arc::clone(&lingering)),
        )?;
        Ok((server, lingering))
    }
}

impl Server {
    /// Bind `path` (a stale socket file there, left by a daemon that was killed, is replaced:
    /// the caller has checked that no daemon answers on it).
    pub fn bind(path: &Path) -> Result<Listening> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).map_err(|e| Error::io(path, e))?;
        // Owner-only. Between bind and chmod the socket has the umask's mode, but it lies in the
        // owner-only data directory, which no one else can enter.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| Error::io(path, e))?;
        Ok(Listening {
            listener: Some(listener),
            path: path.to_path_buf(),
        })
    }

    fn start(
        ingestor: Arc<Ingestor>,
        listener: UnixListener,
        path: &Path,
        status: Arc<Mutex<Value>>,
        lingering: Option<Arc<Lingering>>,
    ) -> Result<Server> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io(path, e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("daemon-socket".into())
            .spawn(move || {
                let active = Arc::new(AtomicUsize::new(0));
                let reading = ByteGate::new(MAX_REQUEST_BYTES_IN_FLIGHT);
                while !flag.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            if let Some(l) = &lingering {
                                l.touch();
                            }
                            if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                                refuse_busy(&stream);
                                continue;
                            }
                            let slot = Slot::take(&active);
                            let ingestor = Arc::clone(&ingestor);
                            let status = Arc::clone(&status);
                            let reading = reading.clone();
                            let lingering = lingering.clone();
                            let spawned = std::thread::Builder::new()
                                .name("daemon-client".into())
                                .spawn(move || {
                                    let _slot = slot;
                                    if let Some(l) = &lingering {
                                        l.busy.fetch_add(1, Ordering::SeqCst);
                                    }
                                    answer(
                                        stream,
                                        &ingestor,
                                        &status,
                                        &reading,
                                        lingering.as_deref(),
                                    );
                                    if let Some(l) = &lingering {
                                        l.touch();
                                        l.busy.fetch_sub(1, Ordering::SeqCst);
                                    }
                                });
                            if let Err(e) = spawned {
                                tracing::warn!("daemon socket: no thread for a client: {e}");
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            // Wait for the next client (at once when one connects), looking
                            // at the stop flag every 100 ms.
                            wait_readable(&listener, 100);
                        }
                        Err(e) => {
                            tracing::warn!("daemon socket: {e}");
                            std::thread::sleep(Duration::from_millis(200));
                        }
                    }
                }
            })
            .map_err(|e| Error::io(path, e))?;
        Ok(Server {
            path: path.to_path_buf(),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One of the [`MAX_CONNECTIONS`] places, given back when the client's thread ends.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(active: &Arc<AtomicUsize>) -> Slot {
        active.fetch_add(1, Ordering::SeqCst);
        Slot(Arc::clone(active))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tell a client over the limit to come back later, and close. Its request is read first
/// (briefly: this runs on the accepting thread), so that closing does not reset the
/// connection before the client has read the answer.
fn refuse_busy(stream: &UnixStream) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(Duration::from_millis(100)));
    // What arrives within 100 ms is read and dropped, never kept.
    let deadline = std::time::Instant::now() + Duration::from_millis(100);
    let mut chunk = [0u8; 64 * 1024];
    let mut reader = stream;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match reader.read(&mut chunk) {
            Ok(n) if n > 0 && !chunk.get(..n).unwrap_or_default().contains(&b'\n') => {}
            _ => break,
        }
    }
    let mut writer = stream;
    let reply =
        json!({ "error": format!("busy: {MAX_CONNECTIONS} requests in progress, try again") });
    let _ = writeln!(writer, "{reply}");
}

/// Read one request line from `stream`: at most [`MAX_REQUEST_BYTES`], all of it within
/// [`REQUEST_TIMEOUT`] (however slowly it trickles), its bytes held in `reading` as they
/// come. `Err` with what to answer (`None`: nothing, the client is gone or too slow).
fn read_request(
    stream: &UnixStream,
    reading: &ByteGate,
) -> std::result::Result<(Vec<u8>, Permit), Option<String>> {
    let deadline = std::time::Instant::now() + REQUEST_TIMEOUT;
    let busy = || {
        Some(format!(
            "busy: requests of {MAX_REQUEST_BYTES_IN_FLIGHT} bytes are being read, try again"
        ))
    };
    let mut held = reading.try_acquire(0).ok_or_else(busy)?;
    let mut line = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    let mut reader = stream;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(None);
        }
        let _ = stream.set_read_timeout(Some(left));
        let n = match reader.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(None),
            Ok(n) => n,
        };
        let got = chunk.get(..n).unwrap_or_default();
        let end = memchr_newline(got);
        let piece = got.get(..end.map_or(n, |i| i + 1)).unwrap_or_default();
        if line.len() as u64 + piece.len() as u64 > MAX_REQUEST_BYTES {
            return Err(Some(format!(
                "the request is over {MAX_REQUEST_BYTES} bytes"
            )));
        }
        if !held.try_grow(piece.len() as u64) {
            return Err(busy());
        }
        line.extend_from_slice(piece);
        if end.is_some() {
            return Ok((line, held));
        }
    }
}

/// Where the first newline of `bytes` is.
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

fn answer(
    stream: UnixStream,
    ingestor: &Ingestor,
    status: &Mutex<Value>,
    reading: &ByteGate,
    lingering: Option<&Lingering>,
) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    // One request line, of bounded size and time: a client cannot make the daemon buffer
    // without end, nor hold its place by trickling.
    let (line, held) = match read_request(&stream, reading) {
        Ok(read) => read,
        Err(why) => {
            if let Some(why) = why {
                let mut writer = &stream;
                let _ = writeln!(writer, "{}", json!({ "error": why }));
            }
            return;
        }
    };
    let parsed = ingest_base::bounded_json::check_values(
        &line,
        ingest_base::bounded_json::value_budget(line.len()),
    )
    .and_then(|()| serde_json::from_slice::<Request>(&line).map_err(|e| e.to_string()));
    drop(line);
    let reply = match parsed {
        Ok(Request::Search {
            query,
            scope,
            limit,
            min_score,
            mode,
        }) => match ingestor.search_filtered(
            &query,
            &scope,
            limit,
            min_score,
            &ingest_index::SearchFilter::default(),
            mode,
        ) {
            Ok(hits) => json!({ "hits": hits }),
            Err(e) => json!({ "error": e.to_string() }),
        },
        Ok(Request::Tool { scope, call }) => {
            let answer = ingest::tools::call(ingestor, &scope, &call);
            serde_json::to_value(&answer).unwrap_or_else(|e| json!({ "error": e.to_string() }))
        }
        Ok(Request::Status) => {
            let daemon = lock(status).clone();
            match status_of(ingestor) {
                Ok(mut v) => {
                    if let Some(map) = v.as_object_mut() {
                        map.insert("daemon".into(), daemon);
                    }
                    v
                }
                Err(e) => json!({ "error": e.to_string() }),
            }
        }
        Ok(Request::StepAside) => match lingering {
            Some(l) => {
                l.step_aside.store(true, Ordering::SeqCst);
                json!({ "stepping_aside": true, "pid": std::process::id() })
            }
            None => json!({ "error": "this daemon writes the data dir; it does not step aside" }),
        },
        Err(e) => json!({ "error": format!("bad request: {e}") }),
    };
    drop(held);
    let mut writer = &stream;
    let _ = writeln!(writer, "{reply}");
}

/// What `ingest status` reports: catalog totals, points in the store, the model, the bytes
/// the data directory takes on disk, the last run.
pub fn status_of(ingestor: &Ingestor) -> Result<Value> {
    let stats = ingestor.stats(None);
    let points = ingestor.points_stored()?;
    let data_dir = &ingestor.config().data_dir;
    // What the data directory takes on disk: the blocks allocated to every file in it, the
    // store's and the content packs' included (a sparse file counts what it holds, not its
    // apparent size).
    let disk_bytes: u64 = ingest_unpack::DiskWalk::everything(data_dir)
        .filter_map(|e| match e {
            ingest_unpack::DiskEntry::File(f) => allocated_bytes(&f.path),
            _ => None,
        })
        .sum();
    Ok(json!({
        "data_dir": data_dir,
        "model": ingestor.model_variant().name(),
        "disk_bytes": disk_bytes,
        "catalog": stats,
        "points": points,
        "workflows": ingestor.workflows().stats()?,
        "last_run": ingestor.last_run(),
    }))
}

/// The bytes the file system allocated to the file at `path` (its blocks), `None` when it
/// cannot be told.
fn allocated_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| m.blocks().saturating_mul(512))
}

/// Block until `listener` has a connection waiting or `ms` milliseconds pass.
fn wait_readable(listener: &UnixListener, ms: u16) {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
    if poll(&mut fds, PollTimeout::from(ms)).is_err() {
        std::thread::sleep(Duration::from_millis(u64::from(ms)));
    }
}
