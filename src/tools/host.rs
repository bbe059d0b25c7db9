//! Where the agent's tools run: [`ToolHost`] sends each call to the daemon when one holds the
//! data directory, and runs it in this process otherwise. The CLI faces (`ingest browse`,
//! `read`, `read-section`, `extract`, `search` with filters) and the MCP server go through it,
//! so they answer the same whether or not `ingest watch` runs. A host may start a lingering
//! reader ([`ToolHost::launching`]) so that the next command's calls answer in milliseconds.

use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use extractors::Scope;

use crate::config::Config;
use crate::error::Result;
use crate::ingestor::Ingestor;
use crate::lock;
use crate::tools::daemon_client as socket;
use crate::tools::{self, ToolAnswer, ToolCall};

/// Who answered a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnsweredBy {
    /// The daemon (`ingest watch`) holding the data directory, over its socket.
    Daemon,
    /// This process, with its own [`Ingestor`].
    Local,
}

impl AnsweredBy {
    /// `daemon` or `local`, for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            AnsweredBy::Daemon => "daemon",
            AnsweredBy::Local => "local",
        }
    }
}

/// Runs tool calls against one data directory: in the daemon when one answers on its socket
/// ([`socket::socket_path`]), else in an [`Ingestor`] this host opens on first need
/// and keeps.
///
/// The daemon is looked for on every call, so a host started before or after `ingest watch`
/// keeps answering. While the host holds its own `Ingestor` it also looks for a daemon every
/// second, and lets go of the `Ingestor` (once calls running on it end) as soon as one
/// listens: a daemon starting meanwhile can then take the store, which allows one process at
/// a time. While a host answers locally it holds the store, so `ingest PATH` on the same data
/// directory fails until the host ends.
///
/// Every call's `max_chars` is capped by the host's [`Config::max_answer_chars`] before it is
/// run, so the host's ceiling holds whichever process answers.
pub struct ToolHost {
    kind: Kind,
}

enum Kind {
    /// Always this `Ingestor` (a process that already holds the data directory).
    Shared(Arc<Ingestor>),
    /// The daemon when it answers, else a local `Ingestor` opened from `config` on demand.
    Auto(Arc<Auto>),
}

struct Auto {
    config: Config,
    socket: PathBuf,
    local: Mutex<Option<Arc<Ingestor>>>,
    /// Load the embedding model when the local `Ingestor` opens (a long-lived host).
    load_model_ahead: bool,
    /// The command that starts a lingering reader ([`ToolHost::launching`]), taken when
    /// first needed.
    launch: Mutex<Option<std::process::Command>>,
}

/// How long a host waits for the lingering reader it started to listen (it opens the store
/// first, which on a large index takes a few seconds).
const READER_START: Duration = Duration::from_secs(30);

/// How often a host holding its own `Ingestor` looks for a daemon that wants the store.
const DAEMON_PROBE: Duration = Duration::from_secs(1);

impl Auto {
    /// The local `Ingestor`, opened now if need be (and then watched for a daemon).
    fn local(self: &Arc<Self>) -> Result<Arc<Ingestor>> {
        let mut slot = lock(&self.local);
        if let Some(i) = slot.as_ref() {
            return Ok(Arc::clone(i));
        }
        let opened = Arc::new(Ingestor::open(self.config.clone())?);
        if self.load_model_ahead {
            // Whatever the first call is, the searches after it answer from a loaded model.
            // Here, not in a thread: a process must not exit while ONNX Runtime loads.
            if let Err(e) = opened.load_model() {
                tracing::debug!("embedding model not loaded ahead: {e}");
            }
        }
        *slot = Some(Arc::clone(&opened));
        let watched = Arc::downgrade(self);
        let probe = std::thread::Builder::new()
            .name("daemon-probe".into())
            .spawn(move || release_for_daemon(&watched));
        if let Err(e) = probe {
            tracing::warn!("no thread to look for a daemon: {e}");
        }
        Ok(opened)
    }

