//! The command line's shape: clap types only. What each command does is in `commands.rs`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ingest::SearchMode;

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

/// When to colour what is printed.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct Common {
    /// Where the index lives [default: $INGEST_DATA_DIR, else the nearest `.ingest` folder
    /// in the working directory or above it, else ~/.local/share/ingest]. Commands that only
    /// read never create one.
    #[arg(short = 'd', long = "data-dir", global = true, value_name = "DIR")]
    pub(crate) data_dir_flag: Option<PathBuf>,
    /// The data directory the lookup chose (set once the arguments are parsed).
    #[arg(skip)]
    pub(crate) data_dir: PathBuf,
    /// How it was chosen.
    #[arg(skip)]
    pub(crate) data_dir_origin: Origin,
    /// Machine-readable output: one JSON shape per command (docs/CLI.md).
    #[arg(short = 'j', long, global = true)]
    pub(crate) json: bool,
    /// Colours on a terminal: auto (when stdout is one and NO_COLOR is not set), always or
    /// never.
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: ColorChoice,
    /// Less output: no progress, and `watch`/`serve` log warnings only.
    #[arg(short, long, global = true)]
    pub(crate) quiet: bool,
    /// Scope: the user the content belongs to / is searched for [default: local].
    #[arg(long, global = true)]
    pub(crate) user: Option<String>,
    /// Scope: feature instance.
    #[arg(long, global = true)]
    pub(crate) feature_instance: Option<String>,
    /// Scope: mandate (tenant).
    #[arg(long, global = true)]
    pub(crate) mandate: Option<String>,
    /// Folder with the provisioned model (default: searched, see README).
    #[arg(long, global = true, env = "INGEST_MODEL_DIR")]
    pub(crate) model_dir: Option<PathBuf>,
    /// Model for a new index: bf16 (the default: all-MiniLM-L6-v2, the fp32 model on
    /// OpenVINO, computed in bf16 where the CPU has it), block-int8, int8-weights or
    /// dynamic-int8 (the same model on ONNX Runtime), or multilingual-e5-small (another
    /// model: 100 languages, questions in one language find passages in another; about half
    /// the speed). See docs/EVALUATION.md. An existing data dir keeps the one it was embedded
    /// with (`ingest reindex --model M` changes it).
    #[arg(long, alias = "model", global = true, env = "INGEST_MODEL_VARIANT")]
    pub(crate) model_variant: Option<ingest::ModelVariant>,
    /// Embed and search with the index model only: chunks in other languages get no second
    /// vector from the multilingual model, and questions are not embedded by it (by default
    /// they are, when the index holds such chunks). See docs/EVALUATION.md.
    #[arg(long, global = true)]
    pub(crate) no_multilingual: bool,
    /// Where the index lives: a Qdrant server collection, qdrant://HOST:PORT/COLLECTION
    /// (gRPC port; ?shards=N&replication=N when it creates the collection; API key from
    /// QDRANT_API_KEY). Default: the embedded shard in --data-dir, or the store the data
    /// dir already records.
    #[arg(long, global = true, env = "INGEST_STORE", value_name = "URL")]
    pub(crate) store: Option<String>,
    /// Where the catalog lives: a PostgreSQL database several nodes share,
    /// postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=…&sslrootcert=PATH] (with
    /// --store qdrant://… as their store; the password is never shown). TLS: verify-full
    /// for any host but a loopback one; sslmode=disable, require, verify-ca, verify-full.
    /// Default: the embedded catalog in --data-dir.
    #[arg(
        long,
        global = true,
        env = "INGEST_CATALOG",
        value_name = "URL",
        hide_env_values = true
    )]
    pub(crate) catalog: Option<String>,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Logs (on stderr) as JSON lines, for log collectors.
    #[arg(long, global = true)]
    pub(crate) log_json: bool,
    /// After a read command (search, browse, read, …) opened the index, keep it and its
    /// models loaded in a background reader for SECS seconds without a request, so the next
    /// one answers in milliseconds; a command that writes makes it step aside at once. 0:
    /// never (each command opens the index itself). Embedded indexes only.
    #[arg(
        long,
        global = true,
        env = "INGEST_LINGER",
        value_name = "SECS",
        default_value_t = 120
    )]
    pub(crate) linger: u64,
}

