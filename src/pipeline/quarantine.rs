//! Quarantine: a top-level input whose unpacking took the process down twice is not unpacked
//! a third time.
//!
//! Everything recursive the main process parses is bounded before it is built (mail nesting,
//! archive depth, JSON depth), and parsers that are not run in the isolated workers. Should a
//! parser still abort the process (a stack overflow, an allocation failure: nothing a panic
//! boundary catches), the input would abort it again at every start: an upload job is queued
//! again, a synced source's file is read again. So before a top-level input is unpacked, a
//! *mark* naming it is written to `quarantine/` in the data dir, and removed once unpacking
//! ended (normally, with an error or a panic). A mark found before unpacking means the process
//! that wrote it died while unpacking that input: it is counted, and at the second such death
//! the input is refused with a `failed` line ([`QUARANTINED`]) instead — until it changes (its
//! size or modification time, a remote object's change stamp; an upload is a new job), or
//! until the operator purges the mark (`ingest quarantine purge`). An upload job that ends so
//! keeps its body in the same folder for the operator (`ingest quarantine list` shows it).
//!
//! A mark is written without fsync: it guards against the process dying, not the machine (the
//! page cache outlives the process). Graceful stops end unpacking normally and leave no mark.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::DataDir;

/// How many times the process may die while unpacking one input before it is refused.
pub const MAX_CRASHES: u32 = 2;

/// The start of a quarantined input's reason (its ledger line, its job's reason).
pub const QUARANTINED: &str = "quarantined";

/// The most bytes of a mark read back (a mark is a few hundred bytes).
const MAX_MARK_BYTES: u64 = 64 * 1024;

/// What a mark records of the input it guards.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct QuarantineMark {
    /// The mark's id: a hash of the input's identity (scope, locator, size, time, body).
    pub id: String,
    /// The scope's key.
    pub scope: String,
    /// The input's locator.
    pub locator: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time (a remote object's change stamp), 0 for an upload.
    pub mtime_ns: u64,
    /// How many processes died while unpacking it.
    pub crashes: u32,
    /// Unix seconds of the mark's first writing.
    pub since: f64,
    /// Unix seconds of its latest writing.
    pub last: f64,
    /// Where an upload's body is kept for the operator, once its job ended quarantined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept_body: Option<PathBuf>,
}

impl QuarantineMark {
    /// Whether the input it names is refused.
    pub fn is_quarantined(&self) -> bool {
        self.crashes >= MAX_CRASHES
    }
}

/// What a top-level input is known by while it is unpacked.
#[derive(Debug, Clone)]
pub(crate) struct InputIdentity<'a> {
    pub scope: &'a str,
    pub locator: &'a str,
    pub size: u64,
    pub mtime_ns: u64,
    /// What else tells this input from another of the same name, size and time (an upload's
    /// spooled body, which is one job's), or empty.
    pub body: &'a str,
}

impl InputIdentity<'_> {
    fn id(&self) -> String {
        let mut h = blake3::Hasher::new();
        for part in [self.scope, self.locator, self.body] {
            h.update(part.as_bytes());
            h.update(&[0]);
        }
        h.update(&self.size.to_le_bytes());
        h.update(&self.mtime_ns.to_le_bytes());
        h.finalize().to_hex().as_str().chars().take(32).collect()
    }
}

/// The data dir's quarantine folder.
pub(crate) fn dir(data: &DataDir) -> PathBuf {
    data.root().join("quarantine")
}

fn mark_path(folder: &Path, id: &str) -> PathBuf {
    folder.join(format!("{id}.json"))
}

fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

fn read_mark(path: &Path) -> Option<std::io::Result<QuarantineMark>> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(Err(e)),
    };
    let mut text = String::new();
    if let Err(e) = file.take(MAX_MARK_BYTES).read_to_string(&mut text) {
        return Some(Err(e));
    }
    Some(serde_json::from_str(&text).map_err(std::io::Error::other))
}