    /// Start the lingering reader (once, when no `Ingestor` is open here) and a connection to
    /// it once it listens; `None` when there is no reader to start, it could not start, or
    /// it ended without listening (another process holds the store).
    fn launch_reader(&self) -> Option<UnixStream> {
        if lock(&self.local).is_some() {
            return None;
        }
        let mut command = lock(&self.launch).take()?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: the terminal's Ctrl-C for this command is not its.
            .process_group(0);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                tracing::warn!("no lingering reader started: {e}");
                return None;
            }
        };
        let started = std::time::Instant::now();
        while started.elapsed() < READER_START {
            if let Some(stream) = socket::connect(&self.socket) {
                tracing::debug!(
                    pid = child.id(),
                    "answered by the lingering reader started now"
                );
                return Some(stream);
            }
            if let Ok(Some(status)) = child.try_wait() {
                tracing::debug!("the lingering reader ended without listening ({status})");
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        tracing::warn!(
            "the lingering reader did not listen within {} s",
            READER_START.as_secs()
        );
        None
    }

    /// Let go of the local `Ingestor`: a daemon wants the store.
    fn release(&self) {
        drop(lock(&self.local).take());
    }
}

/// Until the host is dropped or lets go of its `Ingestor`: when a daemon listens on the
/// socket, let go of it.
fn release_for_daemon(host: &Weak<Auto>) {
    loop {
        std::thread::sleep(DAEMON_PROBE);
        let Some(host) = host.upgrade() else { return };
        if lock(&host.local).is_none() {
            return;
        }
        if socket::connect(&host.socket).is_some() {
            tracing::info!(
                "a daemon listens on {}: answering through it",
                host.socket.display()
            );
            host.release();
            return;
        }
    }
}

impl std::fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.kind {
            Kind::Shared(i) => f.debug_tuple("ToolHost::Shared").field(i).finish(),
            Kind::Auto(a) => f.debug_tuple("ToolHost::Auto").field(&a.socket).finish(),
        }
    }
}

impl ToolHost {
    /// A host for `config.data_dir`: the daemon's socket there when a daemon answers, else an
    /// [`Ingestor`] opened from `config` on the first call that needs one. Opens nothing yet.
    pub fn new(config: Config) -> Self {
        Self::auto(config, false)
    }

    /// As [`ToolHost::new`], for a process that answers many calls (an MCP server): when it
    /// opens the data directory it also loads the embedding model, so every search after the
    /// first call answers from a loaded model.
    pub fn long_lived(config: Config) -> Self {
        Self::auto(config, true)
    }

    fn auto(config: Config, load_model_ahead: bool) -> Self {
        ToolHost {
            kind: Kind::Auto(Arc::new(Auto {
                socket: socket::socket_path(&config.data_dir),
                config,
                local: Mutex::new(None),
                load_model_ahead,
                launch: Mutex::new(None),
            })),
        }
    }

    /// As this host, and when no daemon answers on the data directory's socket and this host
    /// has not opened it yet, `command` is started first: a lingering reader (`ingest
    /// linger`) that holds the index and its models for the calls after this one, which
    /// then answer through its socket in milliseconds. It is started at most once; when it
    /// does not listen, the call is answered here.
    pub fn launching(self, command: std::process::Command) -> Self {
        if let Kind::Auto(auto) = &self.kind {
            *lock(&auto.launch) = Some(command);
        }
        self
    }

    /// A host that always runs calls in `ingestor` (for a process that holds the data
    /// directory itself, such as an upload service).
    pub fn with_ingestor(ingestor: Arc<Ingestor>) -> Self {
        ToolHost {
            kind: Kind::Shared(ingestor),
        }
    }

    /// The largest answer this host lets a call ask for, in chars (UTF-8 bytes).
    pub fn max_answer_chars(&self) -> usize {
        match &self.kind {
            Kind::Shared(i) => i.config().max_answer_chars,
            Kind::Auto(a) => a.config.max_answer_chars,
        }
    }

    /// Run `call` in `scope`. Tool errors come back as an answer with `is_error`; `Err` is
    /// for what kept the call from running at all (the data directory cannot be opened, the
    /// daemon went away in the middle of the call).
    pub fn call(&self, scope: &Scope, call: &ToolCall) -> Result<ToolAnswer> {
        self.call_traced(scope, call).map(|(answer, _)| answer)
    }

    /// As [`ToolHost::call`], also saying who answered.
    pub fn call_traced(&self, scope: &Scope, call: &ToolCall) -> Result<(ToolAnswer, AnsweredBy)> {
        self.call_until(scope, call, &AtomicBool::new(false))
    }

