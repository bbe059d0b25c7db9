//! The lingering reader: a cold `ingest search` pays for opening the store and loading the
//! models (seconds, and more when the multilingual model is needed). So the first read
//! command leaves a reader behind (`ingest linger`, started by [`host`]): it holds the index
//! and its models and answers the data dir's socket as `ingest watch` does, so the next
//! `search`, `browse`, `read`… answers in milliseconds. It ends after `--linger` seconds
//! without a request, when its data dir is removed, or at once when a writer asks it to
//! step aside ([`step_aside`]: every command that opens the store itself asks first).

use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ingest::{Ingestor, ToolHost};
use ingest_serve::daemon::{ask, socket_path, Request, Server};

use crate::cli::Common;
use crate::now_secs;
use crate::settings::config;

/// How often the reader looks at its clock, its data dir and a writer's request.
const LOOK: Duration = Duration::from_millis(100);

/// How long a writer waits for a reader to let go of the store.
const STEP_ASIDE_WAIT: Duration = Duration::from_secs(60);

/// The tool host of a read command: the daemon or lingering reader when one answers, else a
/// lingering reader started now (when `--linger` is not 0 and the index is an embedded one
/// that exists), else this process.
pub(crate) fn host(common: &Common) -> anyhow::Result<ToolHost> {
    let config = config(common, None)?;
    let lingers = common.linger > 0
        && config.server.is_none()
        && config.catalog.is_none()
        && ingest::DataDir::at(&common.data_dir).shard().is_dir();
    let host = ToolHost::new(config);
    Ok(match lingers.then(|| reader_command(common)).flatten() {
        Some(command) => host.launching(command),
        None => host,
    })
}

/// `ingest --data-dir D --linger N [the model flags] linger`, this very binary.
fn reader_command(common: &Common) -> Option<std::process::Command> {
    let exe = std::env::current_exe().ok()?;
    let mut command = std::process::Command::new(exe);
    command
        .arg("--data-dir")
        .arg(&common.data_dir)
        .arg("--linger")
        .arg(common.linger.to_string())
        .arg("--quiet");
    if let Some(dir) = &common.model_dir {
        command.arg("--model-dir").arg(dir);
    }
    if let Some(variant) = common.model_variant {
        command.arg("--model-variant").arg(variant.name());
    }
    if common.no_multilingual {
        command.arg("--no-multilingual");
    }
    command.arg("linger");
    Some(command)
}

/// `ingest linger` (hidden; started by a read command): hold the index for reading, answer
/// the socket until idle for `--linger` seconds, asked to step aside, or the data dir is
/// gone. Exits 0 at once when another process holds the store or nothing is there to read.
pub(crate) fn run(common: &Common) -> anyhow::Result<ExitCode> {
    if common.linger == 0 || !ingest::DataDir::at(&common.data_dir).shard().is_dir() {
        return Ok(ExitCode::SUCCESS);
    }
    // The store first: it admits one process, so two readers started at once cannot both
    // listen; the one that does not get it ends without touching the socket.
    let ingestor = Ingestor::open(config(common, None)?)
        .with_context(|| format!("opening {}", common.data_dir.display()))?;
    if ingestor.open_index().is_err() {
        return Ok(ExitCode::SUCCESS);
    }
    let ingestor = Arc::new(ingestor);
    let listening = Server::bind(&socket_path(&common.data_dir))?;
    let state = Arc::new(Mutex::new(serde_json::json!({
        "pid": std::process::id(),
        "started_at": now_secs(),
        "lingering": true,
        "linger_secs": common.linger,
    })));
    let (server, lingering) = listening.serve_reader(Arc::clone(&ingestor), state)?;
    let idle = Duration::from_secs(common.linger);
    let why = loop {
        std::thread::sleep(LOOK);
        if lingering.asked_to_step_aside() {
            break "a writer asked for the store";
        }
        if lingering.idle() >= idle {
            break "idle";
        }
        if !common.data_dir.is_dir() {
            break "the data dir is gone";
        }
    };
    tracing::info!("lingering reader ends: {why}");
    // No new client from here on (the socket file goes with the server); calls being
    // answered end first.
    drop(server);
    let ending = Instant::now();
    while Arc::strong_count(&ingestor) > 1 && ending.elapsed() < STEP_ASIDE_WAIT {
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(ExitCode::SUCCESS)
}

/// Before a command opens the store itself: a lingering reader holding it is asked to step
/// aside, and waited for until its process has ended (so the store is free). A writing
/// daemon is left alone (the command then refuses or waits, naming it).
pub(crate) fn step_aside(common: &Common) -> anyhow::Result<()> {
    // Asked straight away (no status first: that walks the whole data dir): a reader grants
    // it and says its pid, a writing daemon refuses, and no socket means no one holds it.
    let Ok(Some(granted)) = ask(&socket_path(&common.data_dir), &Request::StepAside) else {
        return Ok(());
    };
    let pid = granted.get("pid").and_then(|v| v.as_u64());
    let started = Instant::now();
    while started.elapsed() < STEP_ASIDE_WAIT {
        if pid.is_none_or(ended) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    anyhow::bail!(
        "the lingering reader (pid {}) of {} did not step aside within {} s",
        pid.unwrap_or_default(),
        common.data_dir.display(),
        STEP_ASIDE_WAIT.as_secs()
    )
}

/// Whether process `pid` has ended: gone, or a zombie no one has reaped yet (a reader's
/// parent, the read command, has ended, and the process that inherits it may not reap).
fn ended(pid: u64) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return true;
    };
    if nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None).is_err() {
        return true;
    }
    // /proc/PID/stat: "PID (COMM) STATE …"; COMM may hold spaces and parentheses.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next().map(|s| s == "Z"))
        })
        .unwrap_or(false)
}