fn write_mark(folder: &Path, mark: &QuarantineMark) -> std::io::Result<()> {
    crate::perms::create_dir(folder).map_err(std::io::Error::other)?;
    let path = mark_path(folder, &mark.id);
    let tmp = folder.join(format!("{}.tmp", mark.id));
    let text = serde_json::to_vec(mark).map_err(std::io::Error::other)?;
    crate::perms::write_file(&tmp, &text).map_err(std::io::Error::other)?;
    std::fs::rename(&tmp, &path)
}

/// The guard of one input while it is unpacked: its mark goes when the guard is dropped.
#[must_use]
pub(crate) struct Guarded {
    path: Option<PathBuf>,
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("removing the quarantine mark {}: {e}", path.display());
            }
        }
    }
}

/// Before unpacking `input`: its mark is written (counting a process that died holding an
/// earlier one), or, after [`MAX_CRASHES`] such deaths, the reason it is refused. A mark
/// that cannot be written costs the guard, not the input (logged).
pub(crate) fn enter(
    data: &DataDir,
    input: &InputIdentity<'_>,
) -> std::result::Result<Guarded, String> {
    let folder = dir(data);
    let id = input.id();
    let path = mark_path(&folder, &id);
    let earlier = match read_mark(&path) {
        None => None,
        Some(Ok(mark)) => Some(mark),
        // A mark cut short by the death it records still says one happened.
        Some(Err(e)) => {
            tracing::warn!("an unreadable quarantine mark {}: {e}", path.display());
            Some(QuarantineMark {
                id: id.clone(),
                scope: input.scope.into(),
                locator: input.locator.into(),
                size: input.size,
                mtime_ns: input.mtime_ns,
                crashes: 0,
                since: now(),
                last: now(),
                kept_body: None,
            })
        }
    };
    let crashes = earlier.as_ref().map_or(0, |m| m.crashes.saturating_add(1));
    let mark = QuarantineMark {
        id,
        scope: input.scope.into(),
        locator: input.locator.into(),
        size: input.size,
        mtime_ns: input.mtime_ns,
        crashes,
        since: earlier.as_ref().map_or_else(now, |m| m.since),
        last: now(),
        kept_body: earlier.and_then(|m| m.kept_body),
    };
    if let Err(e) = write_mark(&folder, &mark) {
        tracing::warn!("writing the quarantine mark {}: {e}", path.display());
        return Ok(Guarded { path: None });
    }
    if mark.is_quarantined() {
        tracing::error!(
            locator = input.locator,
            crashes,
            "quarantined: the process died {crashes} times while unpacking it"
        );
        return Err(format!(
            "{QUARANTINED}: the process died {crashes} times while unpacking this file; it is \
             not read again until it changes (`ingest quarantine list`, `ingest quarantine \
             purge {}`)",
            mark.id
        ));
    }
    if crashes > 0 {
        tracing::warn!(
            locator = input.locator,
            "the process died while unpacking this input; trying once more"
        );
    }
    Ok(Guarded { path: Some(path) })
}

/// Every mark of the data dir: inputs being unpacked by a running process, inputs whose
/// unpacking a process died in, and quarantined ones.
pub fn list(data: &DataDir) -> Result<Vec<QuarantineMark>> {
    let folder = dir(data);
    let entries = match std::fs::read_dir(&folder) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                path: folder,
                source,
            })
        }
    };
    let mut marks = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        match read_mark(&path) {
            Some(Ok(mark)) => marks.push(mark),
            Some(Err(e)) => tracing::warn!("an unreadable quarantine mark {}: {e}", path.display()),
            None => {}
        }
    }
    marks.sort_by(|a, b| a.since.total_cmp(&b.since).then(a.id.cmp(&b.id)));
    Ok(marks)
}

/// Remove the marks `ids` (every quarantined one when `ids` is empty) with their kept bodies:
/// the inputs are read again when they come again. The marks removed.
pub fn purge(data: &DataDir, ids: &[String]) -> Result<Vec<QuarantineMark>> {
    let mut purged = Vec::new();
    for mark in list(data)? {
        let chosen = if ids.is_empty() {
            mark.is_quarantined()
        } else {
            ids.contains(&mark.id)
        };
        if !chosen {
            continue;
        }
        if let Some(body) = &mark.kept_body {
            let _ = std::fs::remove_file(body);
        }
        let path = mark_path(&dir(data), &mark.id);
        std::fs::remove_file(&path).map_err(|source| Error::Io { path, source })?;
        purged.push(mark);
    }
    Ok(purged)
}

