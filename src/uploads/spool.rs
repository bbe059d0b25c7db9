//! Receiving an upload: its body streamed to a file in the data directory, hashed on the way,
//! never held in memory whole (one buffer of [`BUFFER`] bytes), refused past a size limit.
//!
//! Every upload is written to disk, small ones too: an accepted upload must survive a crash
//! of the service, and the file is synced before the job is accepted.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use crate::error::{BodyCut, Error, Result};
use crate::DataDir;

/// Bytes read from the body at a time.
pub(crate) const BUFFER: usize = 64 * 1024;

/// A received body on disk.
#[derive(Debug)]
pub(crate) struct Spooled {
    pub path: PathBuf,
    pub bytes: u64,
    pub hash: String,
}

/// The folder of spooled bodies: `configured` (a folder every node of a shared catalog
/// reads), else the data dir's.
pub(crate) fn spool_dir(data: &DataDir, configured: Option<&Path>) -> PathBuf {
    configured.map_or_else(|| data.upload_spool(), Path::to_path_buf)
}

/// Where job `id`'s body is kept in spool folder `spool` until the job ends.
pub(crate) fn body_path(spool: &Path, id: &super::JobId) -> PathBuf {
    spool.join(format!("{id}.body"))
}

/// How old a body in a shared spool must be before a starting node removes it as nobody's
/// (a body being received by another node is younger; a job's body goes when it ends).
const ORPHAN_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// How long a kept archive another node may have just kept is left alone by a sweep of a
/// shared spool: far longer than the moment between a sweep's reading the catalog and its
/// listing the folder.
const KEPT_GRACE: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether `entry` changed in the last `age` (or its age cannot be told).
fn is_young(entry: &std::fs::DirEntry, age: std::time::Duration) -> bool {
    entry
        .metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_none_or(|elapsed| elapsed < age)
}

/// Remove what no job waits for from a spool: bodies `waited_for` (by the job id their
/// name carries) says no to, and bodies being received when a crash stopped them. In a
/// `shared` spool other nodes receive bodies at this moment too: only what is older than
/// [`ORPHAN_AGE`] is removed there.
pub(crate) fn sweep(spool: &Path, shared: bool, waited_for: impl Fn(&super::JobId) -> bool) {
    let Ok(entries) = std::fs::read_dir(spool) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if shared && is_young(&entry, ORPHAN_AGE) {
            continue;
        }
        let waited = path.extension().is_some_and(|e| e == "body")
            && path
                .file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.parse::<super::JobId>().ok())
                .is_some_and(|id| waited_for(&id));
        if !waited {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The folder of the archives kept for `scope`'s principal (its user, feature instance and
/// mandate; its own uploads and those it shared): each principal has its own quota, so one
/// key's uploads never evict another's. Named by a hash of the principal's key.
fn principal_dir(kept_root: &Path, scope: &extractors::Scope) -> PathBuf {
    let principal = extractors::Scope {
        is_shared: false,
        workflow_id: None,
        ..scope.clone()
    };
    let hash = blake3::hash(principal.key().as_bytes()).to_hex();
    kept_root.join(hash.as_str().get(..32).unwrap_or_default())
}

/// Where the bytes of the upload `name` of `scope` (shared or not, as it was catalogued) are
/// kept, if they are: a file named by a hash of the scope's key and the name (never by the
/// name: it is data), in its principal's folder of `kept_root` (the services'
/// `kept_root()`: the data dir's, or a shared spool's).
pub(crate) fn kept_path(kept_root: &Path, scope: &extractors::Scope, name: &str) -> PathBuf {
    let mut h = blake3::Hasher::new();
    h.update(scope.key().as_bytes());
    h.update(&[0]);
    h.update(name.as_bytes());
    principal_dir(kept_root, scope).join(format!("{}.archive", h.finalize().to_hex()))
}

/// Whether the spooled `body` of the upload `name` is a PDF or a picture (`render_page`
/// renders it from the kept copy).
pub(crate) fn renderable(body: &Path, name: &str) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; extractors::SNIFF_LEN];
    let Ok(n) = std::fs::File::open(body).and_then(|mut f| f.read(&mut head)) else {
        return false;
    };
    matches!(
        extractors::detect(head.get(..n).unwrap_or_default(), name).kind,
        extractors::FileKind::Document(extractors::DocumentKind::Pdf) | extractors::FileKind::Image
    )
}

