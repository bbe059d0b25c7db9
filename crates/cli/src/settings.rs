//! The user's configuration file: lists a person wants on every run without typing them
//! (docs/CLI.md, "Exclusions"). `$INGEST_CONFIG`, else `$XDG_CONFIG_HOME/ingest/config.toml`,
//! else `~/.config/ingest/config.toml`; none is fine. TOML:
//!
//! ```toml
//! exclude = ["node_modules/", "target/", "*.log"]   # as --exclude, before the flags'
//! include = []                                      # as --include
//! catalog = "postgres://ingest:PASSWORD@db/kb"     # as --catalog (keep the file owner-only)
//!
//! [[source]]                                        # a remote folder registered for a scope
//! name = "team-reports"
//! url = "s3://reports/2026"
//! mandate = "acme"
//! user = "alice"
//! shared = true
//! sync = true                                       # polled by `ingest watch` / `serve`
//! credentials = { access_key_id = "…", secret_access_key = "…" }  # else the environment
//!
//! [source_destinations]                             # where sources may connect besides
//! allow = ["10.20.0.0/16"]                          # the hosts their URLs name
//! deny = []
//! ```
//!
//! A file that gives a source's secret must be readable by its owner only (as SSH asks of
//! a key): otherwise it is refused.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use ingest::{Config, Ingestor, Isolation, Scope};

use crate::cli::{Common, ExtractArgs, WalkArgs};
use crate::exit::Usage;

/// The largest configuration file read.
const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// What the file may say.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Settings {
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub include: Vec<String>,
    /// The shared catalog, when `--catalog` and `INGEST_CATALOG` do not say.
    #[serde(default)]
    pub catalog: Option<String>,
    /// Remote folders registered for scopes (`[[source]]`): what the agent's source tools
    /// name and the daemons keep synced (docs/SOURCES.md).
    #[serde(default, rename = "source")]
    pub sources: Vec<ingest::RegisteredSource>,
    /// Where sources may connect besides the hosts their URLs name (docs/SOURCES.md).
    #[serde(default)]
    pub source_destinations: ingest::Destinations,
}

/// Where the file is looked for.
fn path() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(p) = var("INGEST_CONFIG") {
        return Some(PathBuf::from(p));
    }
    let base = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| var("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("ingest/config.toml"))
}

impl Settings {
    /// The user's file, or nothing when there is none; a file that is too large or does
    /// not parse is an error naming it.
    pub(crate) fn load() -> anyhow::Result<Settings> {
        match path() {
            Some(p) if p.exists() => Settings::read(&p),
            _ => Ok(Settings::default()),
        }
    }

    fn read(path: &Path) -> anyhow::Result<Settings> {
        let size = std::fs::metadata(path)
            .with_context(|| format!("reading {}", path.display()))?
            .len();
        anyhow::ensure!(
            size <= MAX_CONFIG_BYTES,
            "{}: {size} bytes; a configuration file may have at most {MAX_CONFIG_BYTES}",
            path.display()
        );
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CONFIG_BYTES).read_to_string(&mut text))
            .with_context(|| format!("reading {}", path.display()))?;
        let settings: Settings =
            toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        ingest::sources_check(&settings.sources)
            .and_then(|()| settings.source_destinations.check())
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let secret = settings.sources.iter().any(|s| {
            let c = &s.credentials;
            [
                &c.secret_access_key,
                &c.session_token,
                &c.password,
                &c.token,
            ]
            .iter()
            .any(|v| v.is_some())
        });
        if secret {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(path)
                .with_context(|| format!("reading {}", path.display()))?
                .permissions()
                .mode();
            anyhow::ensure!(
                mode & 0o077 == 0,
                "{}: it holds a source's secret but others may read it (mode {:o}): chmod 600 it",
                path.display(),
                mode & 0o777
            );
        }
        Ok(settings)
    }

    /// The walk's exclusions: this file's lists, then the flags', globs with a `/` anchored
    /// at `cwd`.
    pub(crate) fn exclusions(&self, args: &WalkArgs, cwd: &Path) -> ingest::Exclusions {
        ingest::Exclusions {
            exclude: self.exclude.iter().chain(&args.exclude).cloned().collect(),
            include: self.include.iter().chain(&args.include).cloned().collect(),
            ignore_files: !args.no_ignore,
            glob_root: Some(cwd.to_path_buf()),
        }
    }
}

/// The scope of `--user`, `--feature-instance`, `--mandate` and `--shared`, refused when
/// its ids could be confused with another scope's or it shares without a mandate.
pub(crate) fn scope(common: &Common, shared: bool) -> anyhow::Result<Scope> {
    let scope = Scope {
        user_id: common.user.clone().unwrap_or_else(|| "local".into()),
        feature_instance_id: common.feature_instance.clone(),
        mandate_id: common.mandate.clone(),
        is_shared: shared,
        workflow_id: None,
    };
    ingest::check_scope(&scope).map_err(|e| anyhow::anyhow!("invalid scope: {e}"))?;
    Ok(scope)
}

pub(crate) fn open(common: &Common, extract: Option<&ExtractArgs>) -> anyhow::Result<Ingestor> {
    Ingestor::open(config(common, extract)?)
        .with_context(|| format!("opening {}", common.data_dir.display()))
}

/// The library's configuration from the command line: data and model folders and, for
/// commands that extract, the extraction settings.
pub(crate) fn config(common: &Common, extract: Option<&ExtractArgs>) -> anyhow::Result<Config> {
    let mut config = Config::new(&common.data_dir);
    config.server = common.store.as_deref().map(str::parse).transpose()?;
    let settings = Settings::load()?;
    config.sources = settings.sources.clone();
    config.source_destinations = settings.source_destinations.clone();
    let catalog = match &common.catalog {
        Some(url) => Some(url.clone()),
        None => settings.catalog.clone(),
    };
    config.catalog = catalog.as_deref().map(str::parse).transpose()?;
    config.model_dir = common.model_dir.clone();
    config.model_variant = common.model_variant;
    config.multilingual = !common.no_multilingual;
    if let Some(args) = extract {
        config.partition = args.partition;
        config.include_hidden = args.hidden;
        config.follow_links = args.follow_links;
        config.retry_unindexed = args.retry;
        config.ocr.enabled = !args.no_ocr;
        config.chunking.max_file_chunks = args.max_chunks;
        args.recipe.apply(&mut config.chunking);
        config.checkpoint_interval = std::time::Duration::from_millis(args.checkpoint_ms);
        let cwd = std::env::current_dir().context("the working directory")?;
        config.exclusions = settings.exclusions(&args.walk, &cwd);
        config.exclusions.check().map_err(Usage)?;
        let iso = &mut config.isolation;
        iso.memory_bytes = args.extract_memory_mb.saturating_mul(1024 * 1024);
        iso.cpu_seconds = args.extract_timeout;
        iso.deadline = std::time::Duration::from_secs(args.extract_timeout);
        if args.in_process {
            iso.mode = Isolation::InProcess;
        }
    }
    Ok(config)
}
