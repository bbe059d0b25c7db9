//! The `ingest` command line: a thin layer over the library.
//!
//! Exit codes: 0 success; 2 some files failed or were skipped (the others are indexed);
//! 1 the command itself could not run (bad arguments, missing model, unusable data dir).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ingest::{
    ask, socket_path, status_of, Config, FileReport, FileStatus, Hit, Ingestor, Input, Isolation,
    Request, Scope, Server, SyncCause, WatchConfig,
};

#[derive(Parser, Debug)]
#[command(
    name = "ingest",
    version,
    about = "Unpack, extract, embed and index documents for an agent's retrieval tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    ingest: IngestArgs,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug, Clone)]
struct Common {
    /// Where the index lives.
    #[arg(
        long,
        global = true,
        default_value = ".ingest",
        env = "INGEST_DATA_DIR"
    )]
    data_dir: PathBuf,
    /// Machine-readable output: one JSON object per line.
    #[arg(long, global = true)]
    json: bool,
    /// Scope: the user the content belongs to / is searched for.
    #[arg(long, global = true, default_value = "local")]
    user: String,
    /// Scope: feature instance.
    #[arg(long, global = true)]
    feature_instance: Option<String>,
    /// Scope: mandate (tenant).
    #[arg(long, global = true)]
    mandate: Option<String>,
    /// Folder with the provisioned model (default: searched, see README).
    #[arg(long, global = true, env = "INGEST_MODEL_DIR")]
    model_dir: Option<PathBuf>,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Logs (on stderr) as JSON lines, for log collectors.
    #[arg(long, global = true)]
    log_json: bool,
}

#[derive(Args, Debug)]
struct IngestArgs {
    /// Files, folders and archives to ingest (a folder is synced: files gone from it leave
    /// the index).
    paths: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    shared: bool,
    #[command(flatten)]
    extract: ExtractArgs,
}

#[derive(Args, Debug, Clone)]
struct ExtractArgs {
    /// Memory (address space) of each extraction worker, in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    extract_memory_mb: u64,
    /// Seconds one file's extraction may take (wall clock and CPU) before it is abandoned.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    extract_timeout: u64,
    /// Parse documents in this process instead of isolated workers (trusted input only: a
    /// parser that aborts takes the whole run down).
    #[arg(long)]
    in_process: bool,
    /// Also ingest files and folders whose names start with `.` inside the folders given
    /// (by default each gets one `skipped` line and nothing under it is read).
    #[arg(long)]
    hidden: bool,
    /// Most chunks one file may have: a file that needs more is skipped with
    /// `limit: chunks` before any of it is embedded (embedding runs at 12–40 chunks/s).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    max_chunks: usize,
    /// Catalog checkpoint interval in milliseconds; 0 saves after every stored item (crash
    /// tests use it to reach every state between two writes).
    #[arg(long, hide = true, default_value_t = 2000, value_name = "MS")]
    checkpoint_ms: u64,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Semantic search over what the scope may read.
    Search(SearchArgs),
    /// What the index holds (asks the daemon when one runs on this data dir).
    Status,
    /// Keep folders indexed: sync them now, then follow their changes until SIGINT/SIGTERM.
    /// While it runs, `ingest search` and `ingest status` ask it.
    Watch(WatchArgs),
}

#[derive(Args, Debug)]
struct WatchArgs {
    /// Folders (or files) to keep indexed.
    #[arg(required = true)]
    folders: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    shared: bool,
    /// Quiet time after a change before syncing, in milliseconds.
    #[arg(long, default_value_t = 300, value_name = "MS")]
    debounce_ms: u64,
    /// Full rescan interval, in seconds (a safety net behind file notifications).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    rescan_secs: u64,
    #[command(flatten)]
    extract: ExtractArgs,
}

#[derive(Args, Debug)]
struct SearchArgs {
    /// What to look for, in plain words.
    #[arg(required = true)]
    query: Vec<String>,
    /// How many hits to print.
    #[arg(long, default_value_t = 5)]
    limit: usize,
    /// Drop hits scoring below this cosine similarity.
    #[arg(long)]
    min_score: Option<f32>,
}

