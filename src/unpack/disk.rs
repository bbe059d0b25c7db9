//! The folder walk: every entry under a root, in name order, without following links;
//! hidden entries left out unless asked for. Kept apart from the container walkers because it
//! reads the filesystem (paths, metadata) while they only read bytes.

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use extractors::{segment_from_bytes, Locator};

/// A regular file found on disk by [`walk`].
#[derive(Debug, Clone)]
pub struct DiskFile {
    pub path: PathBuf,
    pub locator: Locator,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// What [`walk`] reports for each filesystem entry.
#[derive(Debug)]
pub enum DiskEntry {
    File(DiskFile),
    Skipped {
        locator: Locator,
        reason: String,
    },
    Failed {
        locator: Locator,
        reason: String,
    },
    /// A hidden file or folder left out by [`WalkOptions::include_hidden`].
    Hidden {
        locator: Locator,
    },
}

/// A file's modification time in nanoseconds since the epoch, as the catalog records it.
pub fn mtime_ns(meta: &std::fs::Metadata) -> u64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// What a walk of a folder leaves out.
#[derive(Debug, Clone, Default)]
pub struct WalkOptions {
    /// Folders (canonical paths) left out with everything in them, without a report: the
    /// index's own data directory, when it lies inside what is ingested.
    pub except: Vec<PathBuf>,
    /// Walk into entries below the root whose name starts with `.`. When false, each is one
    /// [`DiskEntry::Hidden`] and nothing under it is read (`.git`, editor swap files,
    /// `.DS_Store`).
    pub include_hidden: bool,
}

/// Whether a file name is hidden by the Unix convention (starts with `.`).
pub fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_bytes().first() == Some(&b'.')
}

/// Why a hidden entry was not ingested.
pub const HIDDEN_REASON: &str = "hidden: a name starting with '.' (--hidden ingests it)";

/// Walk a file or folder without following links, depth-first in name order, calling `visit`
/// for every entry, hidden ones included. Runs in constant memory per directory level.
pub fn walk(root: &Path, visit: &mut dyn FnMut(DiskEntry)) {
    let everything = WalkOptions {
        include_hidden: true,
        ..WalkOptions::default()
    };
    walk_with(root, &everything, visit);
}

/// [`walk`] with what `options` leaves out.
pub fn walk_with(root: &Path, options: &WalkOptions, visit: &mut dyn FnMut(DiskEntry)) {
    let root = match std::fs::canonicalize(root) {
        Ok(p) => p,
        Err(e) => {
            visit(DiskEntry::Failed {
                locator: Locator::root(root.to_string_lossy()),
                reason: format!("cannot open: {e}"),
            });
            return;
        }
    };
    let mut stack = vec![root];
    while let Some(path) = stack.pop() {
        let locator = Locator::root(segment_from_bytes(path.as_os_str().as_bytes()));
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                visit(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot stat: {e}"),
                });
                continue;
            }
        };
        let ft = meta.file_type();
        if ft.is_symlink() {
            visit(DiskEntry::Skipped {
                locator,
                reason: "link: not followed".into(),
            });
        } else if ft.is_dir() {
            match std::fs::read_dir(&path) {
                Ok(rd) => {
                    let mut children: Vec<PathBuf> = rd
                        .filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| !options.except.contains(p))
                        .collect();
                    children.sort();
                    if !options.include_hidden {
                        children.retain(|child| {
                            let hidden = child.file_name().is_some_and(is_hidden);
                            if hidden {
                                visit(DiskEntry::Hidden {
                                    locator: Locator::root(segment_from_bytes(
                                        child.as_os_str().as_bytes(),
                                    )),
                                });
                            }
                            !hidden
                        });
                    }
                    stack.extend(children.into_iter().rev());
                }
                Err(e) => visit(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot read folder: {e}"),
                }),
            }
        } else if ft.is_file() {
            let mtime_ns = mtime_ns(&meta);
            visit(DiskEntry::File(DiskFile {
                path,
                locator,
                size: meta.len(),
                mtime_ns,
            }));
        } else {
            visit(DiskEntry::Skipped {
                locator,
                reason: "special file (device, FIFO or socket)".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_entries_are_one_skipped_line_unless_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (rel, text) in [
            (".git/objects/ab/cdef", "blob"),
            (".git/config", "[core]"),
            ("a.txt", "a"),
            ("sub/.DS_Store", "x"),
            ("sub/b.txt", "b"),
        ] {
            let path = root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let names = |options: &WalkOptions| {
            let mut got = Vec::new();
            walk_with(&root, options, &mut |e| {
                let (loc, what) = match e {
                    DiskEntry::File(f) => (f.locator, "file".to_string()),
                    DiskEntry::Skipped { locator, reason } => (locator, reason),
                    DiskEntry::Failed { locator, reason } => (locator, reason),
                    DiskEntry::Hidden { locator } => (locator, HIDDEN_REASON.to_string()),
                };
                let rel = loc.to_string();
                let rel = rel.strip_prefix(&format!("{}/", root.display())).unwrap();
                got.push(format!("{rel}: {what}"));
            });
            got
        };
        assert_eq!(
            names(&WalkOptions::default()),
            [
                format!(".git: {HIDDEN_REASON}"),
                "a.txt: file".into(),
                format!("sub/.DS_Store: {HIDDEN_REASON}"),
                "sub/b.txt: file".into(),
            ]
        );
        let all = WalkOptions {
            include_hidden: true,
            ..WalkOptions::default()
        };
        assert_eq!(names(&all).len(), 5);
        // A hidden folder given as the root is walked; only what is below it is judged.
        let mut files = 0;
        walk_with(&root.join(".git"), &WalkOptions::default(), &mut |e| {
            files += usize::from(matches!(e, DiskEntry::File(_)));
        });
        assert_eq!(files, 2);
    }
}
