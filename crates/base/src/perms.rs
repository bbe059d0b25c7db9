//! Owner-only data. The index holds the text of every document it was given, so the data
//! directory is the owner's alone: created `0700`, with the files the crate writes itself
//! (catalog, run marker, content indexes) created `0600` and its folders `0700`. The Qdrant
//! Edge shard creates its files with the process umask; the directory around them being `0700`
//! is what keeps them from other users whatever their modes (the `ingest` binary also sets its
//! umask to `077`, so there they are `0600` too).
//!
//! On open, a data directory owned by another user is refused ([`Error::NotOwner`]); one
//! whose mode lets group or others in (made by an older version, or by hand) is tightened,
//! with everything under it, and a warning says so.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use crate::error::{Error, Result};

/// Mode bits that let anyone but the owner in.
const GROUP_OTHER: u32 = 0o077;

/// Create `dir` (and missing parents) owner-only; an existing folder is left as it is.
pub fn create_dir(dir: &Path) -> Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(dir, e))
}

/// Create (or truncate) `path` as an owner-only file. An existing file's mode is tightened
/// too: `mode` applies only to files the call creates.
pub fn create_file(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let mode = f.metadata().map_err(|e| Error::io(path, e))?.mode();
    if mode & GROUP_OTHER != 0 {
        f.set_permissions(Permissions::from_mode(mode & 0o777 & !GROUP_OTHER))
            .map_err(|e| Error::io(path, e))?;
    }
    Ok(f)
}

/// Write `bytes` to an owner-only file at `path`.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    create_file(path)?
        .write_all(bytes)
        .map_err(|e| Error::io(path, e))
}

/// Make `dir` ready to hold an index: create it owner-only, refuse it when another user owns
/// it, and take group and other access away from it and everything below it when it has any.
pub fn prepare_data_dir(dir: &Path) -> Result<()> {
    create_dir(dir)?;
    let meta = std::fs::metadata(dir).map_err(|e| Error::io(dir, e))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Error::NotOwner {
            path: dir.to_path_buf(),
            owner: meta.uid(),
        });
    }
    if meta.mode() & GROUP_OTHER != 0 {
        let changed = tighten(dir)?;
        tracing::warn!(
            "{} was readable by other users (mode {:o}); made it owner-only ({changed} entries changed)",
            dir.display(),
            meta.mode() & 0o777
        );
    }
    Ok(())
}

/// Take group and other bits away from `dir` and everything below it (links are not
/// followed); how many entries changed.
fn tighten(dir: &Path) -> Result<u64> {
    let mut changed = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.uid() != nix::unistd::geteuid().as_raw() {
            // Not ours to change (and nothing we wrote): leave it, the folder around it is
            // closed.
            continue;
        }
        let mode = meta.mode() & 0o7777;
        if mode & GROUP_OTHER != 0 {
            std::fs::set_permissions(&path, Permissions::from_mode(mode & !GROUP_OTHER))
                .map_err(|e| Error::io(&path, e))?;
            changed += 1;
        }
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).map_err(|e| Error::io(&path, e))? {
                stack.push(entry.map_err(|e| Error::io(&path, e))?.path());
            }
        }
    }
    Ok(changed)
}

/// Set the process umask to `077`, so that every file this process creates (including the
/// store's, which the crate does not create itself) is owner-only. For programs, not
/// libraries: the umask is process-wide.
pub fn owner_only_umask() {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o777
    }

    #[test]
    fn a_new_data_dir_and_its_files_are_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/data");
        prepare_data_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        create_dir(&dir.join("content")).unwrap();
        assert_eq!(mode(&dir.join("content")), 0o700);
        write_file(&dir.join("f"), b"x").unwrap();
        assert_eq!(mode(&dir.join("f")), 0o600);
        // An existing file that was readable by everyone is tightened when rewritten.
        std::fs::set_permissions(dir.join("f"), Permissions::from_mode(0o644)).unwrap();
        write_file(&dir.join("f"), b"y").unwrap();
        assert_eq!(mode(&dir.join("f")), 0o600);
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), b"y");
    }

    #[test]
    fn an_open_data_dir_is_closed_with_everything_below_it() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir_all(dir.join("shard/segments")).unwrap();
        std::fs::write(dir.join("catalog.json"), b"{}").unwrap();
        std::fs::write(dir.join("shard/segments/x"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("link")).unwrap();
        for (p, m) in [
            ("", 0o755),
            ("shard", 0o775),
            ("shard/segments", 0o755),
            ("catalog.json", 0o644),
            ("shard/segments/x", 0o666),
        ] {
            std::fs::set_permissions(dir.join(p), Permissions::from_mode(m)).unwrap();
        }
        let etc_before = mode(Path::new("/etc/hostname"));
        prepare_data_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("shard")), 0o700);
        assert_eq!(mode(&dir.join("shard/segments")), 0o700);
        assert_eq!(mode(&dir.join("catalog.json")), 0o600);
        assert_eq!(mode(&dir.join("shard/segments/x")), 0o600);
        // Links are not followed.
        assert_eq!(mode(Path::new("/etc/hostname")), etc_before);
    }

    #[test]
    fn a_data_dir_of_another_user_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        let me = nix::unistd::geteuid().as_raw();
        // Giving a folder to another user takes root; without it, `/` is another user's.
        let (dir, other) = if me == 0 {
            nix::unistd::chown(&dir, Some(nix::unistd::Uid::from_raw(4242)), None).unwrap();
            (dir, 4242)
        } else {
            (PathBuf::from("/"), 0)
        };
        match prepare_data_dir(&dir) {
            Err(Error::NotOwner { owner, .. }) => assert_eq!(owner, other),
            r => panic!("expected NotOwner, got {r:?}"),
        }
    }
}
