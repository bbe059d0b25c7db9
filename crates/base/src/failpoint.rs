//! Failpoints: named places on the write path where a test stops the process exactly as a
//! crash would, so crash safety is tested at chosen points instead of random moments.
//!
//! `INGEST_FAILPOINTS="store.upsert=3"` kills the process with SIGKILL right after the third
//! upsert; `site=N:panic` panics there instead (for panic boundaries); `site=N:error` makes the
//! operation at a [`check`] site return an error (at a write site it is ignored);
//! `site=N:pauseMS` sleeps MS milliseconds there at the Nth pass and every later one (work
//! that lasts, for tests of what holds a place while it runs). Several are separated by
//! commas. Without the variable a failpoint costs one load of an initialised
//! `OnceLock`.
//!
//! Sites (each right *after* the write it names has completed):
//!
//! | site | write |
//! |---|---|
//! | `run.marked` | the run-in-progress marker, before any other write |
//! | `content.written` | a content index file (`content/<hash>.json`) |
//! | `store.upsert` | a batch of points upserted |
//! | `store.set_locators` | a content's `locators` payload re-pointed |
//! | `store.delete` | a content's points deleted |
//! | `catalog.save` | the catalog saved (checkpoints and the final save) |
//! | `store.flush` | the shard flushed at the end of a run |
//! | `repair.store` | a repair's store changes made, catalog not yet saved |
//!
//! Every site above is listed in [`SITES`]; the crash tests iterate over all of them. Sites
//! that are not writes, not in [`SITES`]:
//!
//! | site | place |
//! |---|---|
//! | `sources.download` | a remote source's object about to be downloaded (a sync killed there must converge on the next) |
//! | `unpack.member` | an archive member charged to the member limit, before it is read (`:panic` tests the panic boundary) |
//! | `walk.input` | an input about to be walked (`walk.input~NAME=1:panic` panics at the input whose name holds NAME: the walk's panic boundary) |
//! | `unpack.top` | a top-level input about to be unpacked, its quarantine mark written (`unpack.top~NAME=1` kills the process at the input whose locator holds NAME: the quarantine tests) |
//! | `sync.start` | a sync of the watch daemon, before it starts (`:error` tests the daemon's retry path) |
//! | `content.write` | a content index about to be written (`:error` tests that the file fails) |
//! | `tool.run` | a tool call about to run, in the thread that runs it (`:pause` tests that its places are held while it works) |
//! | `extract.job` | an extraction worker about to run a job, in the worker (`:pause` makes extraction last, for tests of workers whose parent dies) |

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The environment variable that arms failpoints.
pub const ENV: &str = "INGEST_FAILPOINTS";

/// Every failpoint site, in the order a run meets them.
pub const SITES: &[&str] = &[
    "run.marked",
    "content.written",
    "store.upsert",
    "store.set_locators",
    "store.delete",
    "catalog.save",
    "store.flush",
    "repair.store",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Kill,
    Panic,
    Error,
    /// Sleep this many milliseconds, at this pass and every later one.
    Pause(u64),
}

#[derive(Debug)]
struct Armed {
    /// site → (fire at this hit, action)
    points: HashMap<String, (u64, Action)>,
    hits: Mutex<HashMap<&'static str, u64>>,
}

fn armed() -> Option<&'static Armed> {
    static ARMED: OnceLock<Option<Armed>> = OnceLock::new();
    ARMED
        .get_or_init(|| parse(&std::env::var(ENV).ok()?))
        .as_ref()
}