/// Keep the spooled `body` of an upload that ended quarantined beside its mark (found by the
/// job's `locator` among the quarantined marks of `scope`), for the operator.
pub(crate) fn keep_body(data: &DataDir, scope: &str, locator: &str, body: &Path) {
    let Ok(marks) = list(data) else {
        return;
    };
    let Some(mut mark) = marks.into_iter().find(|m| {
        m.is_quarantined() && m.scope == scope && m.locator == locator && m.kept_body.is_none()
    }) else {
        return;
    };
    let folder = dir(data);
    let kept = folder.join(format!("{}.body", mark.id));
    let moved = std::fs::rename(body, &kept)
        .or_else(|_| std::fs::copy(body, &kept).and_then(|_| std::fs::remove_file(body)));
    match moved {
        Ok(()) => {
            mark.kept_body = Some(kept);
            if let Err(e) = write_mark(&folder, &mark) {
                tracing::warn!("recording a quarantined body: {e}");
            }
        }
        Err(e) => tracing::warn!("keeping a quarantined upload's body: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input<'a>(locator: &'a str, size: u64) -> InputIdentity<'a> {
        InputIdentity {
            scope: "u/f/m",
            locator,
            size,
            mtime_ns: 7,
            body: "",
        }
    }

    #[test]
    fn an_input_is_refused_after_the_second_death_in_it_until_it_changes_or_is_purged() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        // A normal end leaves no mark.
        drop(enter(&data, &input("a.eml", 10)).unwrap());
        assert!(list(&data).unwrap().is_empty());
        // A death while unpacking (the guard forgotten as the process would): a mark.
        std::mem::forget(enter(&data, &input("a.eml", 10)).unwrap());
        let marks = list(&data).unwrap();
        assert_eq!(marks.len(), 1);
        assert_eq!(marks[0].crashes, 0);
        // The next process tries once more, and dies again.
        std::mem::forget(enter(&data, &input("a.eml", 10)).unwrap());
        assert_eq!(list(&data).unwrap()[0].crashes, 1);
        // The third is refused, saying why and how to purge.
        let refused = enter(&data, &input("a.eml", 10)).err().unwrap();
        assert!(
            refused.starts_with("quarantined: the process died 2 times"),
            "{refused}"
        );
        let id = list(&data).unwrap()[0].id.clone();
        assert!(refused.contains(&id), "{refused}");
        // And again at every later start.
        assert!(enter(&data, &input("a.eml", 10)).is_err());
        // Changed (another size), it is read: a new identity.
        drop(enter(&data, &input("a.eml", 11)).unwrap());
        // Another input beside it is never touched.
        drop(enter(&data, &input("b.txt", 10)).unwrap());
        // A kept body goes with its mark.
        let body = tmp.path().join("job.body");
        std::fs::write(&body, b"bytes").unwrap();
        keep_body(&data, "u/f/m", "a.eml", &body);
        let kept = list(&data).unwrap()[0].kept_body.clone().unwrap();
        assert!(kept.is_file() && !body.exists());
        let purged = purge(&data, &[]).unwrap();
        assert_eq!(purged.len(), 1);
        assert!(!kept.exists());
        assert!(list(&data).unwrap().is_empty());
        drop(enter(&data, &input("a.eml", 10)).unwrap());
    }

    #[test]
    fn a_mark_cut_short_counts_as_a_death() {
        let tmp = tempfile::tempdir().unwrap();
        let data = DataDir::at(tmp.path());
        std::mem::forget(enter(&data, &input("c.zip", 1)).unwrap());
        let path = std::fs::read_dir(dir(&data))
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::write(&path, b"{\"id\": \"ab").unwrap();
        let g = enter(&data, &input("c.zip", 1)).unwrap();
        std::mem::forget(g);
        assert_eq!(list(&data).unwrap()[0].crashes, 1);
    }
}