#[derive(Args, Debug)]
pub(crate) struct IngestArgs {
    /// Files, folders and archives to ingest (a folder is synced: files gone from it leave
    /// the index), or remote sources synced the same way: s3://bucket/prefix,
    /// sftp://[user@]host/path, ftp://host/path, webdav://host/path (webdavs:// for HTTPS);
    /// credentials from the environment (docs/SOURCES.md).
    pub(crate) paths: Vec<PathBuf>,
    /// Mark ingested content as shared within the mandate.
    #[arg(long)]
    pub(crate) shared: bool,
    /// When another process writes the data dir (an ingest, watch or serve), wait for it to
    /// end instead of exiting 75 at once.
    #[arg(long)]
    pub(crate) wait: bool,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

#[derive(Args, Debug, Clone)]
pub(crate) struct ExtractArgs {
    /// Memory (address space) of each extraction worker, in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub(crate) extract_memory_mb: u64,
    /// Seconds one file's extraction may take (wall clock and CPU) before it is abandoned,
    /// plus 20 s per MiB of input past the first.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub(crate) extract_timeout: u64,
    /// Parse documents in this process instead of isolated workers (trusted input only: a
    /// parser that aborts takes the whole run down).
    #[arg(long)]
    pub(crate) in_process: bool,
    /// Also ingest files and folders whose names start with `.` inside the folders given
    /// (by default each gets one `ignored` line and nothing under it is read).
    #[arg(long)]
    pub(crate) hidden: bool,
    /// Follow symbolic links inside the folders given (a link leading outside them, or back
    /// into a folder already walked, is `ignored` with the reason); by default each link is
    /// one `ignored` line.
    #[arg(short = 'L', long)]
    pub(crate) follow_links: bool,
    /// Read again files (and archives with members) that failed or were skipped last time,
    /// though unchanged: after raising --extract-timeout, --max-chunks or another limit.
    #[arg(long)]
    pub(crate) retry: bool,
    /// Do not OCR image-only PDF pages and pictures (OCR runs tesseract; without it installed
    /// files are indexed without OCR text anyway).
    #[arg(long)]
    pub(crate) no_ocr: bool,
    /// Most chunks one file may have: a file that needs more is skipped with
    /// `limit: chunks` before any of it is embedded (embedding runs at 25–50 chunks/s on 2 cores).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub(crate) max_chunks: usize,
    /// Catalog checkpoint interval in milliseconds; 0 saves after every stored item (crash
    /// tests use it to reach every state between two writes).
    #[arg(long, hide = true, default_value_t = 2000, value_name = "MS")]
    pub(crate) checkpoint_ms: u64,
    /// Take only part I of N of the files in the folders given (0-based, by a stable hash of
    /// each file's path): N nodes writing one --store collection each run with their own I.
    #[arg(long, value_name = "I/N")]
    pub(crate) partition: Option<ingest::Partition>,
    #[command(flatten)]
    pub(crate) walk: WalkArgs,
    #[command(flatten)]
    pub(crate) recipe: RecipeArgs,
}

/// What a walk of folders leaves out besides hidden entries: globs, and the ignore files it
/// meets (docs/CLI.md, "Exclusions"). Each entry left out is one `ignored` line; nothing
/// under it is read or embedded.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct WalkArgs {
    /// Leave out files and folders matching GLOB (a .gitignore line: `node_modules/`,
    /// `*.log`, `build/**/*.o`; repeat the flag). Also read from `exclude` in the config
    /// file.
    #[arg(long, value_name = "GLOB")]
    pub(crate) exclude: Vec<String>,
    /// Ingest only files matching GLOB (repeat the flag; folders are still walked).
    #[arg(long, value_name = "GLOB")]
    pub(crate) include: Vec<String>,
    /// Do not honour .gitignore, .ignore and .ingestignore files.
    #[arg(long)]
    pub(crate) no_ignore: bool,
}

