//! The watch-folder daemon: keep the index equal to a set of folders, forever.
//!
//! On start it reconciles every folder with the catalog (catching what changed while it was
//! down), then follows OS file notifications. Changes are collected until the folders have been
//! quiet for a short while (editors and copies write in bursts), reduced to the outermost
//! changed paths, and synced in one run: a path that exists is ingested (unchanged files cost
//! a stat), a path that is gone takes its files out of the index, a rename is both. A periodic
//! rescan catches what notifications miss (overflowing queues, network filesystems). A stop
//! request (SIGINT/SIGTERM) lets the current run drain what is in flight and end cleanly.
//!
//! A sync that fails (the store or the model unusable for a moment, a full disk) does not end
//! the daemon: the error is logged and, after a pause that doubles from 1 s up to 60 s while
//! failures go on, the index is repaired (as after a crash) and every folder synced again.
//! Only a stop request ends it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::Watcher as _;

use extractors::Scope;
use ingest::Ingestor;
use ingest::Input;
use ingest_base::error::{Error, Result};
use ingest_base::report::{FileReport, IngestReport};
use ingest_unpack::is_hidden;

/// How the daemon watches.
#[derive(Debug, Clone)]
pub struct WatchConfig {
    /// Folders (or files) to keep indexed.
    pub roots: Vec<PathBuf>,
    /// The scope the folders are ingested into.
    pub scope: Scope,
    /// Quiet time after the last change before a sync starts.
    pub debounce: Duration,
    /// Longest a change waits while changes keep coming.
    pub max_delay: Duration,
    /// Full rescan interval (a safety net behind notifications).
    pub rescan: Duration,
    /// Remote sources to keep indexed (S3, SFTP, FTP, WebDAV) in `scope`: synced at the
    /// start, then every `poll` (they send no notifications). The registered sources marked
    /// `sync` ([`ingest::Config::sources`]) are polled alike, each in its own scope.
    pub sources: Vec<ingest_sources::Source>,
    /// How often the remote sources are synced.
    pub poll: Duration,
}

impl WatchConfig {
    /// Watch `roots` for `scope`, with the default debounce and rescan interval.
    pub fn new(roots: Vec<PathBuf>, scope: Scope) -> Self {
        WatchConfig {
            roots,
            scope,
            debounce: Duration::from_millis(300),
            max_delay: Duration::from_secs(3),
            rescan: Duration::from_secs(600),
            sources: Vec::new(),
            poll: Duration::from_secs(300),
        }
    }
}

/// What a sync was started by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncCause {
    /// The first sync when the daemon starts.
    Start,
    /// File notifications, after the debounce.
    Changes,
    /// The periodic full rescan.
    Rescan,
    /// The periodic sync of the remote sources.
    Poll,
    /// A full sync after one that failed.
    Retry,
}

/// The pause before retrying a failed sync: doubles from `first` to at most `max`.
#[derive(Debug)]
struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    fn new(first: Duration, max: Duration) -> Self {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The pause before the next retry.
    fn failed(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }

    fn succeeded(&mut self) {
        self.next = self.first;
    }
}