    /// As [`ToolHost::call_traced`], for a caller that may go away: once `stop` is set, what
    /// can still be left undone is ([`tools::call_until`]; a call the daemon answers runs to
    /// its end there).
    pub fn call_until(
        &self,
        scope: &Scope,
        call: &ToolCall,
        stop: &AtomicBool,
    ) -> Result<(ToolAnswer, AnsweredBy)> {
        let call = capped(call, self.max_answer_chars());
        match &self.kind {
            Kind::Shared(ingestor) => Ok((
                tools::call_until(ingestor, scope, &call, stop),
                AnsweredBy::Local,
            )),
            Kind::Auto(auto) => {
                let daemon = match socket::connect(&auto.socket) {
                    Some(stream) => {
                        // A daemon listens (or is about to): it needs the store this process
                        // may hold, so let go of it; calls still running keep their own
                        // reference.
                        auto.release();
                        Some(stream)
                    }
                    None => auto.launch_reader(),
                };
                if let Some(stream) = daemon {
                    match socket::ask_tool_on(&stream, &auto.socket, scope, &call) {
                        Ok(answer) => return Ok((answer, AnsweredBy::Daemon)),
                        // It ended before answering (killed, out of memory): answered here,
                        // from the store it let go of.
                        Err(e) if gone(&auto.socket) => tracing::warn!(
                            "the daemon ended before answering ({e}); answering here"
                        ),
                        Err(e) => return Err(e),
                    }
                }
                let ingestor = auto.local()?;
                Ok((
                    tools::call_until(&ingestor, scope, &call, stop),
                    AnsweredBy::Local,
                ))
            }
        }
    }
}

/// How long a host watches the daemon that failed to answer for its end (its connection
/// closes a moment before its listening socket as it exits).
const GONE_AFTER: Duration = Duration::from_millis(200);

/// Whether no daemon listens on `socket` any more (watched for [`GONE_AFTER`]): one that
/// failed to answer and still listens (a timeout, a refusal) is not answered around.
fn gone(socket: &std::path::Path) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < GONE_AFTER {
        if socket::connect(socket).is_none() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    false
}

/// `call` with its `max_chars` no larger than `ceiling` (an absent one stands for the
/// default budget).
fn capped(call: &ToolCall, ceiling: usize) -> ToolCall {
    let mut call = call.clone();
    let max_chars = call.max_chars_mut();
    let asked = max_chars.unwrap_or(tools::DEFAULT_MAX_CHARS);
    if asked > ceiling {
        *max_chars = Some(ceiling);
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{BrowseArgs, SearchArgs};

    fn budget(call: &ToolCall) -> Option<usize> {
        call.max_chars()
    }

    #[test]
    fn a_host_lets_go_of_the_store_when_a_daemon_listens() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let host = ToolHost::new(Config::new(&data));
        let Kind::Auto(auto) = &host.kind else {
            unreachable!()
        };
        let browse = ToolCall::BrowseContainer(BrowseArgs::default());
        let (_, by) = host.call_traced(&Scope::user("u"), &browse).unwrap();
        assert_eq!(by, AnsweredBy::Local);
        auto.local().unwrap().open_index().unwrap();
        // Another writer cannot take the store meanwhile.
        let other = Ingestor::open(Config::new(&data)).unwrap();
        assert!(other.open_index().is_err(), "the host holds the store");
        // A daemon binds its socket before it takes the store (`ingest_serve::daemon`): the
        // host lets go of the store once something listens there.
        let _listening =
            std::os::unix::net::UnixListener::bind(socket::socket_path(&data)).unwrap();
        let started = std::time::Instant::now();
        while lock(&auto.local).is_some() {
            assert!(started.elapsed() < Duration::from_secs(30), "still held");
            std::thread::sleep(Duration::from_millis(50));
        }
        other.open_index().unwrap();
    }

    #[test]
    fn the_hosts_ceiling_caps_every_budget() {
        let browse = |m| {
            ToolCall::BrowseContainer(BrowseArgs {
                max_chars: m,
                ..BrowseArgs::default()
            })
        };
        assert_eq!(budget(&capped(&browse(None), 100_000)), None);
        assert_eq!(budget(&capped(&browse(Some(9000)), 5000)), Some(5000));
        assert_eq!(budget(&capped(&browse(Some(300)), 5000)), Some(300));
        // No budget asked: the default, unless the ceiling is lower.
        assert_eq!(budget(&capped(&browse(None), 1000)), Some(1000));
        let search = ToolCall::SearchDocuments(SearchArgs {
            query: "q".into(),
            max_chars: Some(50_000),
            ..SearchArgs::default()
        });
        assert_eq!(budget(&capped(&search, 20_000)), Some(20_000));
    }
}
