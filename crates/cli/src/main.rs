//! The `ingest` command line: a thin layer over the library.
//!
//! Exit codes (docs/CLI.md, "Exit codes"; [`exit`]): 0 found or indexed; 1 nothing found;
//! 2 some files failed or were skipped (the others are indexed); 3 the command could not
//! run (no index, missing model, unusable data dir, a tool's error); 64 a usage error (an
//! unknown command or option, a bad value).

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod eval;
mod faces;
mod linger;
mod output;
mod place;
mod render;
mod settings;

use cli::{Cli, Command};

/// Log targets that print secrets below info level (reqsign's credential providers print
/// their keys at debug).
const SECRET_LOGGING_TARGETS: [&str; 5] = [
    "reqsign",
    "reqsign_core",
    "reqsign_aws_core",
    "reqsign_aws_v4",
    "opendal_service_s3",
];

fn main() -> ExitCode {
    // A worker process started by the pipeline to parse documents in isolation.
    ingest::run_worker_if_requested();
    // Everything this process creates (the store's files included) is the user's alone.
    ingest::owner_only_umask();
    let mut cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; everything else is a usage error.
            let _ = e.print();
            return end_process(ExitCode::from(if e.use_stderr() { exit::USAGE } else { 0 }));
        }
    };
    let serving = matches!(
        cli.command,
        Some(Command::Mcp(_) | Command::Serve(_) | Command::Watch(_))
    );
    let filter = match cli.common.verbose {
        0 if cli.common.quiet => "warn,qdrant_edge=error",
        // Daemons say what they do (start, each sync, each call, stop), on stderr: stdout
        // is the protocol for `ingest mcp`.
        0 if serving => {
            "warn,ingest_serve::mcp=info,ingest::faces=info,ingest::commands=info,ingest_serve::daemon=info,ingest_serve::service=info,ingest::uploads=info,qdrant_edge=error"
        }
        0 => "warn,qdrant_edge=error",
        1 => "info,qdrant_edge=warn",
        _ => "debug",
    };
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    // Whatever RUST_LOG asks: the request signers of remote sources print their credentials
    // (secret keys included) at debug level, so they never log below info.
    for quiet in SECRET_LOGGING_TARGETS {
        if let Ok(directive) = format!("{quiet}=info").parse() {
            filter = filter.add_directive(directive);
        }
    }
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if cli.common.log_json {
        logs.json().init();
    } else {
        logs.with_ansi(output::colors(
            cli.common.color,
            std::io::stderr().is_terminal(),
        ))
        .init();
    }
    let result = place::settle(&mut cli).and_then(|()| run(&cli));
    let code = match result {
        Ok(code) => code,
        // The reader of our output went away (`| head`): nothing left to say.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(if e.chain().any(|c| c.is::<exit::Usage>()) {
                exit::USAGE
            } else if e.chain().any(|c| c.is::<exit::Busy>()) {
                exit::BUSY
            } else {
                exit::ERROR
            })
        }
    };
    end_process(code)
}

/// The exit codes, documented once (docs/CLI.md, "Exit codes").
pub(crate) mod exit {
    /// Nothing found: a search without a relevant hit, a listing without an entry.
    pub(crate) const NOTHING_FOUND: u8 = 1;
    /// Some files failed or were skipped; every other file is indexed.
    pub(crate) const SOME_FAILED: u8 = 2;
    /// The command could not run (no index, missing model, unusable data dir, a tool's
    /// error).
    pub(crate) const ERROR: u8 = 3;
    /// A usage error: an unknown command or option, a bad or missing value (sysexits'
    /// EX_USAGE).
    pub(crate) const USAGE: u8 = 64;
    /// Another process writes the data dir (a running `ingest PATH`, `watch` or `serve`):
    /// try again later, or with `--wait` (sysexits' EX_TEMPFAIL).
    pub(crate) const BUSY: u8 = 75;
    /// Stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it); the next run goes
    /// on from where it stopped.
    pub(crate) const STOPPED: u8 = 130;

    /// The data dir is held by another writer (exits [`BUSY`]).
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub(crate) struct Busy(pub String);

    /// An error in how the command was asked for (exits [`USAGE`]).
    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    pub(crate) struct Usage(pub String);
}

/// Run the command the arguments name.
fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    if opens_the_store_itself(&cli.command) {
        linger::step_aside(&cli.common)?;
    }
    match &cli.command {
        Some(Command::Search(args)) => commands::search(&cli.common, args),
        Some(Command::Browse(args)) => faces::browse(&cli.common, args),
        Some(Command::Read(args)) => faces::read(&cli.common, args),
        Some(Command::ReadSection(args)) => faces::read_section(&cli.common, args),
        Some(Command::VerifyQuote(args)) => faces::verify_quote(&cli.common, args),
        Some(Command::RenderPage(args)) => faces::render_page(&cli.common, args),
        Some(Command::Extract(args)) => faces::extract(&cli.common, args),
        Some(Command::Tool(args)) => faces::tool(&cli.common, args),
        Some(Command::Source(command)) => faces::source(&cli.common, command),
        Some(Command::Mcp(args)) => faces::mcp(&cli.common, args),
        Some(Command::Status) => commands::status(&cli.common),
        Some(Command::Quarantine(command)) => commands::quarantine(&cli.common, command),
        Some(Command::Watch(args)) => commands::watch(&cli.common, args),
        Some(Command::Serve(args)) => commands::serve(&cli.common, args),
        Some(Command::Eval(args)) => eval::run(&cli.common, args),
        Some(Command::Export(args)) => commands::export(&cli.common, args),
        Some(Command::Import(args)) => commands::import(&cli.common, args),
        Some(Command::Reindex(args)) => commands::reindex(&cli.common, args),
        Some(Command::Files(args)) => commands::files(&cli.common, args),
        Some(Command::Migrate) => commands::migrate(&cli.common),
        Some(Command::Linger) => linger::run(&cli.common),
        None => commands::ingest(&cli.common, &cli.ingest),
    }
}

/// Whether `command` opens the store in this process (a lingering reader holding it is asked
/// to step aside first), rather than asking the process that holds it (the read commands
/// and the tools, `status`, `mcp`) or not needing it (`quarantine`). The commands that
/// write, and those whose flags must hold (`extract`, `source`), run here.
fn opens_the_store_itself(command: &Option<Command>) -> bool {
    !matches!(
        command,
        Some(
            Command::Search(_)
                | Command::Browse(_)
                | Command::Read(_)
                | Command::ReadSection(_)
                | Command::VerifyQuote(_)
                | Command::RenderPage(_)
                | Command::Tool(_)
                | Command::Mcp(_)
                | Command::Status
                | Command::Quarantine(_)
                | Command::Linger
        )
    )
}

/// End the process with `code`, stdout and stderr flushed, without the C and C++ exit
/// handlers of the native libraries it loaded (OpenVINO and its TBB threads, ONNX Runtime,
/// PDFium). Their static destructors can run while their own worker threads are still
/// winding down: a finished run, its last line printed, died by SIGSEGV now and then (seen
/// in CI). Everything of ours is written and dropped before this
/// point (the command returned), and Rust runs no destructors at exit anyway.
fn end_process(code: ExitCode) -> ExitCode {
    use std::io::Write;
    let status = (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .map_or(1, i32::from);
    // A reader that went away cannot take more output on any exit path.
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; no Rust state is observed afterwards, and
    // the buffered output of this process (Rust's stdout) was flushed above.
    unsafe { libc::_exit(status) }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
