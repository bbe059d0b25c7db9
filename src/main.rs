//! The `ingest` command line: a thin layer over the library.
//!
//! Exit codes: 0 success; 2 some files failed or were skipped (the others are indexed);
//! 1 the command itself could not run (bad arguments, missing model, unusable data dir).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use ingest::{Config, FileReport, FileStatus, Ingestor, Input, Isolation, Scope};

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
}

#[derive(Args, Debug)]
struct IngestArgs {
    /// Files, folders and archives to ingest.
    paths: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    shared: bool,
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
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Semantic search over what the scope may read.
    Search(SearchArgs),
    /// What the index holds.
    Status,
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

fn open(common: &Common, ingest: Option<&IngestArgs>) -> anyhow::Result<Ingestor> {
    let mut config = Config::new(&common.data_dir);
    config.model_dir = common.model_dir.clone();
    if let Some(args) = ingest {
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
    let cli = Cli::parse();
    let filter = match cli.common.verbose {
        0 => "warn,qdrant_edge=error",
        1 => "info,qdrant_edge=warn",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match &cli.command {
        Some(Command::Search(args)) => search(&cli.common, args),
        Some(Command::Status) => status(&cli.common),
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
    let ingestor = open(common, Some(args))?;
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
            if let Ok(line) = serde_json::to_string(r) {
                let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
                let _ = writeln!(out, "{line}");
            }
        } else if matches!(r.status, FileStatus::Failed | FileStatus::Skipped) {
            let line = format!(
                "{:<8} {}  ({})",
                r.status.as_str(),
                r.locator,
                r.reason.as_deref().unwrap_or("")
            );
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
    let ingestor = open(common, None)?;
    let query = args.query.join(" ");
    let hits = ingestor.search(&query, &scope(common, false), args.limit, args.min_score)?;
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
    let ingestor = open(common, None)?;
    let stats = ingestor.stats(None);
    let points = if common.data_dir.join("shard").is_dir() {
        ingestor.store()?.count(None)?
    } else {
        0
    };
    let mut out = std::io::stdout().lock();
    if common.json {
        writeln!(
            out,
            "{}",
            serde_json::json!({ "data_dir": common.data_dir, "catalog": stats, "points": points })
        )?;
    } else {
        writeln!(out, "data dir:  {}", common.data_dir.display())?;
        writeln!(
            out,
            "files:     {} ({} indexed, {} failed, {} skipped) in {} archives",
            stats.files, stats.indexed, stats.failed, stats.skipped, stats.containers
        )?;
        writeln!(
            out,
            "contents:  {} distinct, {} chunks; {} points in the store",
            stats.distinct_contents, stats.chunks, points
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