fn scope(common: &Common, shared: bool) -> Scope {
    Scope {
        user_id: common.user.clone(),
        feature_instance_id: common.feature_instance.clone(),
        mandate_id: common.mandate.clone(),
        is_shared: shared,
    }
}

fn open(common: &Common, extract: Option<&ExtractArgs>) -> anyhow::Result<Ingestor> {
    let mut config = Config::new(&common.data_dir);
    config.model_dir = common.model_dir.clone();
    if let Some(args) = extract {
        config.include_hidden = args.hidden;
        config.chunking.max_file_chunks = args.max_chunks;
        config.checkpoint_interval = std::time::Duration::from_millis(args.checkpoint_ms);
        let iso = &mut config.isolation;
        iso.memory_bytes = args.extract_memory_mb.saturating_mul(1024 * 1024);
        iso.cpu_seconds = args.extract_timeout;
        iso.deadline = std::time::Duration::from_secs(args.extract_timeout);
        if args.in_process {
            iso.mode = Isolation::InProcess;
        }
    }
    Ingestor::open(config).with_context(|| format!("opening {}", common.data_dir.display()))
}

fn main() -> ExitCode {
    // A worker process started by the pipeline to parse documents in isolation.
    ingest::run_worker_if_requested();
    // Everything this process creates (the store's files included) is the user's alone.
    ingest::owner_only_umask();
    let cli = Cli::parse();
    let filter = match cli.common.verbose {
        0 => "warn,qdrant_edge=error",
        1 => "info,qdrant_edge=warn",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if cli.common.log_json {
        logs.json().init();
    } else {
        logs.with_ansi(std::io::stderr().is_terminal()).init();
    }
    let result = match &cli.command {
        Some(Command::Search(args)) => search(&cli.common, args),
        Some(Command::Status) => status(&cli.common),
        Some(Command::Watch(args)) => watch(&cli.common, args),
        None => ingest(&cli.common, &cli.ingest),
    };
    match result {
        Ok(code) => code,
        // The reader of our output went away (`| head`): nothing left to say.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn ingest(common: &Common, args: &IngestArgs) -> anyhow::Result<ExitCode> {
    if args.paths.is_empty() {
        anyhow::bail!("nothing to ingest: give files, folders or archives (see `ingest --help`)");
    }
    if let Ok(Some(daemon)) = ask(&socket_path(&common.data_dir), &Request::Status) {
        anyhow::bail!(
            "{} is held by a running `ingest watch` (pid {}): put files in its folders, or stop it first",
            common.data_dir.display(),
            field(&daemon, "/daemon/pid")
        );
    }
    let ingestor = open(common, Some(&args.extract))?;
    let scope = scope(common, args.shared);
    // Fail fast, in one line, when the model is missing (loading itself waits for first use).
    ingest::find_model_dir(common.model_dir.as_deref())?;
    let progress = (!common.json && std::io::stderr().is_terminal()).then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    });
    let counts = std::sync::Mutex::new((0u64, 0u64));
    let stdout = std::sync::Mutex::new(std::io::stdout());
    let observer = |r: &FileReport| {
        if common.json {
            let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
            let _ = writeln!(out, "{}", print_line(true, r));
        } else if worth_telling(r) {
            let line = print_line(false, r);
            match &progress {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
        }
        if let Some(bar) = &progress {
            let mut c = counts.lock().unwrap_or_else(|p| p.into_inner());
            c.0 += 1;
            if r.status == FileStatus::Indexed {
                c.1 += u64::from(r.chunks);
            }
            bar.set_message(format!("{} files, {} chunks — {}", c.0, c.1, r.locator));
        }
    };
    let inputs = args.paths.iter().cloned().map(Input::Path).collect();
    let report = ingestor.ingest(inputs, &scope, &observer)?;
    if let Some(bar) = progress {
        bar.finish_and_clear();
    }
    let s = &report.summary;
    let mut out = std::io::stdout().lock();
    if common.json {
        writeln!(out, "{}", serde_json::json!({ "summary": s }))?;
    } else {
        writeln!(
            out,
            "{} files ({} archives): {} indexed, {} unchanged, {} duplicate, {} skipped, {} failed; {} chunks embedded",
            s.files, s.archives, s.indexed, s.unchanged, s.duplicate, s.skipped, s.failed, s.chunks_embedded
        )?;
        if s.removed + s.ignored > 0 {
            writeln!(
                out,
                "{} removed from the index, {} hidden entries ignored (--hidden ingests them)",
                s.removed, s.ignored
            )?;
        }
        let t = &s.seconds;
        writeln!(
            out,
            "seconds: unpack {:.2} · extract {:.2} · chunk {:.2} · embed {:.2} · store {:.2} · total {:.2}",
            t.unpack, t.extract, t.chunk, t.embed, t.store, t.total
        )?;
    }
    Ok(if s.all_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn snippet(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", flat.get(..i).unwrap_or(&flat)),
        None => flat,
    }
}

fn search(common: &Common, args: &SearchArgs) -> anyhow::Result<ExitCode> {
    let query = args.query.join(" ");
    let scope = scope(common, false);
    let request = Request::Search {
        query: query.clone(),
        scope: scope.clone(),
        limit: args.limit,
        min_score: args.min_score,
    };
    let hits: Vec<Hit> = match ask(&socket_path(&common.data_dir), &request)? {
        Some(answer) => serde_json::from_value(field(&answer, "/hits").clone())?,
        None => open(common, None)?.search(&query, &scope, args.limit, args.min_score)?,
    };
    let mut out = std::io::stdout().lock();
    for (i, hit) in hits.iter().enumerate() {
        if common.json {
            writeln!(out, "{}", serde_json::to_string(hit)?)?;
        } else {
            writeln!(out, "{}. {:.3}  {}", i + 1, hit.score, hit.locator)?;
            if let Some(section) = &hit.section {
                writeln!(out, "   § {section}")?;
            }
            writeln!(out, "   {}", snippet(&hit.text, 160))?;
            if !hit.also_in.is_empty() {
                writeln!(out, "   also in: {}", hit.also_in.join(", "))?;
            }
        }
    }
    if hits.is_empty() && !common.json {
        writeln!(out, "no hits")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn status(common: &Common) -> anyhow::Result<ExitCode> {
    let status = match ask(&socket_path(&common.data_dir), &Request::Status)? {
        Some(answer) => answer,
        None => status_of(&open(common, None)?)?,
    };
    let mut out = std::io::stdout().lock();
    if common.json {
        writeln!(out, "{status}")?;
        return Ok(ExitCode::SUCCESS);
    }
    let c = field(&status, "/catalog");
    writeln!(out, "data dir:  {}", common.data_dir.display())?;
    writeln!(
        out,
        "files:     {} ({} indexed, {} failed, {} skipped) in {} archives",
        field(c, "/files"),
        field(c, "/indexed"),
        field(c, "/failed"),
        field(c, "/skipped"),
        field(c, "/containers")
    )?;
    writeln!(
        out,
        "contents:  {} distinct, {} chunks; {} points in the store",
        field(c, "/distinct_contents"),
        field(c, "/chunks"),
        field(&status, "/points")
    )?;
    let run = field(&status, "/last_run");
    if let Some(at) = field(run, "/finished_at").as_u64() {
        let s = field(run, "/summary");
        writeln!(
            out,
            "last run:  {} s ago: {} files, {} indexed, {} removed, {} failed",
            now_secs().saturating_sub(at),
            field(s, "/files"),
            field(s, "/indexed"),
            field(s, "/removed"),
            field(s, "/failed")
        )?;
    }
    let daemon = field(&status, "/daemon");
    if let Some(pid) = field(daemon, "/pid").as_u64() {
        writeln!(
            out,
            "daemon:    pid {pid}, watching {}, {} syncs",
            field(daemon, "/watching"),
            field(daemon, "/syncs")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The value at a JSON pointer (`/a/b`), or null: reading an answer's fields without indexing.
fn field<'a>(value: &'a serde_json::Value, pointer: &str) -> &'a serde_json::Value {
    value.pointer(pointer).unwrap_or(&serde_json::Value::Null)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Lines shown on a terminal: what did not simply go through.
fn worth_telling(r: &FileReport) -> bool {
    matches!(
        r.status,
        FileStatus::Failed | FileStatus::Skipped | FileStatus::Removed
    )
}

/// How a file line is shown: JSON, or a status word, the locator and the reason.
fn print_line(json: bool, r: &FileReport) -> String {
    if json {
        serde_json::to_string(r).unwrap_or_default()
    } else {
        format!(
            "{:<9} {}{}",
            r.status.as_str(),
            r.locator,
            r.reason
                .as_deref()
                .map(|x| format!("  ({x})"))
                .unwrap_or_default()
        )
    }
}

/// Open the data directory and its store, waiting a while for a short-lived command (a
/// `search` or `status` that opened it just before this daemon listened) to let go.
fn take_index(common: &Common, extract: &ExtractArgs) -> anyhow::Result<Ingestor> {
    let started = std::time::Instant::now();
    loop {
        let attempt = open(common, Some(extract)).and_then(|i| {
            i.store()?;
            Ok(i)
        });
        match attempt {
            Ok(i) => return Ok(i),
            Err(_) if started.elapsed() < std::time::Duration::from_secs(30) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
            }
            Err(e) => {
                return Err(e.context(format!(
                    "{} is in use by another ingest process",
                    common.data_dir.display()
                )))
            }
        }
    }
}

fn watch(common: &Common, args: &WatchArgs) -> anyhow::Result<ExitCode> {
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};
    ingest::find_model_dir(common.model_dir.as_deref())?;
    let socket = socket_path(&common.data_dir);
    if let Ok(Some(daemon)) = ask(&socket, &Request::Status) {
        anyhow::bail!(
            "{} is already watched by a running `ingest watch` (pid {})",
            common.data_dir.display(),
            field(&daemon, "/daemon/pid")
        );
    }
    // Listen before taking the index: from now on, `ingest search` and `ingest status` wait
    // for this daemon instead of opening the data directory themselves.
    ingest::prepare_data_dir(&common.data_dir)
        .with_context(|| format!("opening {}", common.data_dir.display()))?;
    let listener = Server::bind(&socket)?;
    let ingestor = Arc::new(take_index(common, &args.extract)?);
    let roots: Vec<PathBuf> = args
        .folders
        .iter()
        .map(|f| std::fs::canonicalize(f).with_context(|| format!("watching {}", f.display())))
        .collect::<anyhow::Result<_>>()?;
    let state = Arc::new(Mutex::new(serde_json::json!({
        "pid": std::process::id(),
        "started_at": now_secs(),
        "watching": roots,
        "syncs": 0,
        "last_sync": null,
    })));
    let _server = listener.serve(Arc::clone(&ingestor), Arc::clone(&state))?;
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let mut config = WatchConfig::new(roots.clone(), scope(common, args.shared));
    config.debounce = std::time::Duration::from_millis(args.debounce_ms);
    config.rescan = std::time::Duration::from_secs(args.rescan_secs.max(1));
    tracing::info!(folders = ?roots, data_dir = %common.data_dir.display(), "watching");
    let json = common.json;
    let observer = |r: &FileReport| {
        if json || worth_telling(r) {
            let _ = writeln!(std::io::stdout().lock(), "{}", print_line(json, r));
        }
    };
    let mut on_sync = |cause: SyncCause, report: &ingest::IngestReport| {
        let s = &report.summary;
        tracing::info!(
            cause = ?cause,
            files = s.files,
            indexed = s.indexed,
            removed = s.removed,
            failed = s.failed,
            chunks_embedded = s.chunks_embedded,
            seconds = s.seconds.total,
            "synced"
        );
        if let Ok(mut st) = state.lock() {
            let syncs = field(&st, "/syncs").as_u64().unwrap_or(0) + 1;
            if let Some(st) = st.as_object_mut() {
                st.insert("syncs".into(), serde_json::json!(syncs));
                st.insert(
                    "last_sync".into(),
                    serde_json::json!({ "at": now_secs(), "cause": cause, "summary": s }),
                );
            }
        }
    };
    ingest::watch(&ingestor, &config, &stop, &observer, &mut on_sync)?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}
