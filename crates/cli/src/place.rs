//! Where things are for a person at a terminal: which data directory a command works on
//! (and whether an index is there), and what locator a path typed on the command line means.
//!
//! The data directory is found like git finds its repository: `--data-dir`, else
//! `$INGEST_DATA_DIR`, else the nearest `.ingest` folder in the working directory or one of
//! its parents, else the per-user default (`$XDG_DATA_HOME/ingest`, or
//! `~/.local/share/ingest`). Commands that only read never create one: without an index
//! there they stop with [`NoIndex`].

use std::path::{Component, Path, PathBuf};

use crate::cli::{Cli, Command, Common, Origin};

/// The name of a data directory the lookup finds in a folder or its parents.
pub(crate) const NEAREST_NAME: &str = ".ingest";

/// What the environment offers the lookup (tests give their own).
pub(crate) struct Env {
    pub env_dir: Option<PathBuf>,
    pub cwd: PathBuf,
    pub home: Option<PathBuf>,
    pub xdg_data_home: Option<PathBuf>,
}

impl Env {
    /// This process's environment.
    pub(crate) fn current() -> anyhow::Result<Env> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Env {
            env_dir: var("INGEST_DATA_DIR"),
            cwd: std::env::current_dir()
                .map_err(|e| anyhow::anyhow!("the working directory: {e}"))?,
            home: var("HOME"),
            xdg_data_home: var("XDG_DATA_HOME").filter(|p| p.is_absolute()),
        })
    }
}

/// The data directory for `flag` (`--data-dir`, if given) in `env`, and how it was chosen.
pub(crate) fn locate(flag: Option<&Path>, env: &Env) -> anyhow::Result<(PathBuf, Origin)> {
    if let Some(dir) = flag {
        return Ok((dir.to_path_buf(), Origin::Flag));
    }
    if let Some(dir) = &env.env_dir {
        return Ok((dir.clone(), Origin::Env));
    }
    if let Some(dir) = env
        .cwd
        .ancestors()
        .map(|d| d.join(NEAREST_NAME))
        .find(|d| d.is_dir())
    {
        return Ok((dir, Origin::Nearest));
    }
    let base = match (&env.xdg_data_home, &env.home) {
        (Some(xdg), _) => xdg.clone(),
        (None, Some(home)) => home.join(".local/share"),
        (None, None) => anyhow::bail!(
            "no data directory: no .ingest folder here or above, and no HOME for the per-user default; pass --data-dir"
        ),
    };
    Ok((base.join("ingest"), Origin::UserDefault))
}

/// The document tools (the first five of [`ingest::tools::TOOL_NAMES`]): they read an
/// index; the workflow tools may start one.
pub(crate) fn reads_documents(tool: &str) -> bool {
    ingest::tools::TOOL_NAMES.iter().take(5).any(|t| *t == tool)
}

/// Settle where the command works: the data directory the lookup finds and, for a command
/// that only reads, that an index is there ([`NoIndex`] otherwise: nothing is created).
pub(crate) fn settle(cli: &mut Cli) -> anyhow::Result<()> {
    let (path, origin) = locate(cli.common.data_dir_flag.as_deref(), &Env::current()?)?;
    cli.common.data_dir = path;
    cli.common.data_dir_origin = origin;
    let reads = match &cli.command {
        None
        | Some(Command::Watch(_) | Command::Serve(_) | Command::Import(_) | Command::Source(_)) => {
            false
        }
        Some(Command::Tool(args)) => reads_documents(&args.name),
        // Checked by `faces::mcp` once its arguments are.
        Some(Command::Mcp(_)) => false,
        Some(_) => true,
    };
    if reads {
        require_index(&cli.common)?;
    }
    Ok(())
}

/// Whether `dir` holds an index (or a daemon serving one): [`ingest::DataDir::holds_index`].
pub(crate) fn is_index(dir: &Path) -> bool {
    ingest::DataDir::at(dir).holds_index()
}

/// A read command found no index where it looked.
#[derive(Debug, thiserror::Error)]
#[error("no index at {path} ({origin}): run `ingest PATH…` first, or pass --data-dir")]
pub(crate) struct NoIndex {
    pub path: String,
    pub origin: &'static str,
}

/// Stop with [`NoIndex`] unless the command's data directory holds an index, or `--store`
/// or `--catalog` names where the index lives (a node reading a collection and catalog
/// other nodes wrote starts with an empty data directory).
pub(crate) fn require_index(common: &Common) -> anyhow::Result<()> {
    if common.store.is_some() || common.catalog.is_some() || is_index(&common.data_dir) {
        return Ok(());
    }
    Err(NoIndex {
        path: common.data_dir.display().to_string(),
        origin: common.data_dir_origin.as_str(),
    }
    .into())
}