/// `site=N[:kill|:panic|:error],...`; malformed entries are ignored with a warning.
fn parse(spec: &str) -> Option<Armed> {
    let mut points = HashMap::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parsed = item.split_once('=').and_then(|(site, rest)| {
            let (n, action) = match rest.split_once(':') {
                Some((n, "panic")) => (n, Action::Panic),
                Some((n, "error")) => (n, Action::Error),
                Some((n, "kill")) | Some((n, "")) => (n, Action::Kill),
                Some((n, a)) => (n, Action::Pause(a.strip_prefix("pause")?.parse().ok()?)),
                None => (rest, Action::Kill),
            };
            Some((site.to_string(), (n.parse::<u64>().ok()?, action)))
        });
        match parsed {
            Some((site, point)) => {
                points.insert(site, point);
            }
            None => tracing::warn!("{ENV}: ignoring malformed entry {item:?}"),
        }
    }
    (!points.is_empty()).then(|| Armed {
        points,
        hits: Mutex::new(HashMap::new()),
    })
}

/// Count a pass through `site`; the action when it is armed for this pass.
fn pass(site: &'static str) -> Option<(u64, Action)> {
    let armed = armed()?;
    let &(at, action) = armed.points.get(site)?;
    let n = {
        let mut hits = crate::lock(&armed.hits);
        let n = hits.entry(site).or_default();
        *n += 1;
        *n
    };
    let fires = match action {
        Action::Pause(_) => n >= at,
        _ => n == at,
    };
    fires.then_some((n, action))
}

/// Count a pass through `site`; when it is armed for this pass, crash (or panic).
pub fn hit(site: &'static str) {
    if let Some((n, action)) = pass(site) {
        fire(site, n, action);
    }
}

/// Count a pass through `site` concerning `subject` (a locator): armed as `site~TEXT=N`, it
/// counts only the passes whose subject contains TEXT (a crash at one file, whatever the
/// order of the others); armed as `site=N`, every pass.
pub fn hit_for(site: &'static str, subject: &str) {
    hit(site);
    let Some(armed) = armed() else {
        return;
    };
    for (key, &(at, action)) in &armed.points {
        let Some(text) = key.strip_prefix(site).and_then(|k| k.strip_prefix('~')) else {
            continue;
        };
        if !subject.contains(text) {
            continue;
        }
        let n = {
            let mut hits = crate::lock(&armed.hits);
            let n = hits.entry(key.as_str()).or_default();
            *n += 1;
            *n
        };
        let fires = match action {
            Action::Pause(_) => n >= at,
            _ => n == at,
        };
        if fires {
            fire(key, n, action);
        }
    }
}

/// Count a pass through `site`; when it is armed for this pass, fail with an error (or crash,
/// or panic).
pub fn check(site: &'static str) -> crate::error::Result<()> {
    match pass(site) {
        Some((n, Action::Error)) => {
            Err(crate::error::Error::Failpoint(format!("{site} (hit {n})")))
        }
        Some((n, action)) => {
            fire(site, n, action);
            Ok(())
        }
        None => Ok(()),
    }
}

fn fire(site: &str, n: u64, action: Action) {
    match action {
        // A panic is what this failpoint is armed for (testing panic boundaries).
        #[allow(clippy::panic)]
        Action::Panic => panic!("failpoint {site} (hit {n})"),
        Action::Kill => {
            eprintln!("failpoint {site} (hit {n}): SIGKILL");
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            // SIGKILL cannot be caught; should raise fail, still end without cleanup.
            std::process::abort();
        }
        Action::Error => {
            tracing::warn!("failpoint {site} (hit {n}): `error` only acts at check sites")
        }
        Action::Pause(ms) => std::thread::sleep(std::time::Duration::from_millis(ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_malformed_entries_are_dropped() {
        let armed =
            parse("store.upsert=3, catalog.save=1:panic,sync.start=2:error,bad,x=y,z=2:explode,tool.run=1:pause250")
                .unwrap();
        assert_eq!(armed.points.len(), 4);
        assert_eq!(armed.points["tool.run"], (1, Action::Pause(250)));
        assert_eq!(armed.points["sync.start"], (2, Action::Error));
        assert_eq!(armed.points["store.upsert"], (3, Action::Kill));
        assert_eq!(armed.points["catalog.save"], (1, Action::Panic));
        assert!(parse("").is_none());
        assert!(parse("nonsense").is_none());
    }
}