/// Keep the spooled `body` of the upload `name` of `scope` for on-demand extraction of the
/// members a limit left out (replacing what an earlier upload of the name kept), then evict
/// the principal's oldest kept archives until its own fit in `quota` bytes (the one just
/// kept too, when it alone is larger). Other principals' archives are never looked at.
pub(crate) fn keep(
    kept_root: &Path,
    body: &Path,
    scope: &extractors::Scope,
    name: &str,
    quota: u64,
) -> Result<()> {
    let kept = kept_path(kept_root, scope, name);
    let dir = principal_dir(kept_root, scope);
    crate::perms::create_dir(kept_root)?;
    crate::perms::create_dir(&dir)?;
    // A shared spool may be on another file system than the data dir: then a copy.
    if std::fs::rename(body, &kept).is_err() {
        std::fs::copy(body, &kept).map_err(|e| Error::io(&kept, e))?;
        let _ = std::fs::remove_file(body);
    }
    // Kept now: the newest of its principal's, and young to a sweep on another node.
    let _ = std::fs::File::options()
        .write(true)
        .open(&kept)
        .and_then(|f| f.set_modified(std::time::SystemTime::now()));
    let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = std::fs::read_dir(&dir)
        .map_err(|e| Error::io(&dir, e))?
        .filter_map(|e| {
            let e = e.ok()?;
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.len(), e.path()))
        })
        .collect();
    // Newest first: the oldest go once the total passes the quota.
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut total = 0u64;
    for (_, len, path) in files {
        total = total.saturating_add(len);
        if total > quota {
            tracing::info!(
                "evicting kept archive {} (quota {quota} bytes for its key): its left-out \
                 members can no longer be extracted on demand",
                path.display()
            );
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(())
}

/// Forget what an earlier upload of `name` of `scope` kept (a new version replaced it).
pub(crate) fn unkeep(kept_root: &Path, scope: &extractors::Scope, name: &str) {
    let _ = std::fs::remove_file(kept_path(kept_root, scope, name));
}

/// Whether any archive is kept.
pub(crate) fn has_kept(kept_root: &Path) -> bool {
    std::fs::read_dir(kept_root).is_ok_and(|mut d| d.next().is_some())
}

/// Delete the kept archives of `scope`'s principal that `wanted` (paths from [`kept_path`]
/// of the principal's top-level entries) does not hold: deleted uploads leave no bytes
/// behind. Only that principal's folder is read (a job's end costs its own tenant's files,
/// never every tenant's); it goes when emptied. With `shared` (a spool of many nodes) a file
/// kept in the last [`KEPT_GRACE`] stays: another node may have kept it after `wanted` was
/// read (a later sweep takes it).
pub(crate) fn sweep_kept(
    kept_root: &Path,
    scope: &extractors::Scope,
    shared: bool,
    wanted: &std::collections::HashSet<PathBuf>,
) {
    let dir = principal_dir(kept_root, scope);
    let Ok(files) = std::fs::read_dir(&dir) else {
        return;
    };
    for f in files.flatten() {
        if shared && is_young(&f, KEPT_GRACE) {
            continue;
        }
        let file = f.path();
        if !wanted.contains(&file) {
            let _ = std::fs::remove_file(&file);
        }
    }
    // Only when empty (a keep racing this sweep makes it non-empty first).
    let _ = std::fs::remove_dir(&dir);
}

/// Remove the files of an earlier layout (kept archives directly in the kept folder, not in
/// a principal's): once, when the queue starts.
pub(crate) fn sweep_earlier_layout(kept_root: &Path) {
    let Ok(entries) = std::fs::read_dir(kept_root) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Stream `body` into `path` (through a temporary name), hashing it; more than `max_bytes`
/// is refused with [`Error::TooLarge`] and nothing is left behind.
pub(crate) fn receive(body: &mut dyn Read, path: &Path, max_bytes: u64) -> Result<Spooled> {
    let part = path.with_extension("part");
    let result = write_part(body, &part, max_bytes);
    match result {
        Ok((bytes, hash)) => {
            std::fs::rename(&part, path).map_err(|e| Error::io(path, e))?;
            if let Some(dir) = path.parent() {
                super::jobs::sync_file(dir)?;
            }
            Ok(Spooled {
                path: path.to_path_buf(),
                bytes,
                hash,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_file(&part);
            Err(e)
        }
    }
}

fn write_part(body: &mut dyn Read, part: &Path, max_bytes: u64) -> Result<(u64, String)> {
    let mut file = crate::perms::create_file(part)?;
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; BUFFER];
    let mut total = 0u64;
    loop {
        let n = match body.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(match BodyCut::of(&e) {
                    Some(cut) => Error::BodyCut(cut.clone()),
                    None => Error::Upload(format!("reading the upload: {e}")),
                })
            }
        };
        total += n as u64;
        if total > max_bytes {
            return Err(Error::TooLarge { limit: max_bytes });
        }
        let chunk = buffer.get(..n).unwrap_or_default();
        hasher.update(chunk);
        file.write_all(chunk).map_err(|e| Error::io(part, e))?;
    }
    file.sync_all().map_err(|e| Error::io(part, e))?;
    Ok((total, hasher.finalize().to_hex().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_is_hashed_on_the_way_and_refused_past_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let body = vec![7u8; 3 * BUFFER + 5];
        let path = dir.path().join("a.body");
        let s = receive(&mut body.as_slice(), &path, 1 << 20).unwrap();
        assert_eq!(s.bytes, body.len() as u64);
        assert_eq!(s.hash, blake3::hash(&body).to_hex().to_string());
        assert_eq!(std::fs::read(&path).unwrap(), body);

        let path = dir.path().join("b.body");
        let e = receive(&mut body.as_slice(), &path, 2 * BUFFER as u64).unwrap_err();
        assert!(matches!(e, Error::TooLarge { .. }), "{e}");
        assert!(!path.exists() && !path.with_extension("part").exists());
    }
}