/// `path` made absolute against `cwd` (`~` and `~/…` against `home`), `.` and `..` taken out
/// by their names, without asking the filesystem.
pub(crate) fn absolute(path: &str, cwd: &Path, home: Option<&Path>) -> PathBuf {
    let joined = match (path.strip_prefix('~'), home) {
        (Some(""), Some(home)) => home.to_path_buf(),
        (Some(rest), Some(home)) if rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => cwd.join(path),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The locator a person means by `typed`: a path as typed at a shell (relative to `cwd`,
/// `~/…`), or a locator (`/abs/a.zip!/docs/b.pdf`, `a.pdf#page=3`), or the two mixed
/// (`docs/a.zip!/b.pdf`). The part naming a file or folder on disk is made absolute, and
/// canonical when it exists (as ingesting recorded it); what follows it (`!/member`,
/// `#fragment`) is kept as typed. An empty string stays empty (the scope's top level).
pub(crate) fn locator_for(typed: &str, cwd: &Path, home: Option<&Path>) -> String {
    let typed = typed.trim();
    if typed.is_empty() {
        return String::new();
    }
    // A remote source's locator (`s3://bucket/a.pdf`, `imap://host/INBOX/0042 x.eml!/…`).
    if ingest::SourceUrl::looks_like_one(typed) {
        return typed.to_string();
    }
    // A path that exists as typed is a path, whatever it holds (`#`, `!/`, `%`).
    let whole = absolute(typed, cwd, home);
    if std::fs::symlink_metadata(&whole).is_ok() {
        return on_disk(&whole);
    }
    let cut = [typed.find("!/"), typed.find('#')]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(typed.len());
    let (disk, rest) = typed.split_at(cut);
    let path = absolute(disk, cwd, home);
    if std::fs::symlink_metadata(&path).is_ok() {
        return format!("{}{rest}", on_disk(&path));
    }
    // Not on disk (removed since, or a locator copied from an answer): absolute, and
    // otherwise as typed (it may hold a locator's escapes already).
    if Path::new(disk).is_absolute() {
        return typed.to_string();
    }
    format!("{}{rest}", path.display())
}

/// The locator of a path that exists: canonical (links resolved, as a walk records it) and
/// escaped as a locator's first segment.
fn on_disk(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    extractors::Locator::root(extractors::segment_from_bytes(path.as_os_str().as_bytes()))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(cwd: &Path) -> Env {
        Env {
            env_dir: None,
            cwd: cwd.to_path_buf(),
            home: Some(PathBuf::from("/home/u")),
            xdg_data_home: None,
        }
    }

    #[test]
    fn the_data_dir_is_the_flag_then_the_variable_then_the_nearest_then_the_users() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let deep = root.join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        let mut e = env(&deep);
        assert_eq!(
            locate(None, &e).unwrap(),
            (
                PathBuf::from("/home/u/.local/share/ingest"),
                Origin::UserDefault
            )
        );
        e.xdg_data_home = Some(PathBuf::from("/x"));
        assert_eq!(locate(None, &e).unwrap().0, PathBuf::from("/x/ingest"));
        std::fs::create_dir(root.join("a/.ingest")).unwrap();
        assert_eq!(
            locate(None, &e).unwrap(),
            (root.join("a/.ingest"), Origin::Nearest)
        );
        e.env_dir = Some(PathBuf::from("/from/env"));
        assert_eq!(locate(None, &e).unwrap().1, Origin::Env);
        let flag = Path::new("rel/data");
        assert_eq!(
            locate(Some(flag), &e).unwrap(),
            (flag.to_path_buf(), Origin::Flag)
        );
        e.env_dir = None;
        e.xdg_data_home = None;
        e.home = None;
        e.cwd = PathBuf::from("/");
        assert!(locate(None, &e).is_err() || Path::new("/.ingest").is_dir());
    }

    #[test]
    fn an_index_is_a_folder_with_what_only_an_index_holds() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_index(&dir.path().join("nope")));
        assert!(!is_index(dir.path()), "an empty folder is no index");
        std::fs::write(dir.path().join("catalog.sqlite"), "").unwrap();
        assert!(is_index(dir.path()), "today's catalog");
        std::fs::remove_file(dir.path().join("catalog.sqlite")).unwrap();
        std::fs::write(dir.path().join("catalog.json"), "{}").unwrap();
        assert!(is_index(dir.path()), "a catalog from before the database");
    }

    #[test]
    fn a_typed_path_becomes_the_locator_ingesting_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/a.zip"), "zip").unwrap();
        std::fs::write(root.join("docs/50% #1.txt"), "odd").unwrap();
        let home = root.join("docs");
        let at = |typed: &str| locator_for(typed, &root, Some(&home));
        let r = root.display();
        assert_eq!(at("docs/a.zip"), format!("{r}/docs/a.zip"));
        assert_eq!(at("./docs/../docs/a.zip"), format!("{r}/docs/a.zip"));
        assert_eq!(at("~/a.zip"), format!("{r}/docs/a.zip"));
        assert_eq!(at("~"), format!("{r}/docs"));
        assert_eq!(
            at("docs/a.zip!/in/b.pdf#page=2"),
            format!("{r}/docs/a.zip!/in/b.pdf#page=2")
        );
        assert_eq!(at(&format!("{r}/docs/a.zip")), format!("{r}/docs/a.zip"));
        // A remote source's locator is one as typed.
        for remote in [
            "s3://b/x/a.zip!/c.pdf#page=3",
            "imap://h:143/INBOX/0042 Budget.eml",
        ] {
            assert_eq!(at(remote), remote);
        }
        // A name with a locator's special characters is escaped as ingesting escaped it.
        assert_eq!(at("docs/50% #1.txt"), format!("{r}/docs/50%25 %231.txt"));
        // Gone from disk: absolute, the rest as typed; a locator stays as it is.
        assert_eq!(at("gone/x.pdf#page=1"), format!("{r}/gone/x.pdf#page=1"));
        assert_eq!(at("/srv/x%25.pdf"), "/srv/x%25.pdf");
        assert_eq!(at(""), "");
    }
}