/// How chunks are cut and what their vectors embed: the index's recipe. An index keeps
/// the recipe it was made with; `ingest reindex` changes it.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct RecipeArgs {
    /// Do not give each file a card (its name, folder, type, title, author, outline as one
    /// more searchable chunk; files without text are found by name only through it).
    #[arg(long)]
    pub(crate) no_file_cards: bool,
    /// Embed table-of-contents dot leaders, bare page numbers and running headers and
    /// footers too (left out by default; the read tools show them either way).
    #[arg(long)]
    pub(crate) keep_junk: bool,
    /// Embed passages without their `title › section` header.
    #[arg(long)]
    pub(crate) no_contextual_headers: bool,
}

impl RecipeArgs {
    /// Apply to the library's chunking settings.
    pub(crate) fn apply(&self, chunking: &mut ingest::ChunkingConfig) {
        chunking.file_cards = !self.no_file_cards;
        chunking.drop_junk = !self.keep_junk;
        chunking.contextual_headers = !self.no_contextual_headers;
    }
}

#[derive(Args, Debug)]
pub(crate) struct ReindexArgs {
    #[command(flatten)]
    pub(crate) recipe: RecipeArgs,
    /// Only give the chunks in other languages than English that lack one their
    /// multilingual vector (an index made before them, or with --no-multilingual): nothing
    /// else is cut or embedded again.
    #[arg(long)]
    pub(crate) multilingual: bool,
}

