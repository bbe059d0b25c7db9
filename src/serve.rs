//! The daemon's local socket. While `ingest watch` runs it holds the index (the store allows
//! one writer), so `ingest search` and `ingest status` ask the daemon instead of opening the
//! data directory: one JSON request per connection, one JSON answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::lock;
use crate::pipeline::Ingestor;
use extractors::Scope;

/// The longest request line a client may send (a query and its scope).
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// What a client asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Request {
    Search {
        query: String,
        scope: Scope,
        limit: usize,
        min_score: Option<f32>,
    },
    Status,
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
            .ok_or_else(|| Error::Pipeline("socket already served".into()))?;
        Server::start(ingestor, listener, &self.path, status)
    }
}

impl Server {
    /// Bind `path` (a stale socket file there, left by a daemon that was killed, is replaced:
    /// the caller has checked that no daemon answers on it).
    pub fn bind(path: &Path) -> Result<Listening> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).map_err(|e| Error::io(path, e))?;
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
    ) -> Result<Server> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io(path, e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("daemon-socket".into())
            .spawn(move || {
                while !flag.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let ingestor = Arc::clone(&ingestor);
                            let status = Arc::clone(&status);
                            let _ = std::thread::Builder::new()
                                .name("daemon-client".into())
                                .spawn(move || answer(stream, &ingestor, &status));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(50));
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

fn answer(stream: UnixStream, ingestor: &Ingestor, status: &Mutex<Value>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    // One request line, of bounded size: a client cannot make the daemon buffer without end.
    let mut line = String::new();
    let mut reader = BufReader::new(Read::take(&stream, MAX_REQUEST_BYTES));
    if reader.read_line(&mut line).is_err() || !line.ends_with('\n') {
        return;
    }
    let reply = match serde_json::from_str::<Request>(&line) {
        Ok(Request::Search {
            query,
            scope,
            limit,
            min_score,
        }) => match ingestor.search(&query, &scope, limit, min_score) {
            Ok(hits) => json!({ "hits": hits }),
            Err(e) => json!({ "error": e.to_string() }),
        },
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
        Err(e) => json!({ "error": format!("bad request: {e}") }),
    };
    let mut writer = &stream;
    let _ = writeln!(writer, "{reply}");
}

/// What `ingest status` reports: catalog totals, points in the store, the last run.
pub fn status_of(ingestor: &Ingestor) -> Result<Value> {
    let stats = ingestor.stats(None);
    let points = if ingestor.config().data_dir.join("shard").is_dir() {
        ingestor.store()?.count(None)?
    } else {
        0
    };
    Ok(json!({
        "data_dir": ingestor.config().data_dir,
        "catalog": stats,
        "points": points,
        "last_run": ingestor.last_run(),
    }))
}

/// Ask the daemon listening on `path`. `Ok(None)` when no daemon answers there (no socket, or
/// a stale one): the caller opens the data directory itself.
pub fn ask(path: &Path, request: &Request) -> Result<Option<Value>> {
    let Ok(stream) = UnixStream::connect(path) else {
        return Ok(None);
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
    let mut writer = &stream;
    let body = serde_json::to_string(request).map_err(|e| Error::Pipeline(e.to_string()))?;
    writeln!(writer, "{body}").map_err(|e| Error::io(path, e))?;
    let mut line = String::new();
    BufReader::new(&stream)
        .read_line(&mut line)
        .map_err(|e| Error::io(path, e))?;
    let value: Value =
        serde_json::from_str(&line).map_err(|e| Error::Pipeline(format!("daemon answer: {e}")))?;
    if let Some(e) = value.get("error").and_then(Value::as_str) {
        return Err(Error::Pipeline(format!("daemon: {e}")));
    }
    Ok(Some(value))
}