/// Watch `config.roots` until `stop` is set, syncing changes into `ingestor`. Blocks.
/// `on_sync` is called after every sync with its cause and report; `on_file` with each file
/// line as it is decided.
pub fn watch(
    ingestor: &Ingestor,
    config: &WatchConfig,
    stop: &AtomicBool,
    on_file: &(dyn Fn(&FileReport) + Sync),
    on_sync: &mut dyn FnMut(SyncCause, &IngestReport),
) -> Result<()> {
    let registered: Vec<(ingest_sources::Source, Scope)> = ingestor
        .config()
        .sources
        .iter()
        .filter(|s| s.sync)
        .filter_map(|s| Some((s.source().ok()?, s.owner())))
        .collect();
    let polled = !config.sources.is_empty() || !registered.is_empty();
    if config.roots.is_empty() && !polled {
        return Err(Error::Config(
            "nothing to watch: give folders or source URLs, or register sources with `sync = true` in the config file".into(),
        ));
    }
    let roots: Vec<PathBuf> = config
        .roots
        .iter()
        .map(|r| std::fs::canonicalize(r).map_err(|e| Error::io(r, e)))
        .collect::<Result<_>>()?;
    // The index writes into its data directory: when that lies inside a watched folder, its
    // own writes must not count as changes.
    let data_dir = std::fs::canonicalize(&ingestor.config().data_dir).ok();
    let include_hidden = ingestor.config().include_hidden;
    let (tx, rx) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(tx)
        .map_err(|e| Error::Daemon(format!("file notifications: {e}")))?;
    for root in &roots {
        watcher
            .watch(root, notify::RecursiveMode::Recursive)
            .map_err(|e| Error::Daemon(format!("watching {}: {e}", root.display())))?;
    }
    // Notifications are on before the first sync, so nothing slips between the two.
    // A full sync (start, rescan, retry) takes the remote sources too; changes only paths.
    let sync = |paths: &[PathBuf], sources: &[ingest_sources::Source]| {
        ingest_base::failpoint::check("sync.start")?;
        let inputs = paths
            .iter()
            .cloned()
            .map(Input::Path)
            .chain(sources.iter().cloned().map(|s| Input::Remote(Box::new(s))))
            .collect();
        ingestor.ingest_until(inputs, &config.scope, on_file, stop)
    };
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
    // When a sync failed: when to try again. Until then changes are only collected (the
    // retry syncs every folder).
    let mut retry_at: Option<Instant> = None;
    let mut run = |cause: SyncCause, paths: &[PathBuf], retry_at: &mut Option<Instant>| {
        let sources: &[ingest_sources::Source] = match cause {
            SyncCause::Start | SyncCause::Rescan | SyncCause::Retry | SyncCause::Poll => {
                &config.sources
            }
            SyncCause::Changes => &[],
        };
        let result = if cause == SyncCause::Retry {
            // A failed run leaves store and catalog as a crash would: reconcile them first.
            ingestor.repair().and_then(|_| sync(paths, sources))
        } else {
            sync(paths, sources)
        };
        if cause != SyncCause::Changes {
            // Registered sources, each in its own scope; a failed one waits for the next poll.
            for (source, owner) in &registered {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                match ingestor.ingest_until(
                    vec![Input::Remote(Box::new(source.clone()))],
                    owner,
                    on_file,
                    stop,
                ) {
                    Ok(report) => on_sync(cause, &report),
                    Err(e) => tracing::error!(
                        source = %source.url,
                        "registered source sync failed: {e}; trying again at the next poll"
                    ),
                }
            }
        }
        match result {
            Ok(report) => {
                backoff.succeeded();
                *retry_at = None;
                on_sync(cause, &report);
            }
            Err(e) => {
                let pause = backoff.failed();
                tracing::error!(
                    cause = ?cause,
                    retry_in_secs = pause.as_secs_f64(),
                    "sync failed: {e}; retrying"
                );
                *retry_at = Some(Instant::now() + pause);
            }
        }
    };
    run(SyncCause::Start, &roots, &mut retry_at);

    let mut pending: BTreeSet<PathBuf> = BTreeSet::new();
    let mut first_change: Option<Instant> = None;
    let mut last_change = Instant::now();
    let mut last_rescan = Instant::now();
    let mut last_poll = Instant::now();
    let mut rescan_now = false;
    while !stop.load(Ordering::SeqCst) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(event)) => {
                if event.need_rescan() {
                    rescan_now = true;
                }
                let paths: Vec<PathBuf> = event
                    .paths
                    .into_iter()
                    .filter(|p| data_dir.as_ref().is_none_or(|d| !p.starts_with(d)))
                    .filter(|p| include_hidden || !hidden_below_roots(p, &roots))
                    .collect();
                if !matches!(event.kind, notify::EventKind::Access(_)) && !paths.is_empty() {
                    pending.extend(paths);
                    first_change.get_or_insert_with(Instant::now);
                    last_change = Instant::now();
                }
            }
            Ok(Err(e)) => {
                tracing::warn!("file notifications: {e}; rescanning");
                rescan_now = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Error::Daemon("file notifications stopped".into()));
            }
        }
        if let Some(at) = retry_at {
            if Instant::now() >= at && !stop.load(Ordering::SeqCst) {
                pending.clear();
                first_change = None;
                rescan_now = false;
                last_rescan = Instant::now();
                run(SyncCause::Retry, &roots, &mut retry_at);
            }
            continue;
        }
        if rescan_now || last_rescan.elapsed() >= config.rescan {
            rescan_now = false;
            pending.clear();
            first_change = None;
            last_rescan = Instant::now();
            last_poll = Instant::now();
            run(SyncCause::Rescan, &roots, &mut retry_at);
            continue;
        }
        if polled && last_poll.elapsed() >= config.poll {
            last_poll = Instant::now();
            run(SyncCause::Poll, &[], &mut retry_at);
            continue;
        }
        let due = first_change.is_some_and(|first| {
            last_change.elapsed() >= config.debounce || first.elapsed() >= config.max_delay
        });
        if due {
            let paths = outermost(std::mem::take(&mut pending), &roots);
            first_change = None;
            if !paths.is_empty() {
                run(SyncCause::Changes, &paths, &mut retry_at);
            }
        }
    }
    Ok(())
}

/// Whether `path` is, or lies inside, a hidden entry below the root that holds it: a sync
/// would skip it, so its changes need none (the periodic rescan notes new hidden entries).
fn hidden_below_roots(path: &Path, roots: &[PathBuf]) -> bool {
    roots
        .iter()
        .filter_map(|r| path.strip_prefix(r).ok())
        .any(|rel| rel.components().any(|c| is_hidden(c.as_os_str())))
}

/// The changed paths that are not inside another changed path, limited to the roots.
fn outermost(paths: BTreeSet<PathBuf>, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        if !roots.iter().any(|r| p.starts_with(r)) {
            continue;
        }
        // Sorted, so an enclosing path comes first.
        if out.last().is_some_and(|last| p.starts_with(last)) {
            continue;
        }
        out.push(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_from_one_second_to_a_minute() {
        let mut b = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let pauses: Vec<u64> = (0..8).map(|_| b.failed().as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 60, 60]);
        b.succeeded();
        assert_eq!(b.failed(), Duration::from_secs(1));
    }

    #[test]
    fn hidden_means_hidden_below_the_root() {
        let roots = vec![PathBuf::from("/home/u/.inbox")];
        let hidden = |p: &str| hidden_below_roots(Path::new(p), &roots);
        assert!(!hidden("/home/u/.inbox/report.pdf"));
        assert!(!hidden("/home/u/.inbox"));
        assert!(hidden("/home/u/.inbox/.git/index"));
        assert!(hidden("/home/u/.inbox/notes/.report.md.swp"));
    }

    #[test]
    fn changes_reduce_to_their_outermost_paths_inside_the_roots() {
        let roots = vec![PathBuf::from("/w")];
        let paths: BTreeSet<PathBuf> = [
            "/w/a/b.txt",
            "/w/a",
            "/w/c.txt",
            "/w/ab.txt",
            "/elsewhere/x",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        assert_eq!(
            outermost(paths, &roots),
            vec![
                PathBuf::from("/w/a"),
                PathBuf::from("/w/ab.txt"),
                PathBuf::from("/w/c.txt")
            ]
        );
    }
}