#[derive(Subcommand, Debug)]
pub(crate) enum Command {
    /// Search what the scope may read, by meaning and words (the agent's `search_documents`
    /// tool): each hit with its score, locator and snippet (weak ones marked low
    /// confidence), within a budget with a cursor to continue. Exits 1 when nothing relevant
    /// was found (no passage holds a content word of the query or comes close to its meaning).
    Search(SearchArgs),
    /// Browse: the scope's top level, a folder's or archive's members, or a document's
    /// outline (the agent's `browse_container` tool).
    Browse(BrowseArgs),
    /// Read one file's content objects, filtered (the agent's `read_content_objects` tool).
    Read(ReadArgs),
    /// Read the text of one section (the agent's `read_section` tool).
    ReadSection(ReadSectionArgs),
    /// Check that a quote occurs in a file: where, and the sentence around it; else the
    /// closest passage with a score (the agent's `verify_quote` tool). Exits 1 when the
    /// quote is not there.
    VerifyQuote(VerifyQuoteArgs),
    /// Write one PDF page (or a region of it), or a picture, as a PNG within a byte budget
    /// (the agent's `render_page` tool).
    RenderPage(RenderPageArgs),
    /// Extract and index one archive member now, e.g. one skipped by a limit (the agent's
    /// `extract_container_item` tool).
    Extract(ExtractItemArgs),
    /// Remote sources registered in the config file (`[[source]]`, docs/SOURCES.md): list
    /// them, browse a folder without indexing it, pull a file or folder into the index now
    /// (the agent's list_sources, browse_source and pull_source tools).
    #[command(subcommand)]
    Source(SourceCommand),
    /// Call any agent tool by name with its JSON arguments, as MCP and HTTP do; the
    /// workflow tools (store_tool_result, recall_tool_result, remember, store_summary,
    /// gather_context, end_workflow) are reached this way. The answer is the tool's JSON.
    Tool(ToolArgs),
    /// Serve the agent's tools over MCP: stdio (for an MCP client that starts this
    /// command), or streamable HTTP on a loopback address with --http. The scope comes
    /// from --user/--feature-instance/--mandate or --config, never from the model.
    Mcp(McpArgs),
    /// What the index holds, where it is and how it was found, its model and its size on
    /// disk (asks the daemon when one runs on this data dir).
    Status,
    /// List the files the index holds (that the scope may read), one line each with its
    /// status, chunks and size; only those under a folder, archive or file when given.
    #[command(visible_alias = "ls")]
    Files(FilesArgs),
    /// Serve uploads over HTTP for platforms not written in Rust: upload (raw body or
    /// multipart), job and file status, delete, search, the agent's tools, /health and
    /// /metrics. Callers authenticate with the API keys of --config, each bound to a scope.
    /// Like `ingest watch`, it is the data dir's one writer while it runs (the CLI's
    /// searches ask it). SIGINT/SIGTERM stop it gracefully: jobs not ended resume at the
    /// next start.
    Serve(ServeArgs),
    /// Keep folders indexed: sync them now, then follow their changes until SIGINT/SIGTERM.
    /// While it runs, `ingest search`, `ingest status`, the tool commands and `ingest mcp` ask it.
    Watch(WatchArgs),
    /// Measure retrieval on a question set (TSV: question, expected locator such as
    /// `pdf/manual.pdf#page=12`, tags): recall@k, page recall@k, MRR and search times per
    /// ranking mode, over what this data dir holds. See docs/EVALUATION.md.
    Eval(EvalArgs),
    /// Write every point of the index (ids, vectors, payloads) to FILE as JSON lines
    /// (gzip when FILE ends in .gz), to move the index to another store.
    Export(TransferArgs),
    /// Add the points of an `ingest export` FILE to the store given by --store (or the data
    /// dir's), without embedding anything; the data dir's catalog then describes that store.
    Import(TransferArgs),
    /// Cut and embed every stored file again with this build's recipe (file cards, junk
    /// left out, contextual headers, chunk sizes; see the flags) and with --model-variant
    /// when given (another model for this index, e.g. multilingual-e5-small), from the
    /// stored texts: no file is read or parsed again. An index made with another recipe
    /// refuses new files until this runs.
    Reindex(ReindexArgs),
    /// The background reader a read command leaves behind (see --linger): holds the index
    /// and answers the data dir's socket until idle, asked to step aside, or the data dir
    /// is gone.
    #[command(hide = true)]
    Linger,
    /// Move this data dir's index into the empty shared catalog of --catalog (PostgreSQL):
    /// its entries, contents, records and workflows; its holder records in the Qdrant
    /// collection are re-keyed to the catalog's, so the data dir becomes the catalog's first
    /// node and others join with --catalog. The index must be in a Qdrant server (not an
    /// embedded shard) and its upload jobs ended. See docs/OPERATIONS.md.
    Migrate,
    /// Inputs whose unpacking took the process down: an input the process died in twice is
    /// quarantined (a `failed` line; not read again until it changes), an upload's body kept
    /// for the operator. List them, or purge them so they are read again.
    #[command(subcommand)]
    Quarantine(QuarantineCommand),
}

