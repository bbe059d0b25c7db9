//! The command line's shape: clap types only. What each command does is in `commands.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "ingest",
    version,
    about = "Unpack, extract, embed and index documents for an agent's retrieval tools"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
    #[command(flatten)]
    pub(crate) ingest: IngestArgs,
    #[command(flatten)]
    pub(crate) common: Common,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct Common {
    /// Where the index lives.
    #[arg(
        long,
        global = true,
        default_value = ".ingest",
        env = "INGEST_DATA_DIR"
    )]
    pub(crate) data_dir: PathBuf,
    /// Machine-readable output: one JSON object per line.
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// Scope: the user the content belongs to / is searched for.
    #[arg(long, global = true, default_value = "local")]
    pub(crate) user: String,
    /// Scope: feature instance.
    #[arg(long, global = true)]
    pub(crate) feature_instance: Option<String>,
    /// Scope: mandate (tenant).
    #[arg(long, global = true)]
    pub(crate) mandate: Option<String>,
    /// Folder with the provisioned model (default: searched, see README).
    #[arg(long, global = true, env = "INGEST_MODEL_DIR")]
    pub(crate) model_dir: Option<PathBuf>,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Logs (on stderr) as JSON lines, for log collectors.
    #[arg(long, global = true)]
    pub(crate) log_json: bool,
}

#[derive(Args, Debug)]
pub(crate) struct IngestArgs {
    /// Files, folders and archives to ingest (a folder is synced: files gone from it leave
    /// the index).
    pub(crate) paths: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    pub(crate) shared: bool,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct ExtractArgs {
    /// Memory (address space) of each extraction worker, in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub(crate) extract_memory_mb: u64,
    /// Seconds one file's extraction may take (wall clock and CPU) before it is abandoned.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub(crate) extract_timeout: u64,
    /// Parse documents in this process instead of isolated workers (trusted input only: a
    /// parser that aborts takes the whole run down).
    #[arg(long)]
    pub(crate) in_process: bool,
    /// Also ingest files and folders whose names start with `.` inside the folders given
    /// (by default each gets one `skipped` line and nothing under it is read).
    #[arg(long)]
    pub(crate) hidden: bool,
    /// Most chunks one file may have: a file that needs more is skipped with
    /// `limit: chunks` before any of it is embedded (embedding runs at 12–40 chunks/s).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub(crate) max_chunks: usize,
    /// Catalog checkpoint interval in milliseconds; 0 saves after every stored item (crash
    /// tests use it to reach every state between two writes).
    #[arg(long, hide = true, default_value_t = 2000, value_name = "MS")]
    pub(crate) checkpoint_ms: u64,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Semantic search over what the scope may read.
    Search(SearchArgs),
    /// What the index holds (asks the daemon when one runs on this data dir).
    Status,
    /// Keep folders indexed: sync them now, then follow their changes until SIGINT/SIGTERM.
    /// While it runs, `ingest search` and `ingest status` ask it.
    Watch(WatchArgs),
}

#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Folders (or files) to keep indexed.
    #[arg(required = true)]
    pub(crate) folders: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    pub(crate) shared: bool,
    /// Quiet time after a change before syncing, in milliseconds.
    #[arg(long, default_value_t = 300, value_name = "MS")]
    pub(crate) debounce_ms: u64,
    /// Full rescan interval, in seconds (a safety net behind file notifications).
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub(crate) rescan_secs: u64,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

#[derive(Args, Debug)]
pub(crate) struct SearchArgs {
    /// What to look for, in plain words.
    #[arg(required = true)]
    pub(crate) query: Vec<String>,
    /// How many hits to print.
    #[arg(long, default_value_t = 5)]
    pub(crate) limit: usize,
    /// Drop hits scoring below this cosine similarity.
    #[arg(long)]
    pub(crate) min_score: Option<f32>,
}
