//! The client half of the daemon's local socket (`crate::daemon`): what a process sends to a
//! running daemon or lingering reader and how it reads the answer. Here, below the daemon,
//! because [`crate::ToolHost`] asks a daemon before it opens the data directory itself; the
//! daemon (the server half) takes [`Request`]s from here and answers them with the tools.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::tools::{ToolAnswer, ToolCall};
use extractors::Scope;

/// How long a client has to send its whole request (and to take its answer).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client waits for the answer to a tool call: extracting and indexing an archive
/// member (`extract_container_item`) can take minutes.
pub const TOOL_ANSWER_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a client waits for the answer to a search or status request.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// What a client asks.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Request {
    /// A search in one scope.
    Search {
        /// What to look for, in plain words.
        query: String,
        /// Whose documents.
        scope: Scope,
        /// The most hits to return.
        limit: usize,
        /// Hits scoring below this are dropped.
        min_score: Option<f32>,
        /// How hits are ranked (hybrid when absent).
        #[serde(default)]
        mode: crate::index::SearchMode,
    },
    /// What the index holds and what the daemon is doing.
    Status,
    /// One of the agent's tools, run by the daemon in `scope`; answered with the
    /// [`ToolAnswer`] as JSON (`{"text": …, "is_error": …}`).
    Tool {
        /// Whose documents: the asking process's configuration, never the model's.
        scope: Scope,
        /// The tool and its arguments (boxed: a call is larger than the other requests).
        call: Box<ToolCall>,
    },
    /// A writer wants the store: a lingering reader ([`crate::daemon::Listening::serve_reader`]) lets go of
    /// it and ends; a writing daemon refuses.
    StepAside,
}

/// Ask the daemon listening on `path`. `Ok(None)` when no daemon answers there (no socket, or
/// a stale one): the caller opens the data directory itself.
pub fn ask(path: &Path, request: &Request) -> Result<Option<Value>> {
    let Some(stream) = connect(path) else {
        return Ok(None);
    };
    let value = exchange(&stream, path, request, ANSWER_TIMEOUT)?;
    if let Some(e) = value.get("error").and_then(Value::as_str) {
        return Err(Error::Daemon(e.to_string()));
    }
    Ok(Some(value))
}

/// Run a tool call in the daemon listening on `path`, waiting up to
/// [`TOOL_ANSWER_TIMEOUT`] for its answer. `Ok(None)` when no daemon answers there.
pub fn ask_tool(path: &Path, scope: &Scope, call: &ToolCall) -> Result<Option<ToolAnswer>> {
    let Some(stream) = connect(path) else {
        return Ok(None);
    };
    ask_tool_on(&stream, path, scope, call).map(Some)
}

/// A connection to the daemon on `path`, or `None` when none listens there (no socket, or a
/// stale one left by a daemon that was killed).
pub fn connect(path: &Path) -> Option<UnixStream> {
    UnixStream::connect(path).ok()
}

/// Send a tool call on a connection [`connect`] made, and read its answer.
pub fn ask_tool_on(
    stream: &UnixStream,
    path: &Path,
    scope: &Scope,
    call: &ToolCall,
) -> Result<ToolAnswer> {
    let request = Request::Tool {
        scope: scope.clone(),
        call: Box::new(call.clone()),
    };
    let value = exchange(stream, path, &request, TOOL_ANSWER_TIMEOUT)?;
    if let Some(e) = value.get("error").and_then(Value::as_str) {
        // Not an answer of the tool: the daemon refused the request (busy, or an older
        // daemon that does not know tool calls).
        return Err(Error::Daemon(e.to_string()));
    }
    serde_json::from_value(value).map_err(|e| Error::Daemon(format!("answer: {e}")))
}

/// One request line out, one answer line back. Sending may take [`REQUEST_TIMEOUT`] (the
/// daemon reads requests that fast); the answer may take `wait`.
fn exchange(stream: &UnixStream, path: &Path, request: &Request, wait: Duration) -> Result<Value> {
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let _ = stream.set_read_timeout(Some(wait));
    let mut writer = stream;
    let body = serde_json::to_string(request).map_err(|e| Error::Daemon(e.to_string()))?;
    writeln!(writer, "{body}").map_err(|e| Error::io(path, e))?;
    let mut line = String::new();
    BufReader::new(stream)
        .read_line(&mut line)
        .map_err(|e| Error::io(path, e))?;
    if line.is_empty() {
        return Err(Error::Daemon(
            "daemon: closed the connection without answering".into(),
        ));
    }
    serde_json::from_str(&line).map_err(|e| Error::Daemon(format!("answer: {e}")))
}

/// The socket the daemon answers searches and status requests on.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    crate::DataDir::at(data_dir).daemon_socket()
}