/// `ingest quarantine …`.
#[derive(Subcommand, Debug)]
pub(crate) enum QuarantineCommand {
    /// Every mark: quarantined inputs, and inputs a process died in once (tried again).
    #[command(visible_alias = "ls")]
    List,
    /// Remove the marks with these ids (every quarantined one with --all) and the bodies kept
    /// with them: the inputs are read again when they come again.
    Purge {
        /// Mark ids, as `list` prints them.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<String>,
        /// Every quarantined input.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Args, Debug)]
pub(crate) struct FilesArgs {
    /// A folder, archive or file: a path as typed (relative, ~/…) or a locator.
    pub(crate) under: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct TransferArgs {
    /// The export file (.jsonl or .jsonl.gz).
    pub(crate) file: PathBuf,
}

#[derive(Args, Debug)]
pub(crate) struct EvalArgs {
    /// The question set.
    #[arg(required_unless_present = "names")]
    pub(crate) questions: Option<PathBuf>,
    /// Ranking modes to measure (repeat the flag); default: dense, keyword and hybrid.
    #[arg(long = "mode", value_name = "MODE")]
    pub(crate) modes: Vec<SearchMode>,
    /// Recall cut-off: a question counts when an answer is among the first K hits.
    #[arg(long, default_value_t = 5, value_name = "K")]
    pub(crate) k: usize,
    /// Hits asked for per question (MRR is computed over them).
    #[arg(long, default_value_t = 10)]
    pub(crate) limit: usize,
    /// Also print every question missed at K, with the hits it got instead (and every
    /// absent question that got hits).
    #[arg(long)]
    pub(crate) misses: bool,
    /// Leave out hits below this relevance (default: none, as `search`: weak hits are kept,
    /// marked low confidence; absent questions count as flagged when no hit of the first K
    /// has high confidence).
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub(crate) min_score: Option<f32>,
    /// Instead of questions: search for every indexed file by its name and count the files
    /// not among the first K hits (QUESTIONS is then not read).
    #[arg(long)]
    pub(crate) names: bool,
    /// Also score another pipeline's ranked lists for the same questions (JSON lines, see
    /// docs/EVALUATION.md; `make peer` writes them): reported beside ingest's modes. When
    /// the file lists the files that pipeline could read, the questions about them are
    /// tagged `peer-readable` in every mode's table. Repeat for several.
    #[arg(long, value_name = "FILE")]
    pub(crate) ranked: Vec<PathBuf>,
}

#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// The address to listen on (overrides `listen` of the config; port 0 picks a free
    /// one, printed on stdout).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<std::net::SocketAddr>,
    /// The service's TOML file: [[api_keys]] (key, user, feature_instance, mandate),
    /// listen, max_upload_bytes, max_receiving, max_open_jobs, max_scope_runs, max_queries.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: PathBuf,
    /// Also keep these folders (or files) indexed, as `ingest watch` does, in the scope of
    /// --user/--feature-instance/--mandate (repeat for several); a remote source's URL is
    /// synced every 300 s.
    #[arg(long, value_name = "FOLDER")]
    pub(crate) watch: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Folders (or files) to keep indexed, and remote sources (s3://bucket/prefix,
    /// sftp://host/path, ftp://…, webdav://…, imap://user@host/INBOX) synced every
    /// --poll-secs. None: only the sources registered with `sync = true` in the config file.
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
    /// How often remote sources are synced, in seconds (they send no notifications).
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub(crate) poll_secs: u64,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

#[derive(Args, Debug)]
pub(crate) struct SearchArgs {
    /// What to look for, in plain words.
    #[arg(required = true)]
    pub(crate) query: Vec<String>,
    /// Every other flag is an argument of the `search_documents` tool, declared once with it
    /// (`ingest::tools::SearchArgs`): the same names and checks as over MCP and HTTP.
    #[command(flatten)]
    pub(crate) tool: ingest::tools::SearchArgs,
}

/// The answer's budget and where to continue, for every tool command.
#[derive(Args, Debug, Clone, Default)]
pub(crate) struct Budget {
    /// Largest answer, in chars (UTF-8 bytes); default 4000, at least 200.
    #[arg(long, value_name = "N")]
    pub(crate) max_chars: Option<usize>,
    /// Continue the previous answer: its cursor, with the same other arguments.
    #[arg(long, value_name = "CURSOR")]
    pub(crate) cursor: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct BrowseArgs {
    /// A folder, an archive (outer.zip!/inner.tar.gz) or a file, as a path as typed
    /// (relative, ~/…) or a locator; none: the scope's top level.
    pub(crate) locator: Option<String>,
    /// For a document: expand this outline node (an id such as s12).
    #[arg(short, long)]
    pub(crate) section: Option<String>,
    /// Whose file, when two you may read share a locator: an `owner` an earlier answer
    /// showed (e.g. "bob (shared)").
    #[arg(long)]
    pub(crate) owner: Option<String>,
    #[command(flatten)]
    pub(crate) budget: Budget,
}

#[derive(Args, Debug)]
pub(crate) struct ReadArgs {
    /// The file to read: a path as typed (relative, ~/…) or a locator; a fragment
    /// (#page=3, #sheet=S&rows=1-50, #slide=4) reads that part.
    pub(crate) locator: String,
    /// Only these 1-based physical pages: 47 or 40-47.
    #[arg(short, long)]
    pub(crate) pages: Option<String>,
    /// Only this section and its subsections (an id such as s12).
    #[arg(short, long)]
    pub(crate) section: Option<String>,
    /// Only objects of this type: text, image, videostream, audiostream, other.
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    pub(crate) content_type: Option<String>,
    /// Only this spreadsheet sheet.
    #[arg(long)]
    pub(crate) sheet: Option<String>,
    /// With --sheet or for CSV: only these 1-based rows, 1-50.
    #[arg(long)]
    pub(crate) rows: Option<String>,
    /// Only this 1-based slide.
    #[arg(long)]
    pub(crate) slide: Option<u32>,
    /// Read around the locator's #fragment (a search hit's place) instead of only it: the
    /// object holding it (marked hit) with --before and --after objects on either side.
    #[arg(long)]
    pub(crate) around: bool,
    /// With --around: objects before the hit (default 2), or chars with --chars.
    #[arg(long, value_name = "N", requires = "around")]
    pub(crate) before: Option<usize>,
    /// With --around: objects after the hit (default 2), or chars with --chars.
    #[arg(long, value_name = "N", requires = "around")]
    pub(crate) after: Option<usize>,
    /// With --around: --before and --after count chars of text (whole objects; default
    /// 2000), not objects.
    #[arg(long, requires = "around")]
    pub(crate) chars: bool,
    /// Also print each object's positions: its lines' boxes on the page (PDF points from the
    /// page's bottom-left corner; pixels from a picture's top-left), a picture's box.
    #[arg(long)]
    pub(crate) positions: bool,
    /// Whose file, when two you may read share a locator: an `owner` an earlier answer
    /// showed (e.g. "bob (shared)").
    #[arg(long)]
    pub(crate) owner: Option<String>,
    #[command(flatten)]
    pub(crate) budget: Budget,
}

#[derive(Args, Debug)]
pub(crate) struct RenderPageArgs {
    /// A PDF or a picture: a path as typed or a locator; `#page=N` names the page.
    pub(crate) locator: String,
    /// Where to write the PNG (`-` for standard output).
    #[arg(short, long, value_name = "FILE")]
    pub(crate) output: PathBuf,
    /// The 1-based page (default: the locator's #page=, else 1).
    #[arg(short, long)]
    pub(crate) page: Option<u32>,
    /// Resolution in dots per inch (default 100, at most 600); lowered to fit --max-bytes.
    #[arg(long)]
    pub(crate) dpi: Option<u32>,
    /// Only this box: X0,Y0,X1,Y1 in PDF points from the page's bottom-left corner (as
    /// `read --positions` and `verify-quote` print boxes), or a picture's pixels.
    #[arg(
        long,
        value_name = "X0,Y0,X1,Y1",
        value_delimiter = ',',
        allow_negative_numbers = true
    )]
    pub(crate) region: Option<Vec<f64>>,
    /// The PNG's largest size in bytes (default 1000000).
    #[arg(long, value_name = "N")]
    pub(crate) max_bytes: Option<u64>,
    /// Whose file, when two you may read share a locator.
    #[arg(long)]
    pub(crate) owner: Option<String>,
}

#[derive(Args, Debug)]
pub(crate) struct VerifyQuoteArgs {
    /// The file: a path as typed (relative, ~/…) or a locator (a #fragment is ignored).
    pub(crate) locator: String,
    /// The quoted words (white space, line breaks, hyphens, ligatures and case need not
    /// match); `-` reads them from stdin.
    pub(crate) quote: String,
    /// Whose file, when two you may read share a locator: an `owner` an earlier answer
    /// showed (e.g. "bob (shared)").
    #[arg(long)]
    pub(crate) owner: Option<String>,
    /// Budget of the answer in chars (default 4000).
    #[arg(long, value_name = "N")]
    pub(crate) max_chars: Option<usize>,
}

#[derive(Args, Debug)]
pub(crate) struct ReadSectionArgs {
    /// The file: a path as typed (relative, ~/…) or a locator.
    pub(crate) locator: String,
    /// The section's id (s12) from `ingest browse FILE`.
    pub(crate) section: String,
    /// Whose file, when two you may read share a locator: an `owner` an earlier answer
    /// showed (e.g. "bob (shared)").
    #[arg(long)]
    pub(crate) owner: Option<String>,
    #[command(flatten)]
    pub(crate) budget: Budget,
}

#[derive(Args, Debug)]
pub(crate) struct ExtractItemArgs {
    /// The archive member: archive.zip!/path/in/archive.pdf (the archive's path as typed,
    /// relative or ~/…, or as a locator).
    pub(crate) locator: String,
    /// Mark the extracted content as shared within the mandate.
    #[arg(long)]
    pub(crate) shared: bool,
    #[command(flatten)]
    pub(crate) budget: Budget,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

/// `ingest source …`.
#[derive(Subcommand, Debug)]
pub(crate) enum SourceCommand {
    /// The registered sources this scope may use, with how many of their files are indexed.
    #[command(visible_alias = "ls")]
    List {
        #[command(flatten)]
        budget: Budget,
    },
    /// One folder of a source as the service holds it now (nothing is downloaded): files
    /// with size and whether they are indexed, changed since, or not indexed.
    Browse {
        /// The source's name.
        name: String,
        /// A folder below the source's root; none: its root.
        path: Option<String>,
        #[command(flatten)]
        budget: Budget,
    },
    /// Download and index one file or folder of a source now (at most 1000 files per call),
    /// into the source's scope.
    Pull {
        /// The source's name.
        name: String,
        /// A file or folder below the source's root; none: the whole source.
        path: Option<String>,
        /// Largest answer, in chars.
        #[arg(long, value_name = "N")]
        max_chars: Option<usize>,
        #[command(flatten)]
        extract: ExtractArgs,
    },
}

#[derive(Args, Debug)]
pub(crate) struct ToolArgs {
    /// The tool: search_documents, browse_container, read_content_objects, read_section,
    /// extract_container_item, store_tool_result, recall_tool_result, remember,
    /// store_summary, gather_context, end_workflow.
    pub(crate) name: String,
    /// Its arguments as a JSON object (docs/TOOLS.md); `-` reads them from stdin, `@FILE`
    /// from a file. Absent: `{}`.
    pub(crate) args: Option<String>,
    /// `max_chars` and `cursor` given as flags (they replace those of the arguments).
    #[command(flatten)]
    pub(crate) budget: Budget,
}

#[derive(Args, Debug)]
pub(crate) struct McpArgs {
    /// A TOML file: [scope] user/feature_instance/mandate/shared, tools = [...],
    /// max_answer_chars = N, [http] listen = "127.0.0.1:PORT". Flags override it.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Offer only these tools (comma-separated): search_documents, browse_container,
    /// read_content_objects, read_section, extract_container_item.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) tools: Option<Vec<String>>,
    /// The largest answer the server sends, in chars, whatever a call asks [default: 100000].
    #[arg(long, value_name = "N")]
    pub(crate) max_answer_chars: Option<usize>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (loopback addresses only).
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<std::net::SocketAddr>,
    /// Mark what extract_container_item indexes as shared within the mandate.
    #[arg(long)]
    pub(crate) shared: bool,
    #[command(flatten)]
    pub(crate) extract: ExtractArgs,
}

/// How the data directory was chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Origin {
    /// `--data-dir`.
    #[default]
    Flag,
    /// `$INGEST_DATA_DIR`.
    Env,
    /// The nearest `.ingest` in the working directory or above it.
    Nearest,
    /// The per-user default.
    UserDefault,
}

impl Origin {
    /// How `status` says it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::Flag => "--data-dir",
            Origin::Env => "$INGEST_DATA_DIR",
            Origin::Nearest => "the nearest .ingest in the working directory or above",
            Origin::UserDefault => "the per-user default",
        }
    }
}
