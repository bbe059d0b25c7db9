//! The folder walk: every entry under a root, in name order, without following links;
//! hidden entries left out unless asked for. Kept apart from the container walkers because it
//! reads the filesystem (paths, metadata) while they only read bytes.

// Internal: reachable from outside only through the hidden `testing` module.
#![allow(missing_docs)]

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use extractors::{segment_from_bytes, Locator};

use super::exclude::{Exclusions, Judge};

/// A regular file found on disk by a [`DiskWalk`].
#[derive(Debug, Clone)]
pub struct DiskFile {
    pub path: PathBuf,
    pub locator: Locator,
    pub size: u64,
    /// Modification time, nanoseconds since the Unix epoch.
    pub mtime_ns: u64,
}

/// What a [`DiskWalk`] yields for each filesystem entry.
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
    /// A file or folder left out, with nothing under it read: hidden
    /// ([`WalkOptions::include_hidden`], [`HIDDEN_REASON`]) or excluded
    /// ([`WalkOptions::exclusions`]).
    Ignored {
        locator: Locator,
        reason: String,
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
    /// Globs and ignore files: what they exclude is left out like a hidden entry, the root
    /// too (so a file is in or out however a walk reaches it).
    pub exclusions: Exclusions,
    /// Follow symbolic links whose target lies inside the walked root (a link leaving it, or
    /// one that leads back into a folder already on the way, is `ignored`, saying why). Off:
    /// every link is one `ignored` line.
    pub follow_links: bool,
}

/// Why a link was not followed.
pub const LINK_REASON: &str = "link: not followed (--follow-links follows links inside the folder)";

/// Whether a file name is hidden by the Unix convention (starts with `.`).
pub fn is_hidden(name: &std::ffi::OsStr) -> bool {
    name.as_bytes().first() == Some(&b'.')
}

/// Why a hidden entry was not ingested.
pub const HIDDEN_REASON: &str = "hidden: a name starting with '.' (--hidden ingests it)";

/// A walk of a file or folder without following links, depth-first in name order: an
/// iterator of [`DiskEntry`], one per entry, read lazily (the caller may stop at any entry and
/// nothing below it is read). Holds one sorted list of names per open folder level.
#[derive(Debug)]
pub struct DiskWalk {
    options: WalkOptions,
    judge: Judge,
    /// Paths still to visit, the next on top.
    stack: Vec<PathBuf>,
    /// Entries already decided (a root that cannot be opened, hidden children of a folder
    /// just read), handed out before the stack is looked at again.
    ready: std::collections::VecDeque<DiskEntry>,
    /// The walked root, canonical: followed links must lead inside it.
    root: PathBuf,
    /// Folders entered (device, inode), so a followed link never walks one twice (loops).
    entered: std::collections::HashSet<(u64, u64)>,
}

impl DiskWalk {
    /// Walk `root` with what `options` leaves out. A root that cannot be opened is one
    /// [`DiskEntry::Failed`].
    pub fn new(root: &Path, options: WalkOptions) -> Self {
        let mut walk = DiskWalk {
            judge: Judge::new(&options.exclusions),
            options,
            stack: Vec::new(),
            ready: std::collections::VecDeque::new(),
            root: PathBuf::new(),
            entered: std::collections::HashSet::new(),
        };
        match std::fs::canonicalize(root) {
            Ok(p) => {
                walk.root = p.clone();
                let is_dir = p.is_dir();
                match walk.judge.excluded(&p, is_dir) {
                    Some(reason) => walk.ready.push_back(DiskEntry::Ignored {
                        locator: Locator::root(segment_from_bytes(p.as_os_str().as_bytes())),
                        reason,
                    }),
                    None => walk.stack.push(p),
                }
            }
            Err(e) => walk.ready.push_back(DiskEntry::Failed {
                locator: Locator::root(root.to_string_lossy()),
                reason: format!("cannot open: {e}"),
            }),
        }
        walk
    }

    /// Walk `root`, hidden entries and what ignore files exclude included.
    pub fn everything(root: &Path) -> Self {
        let options = WalkOptions {
            include_hidden: true,
            exclusions: Exclusions {
                ignore_files: false,
                ..Exclusions::default()
            },
            ..WalkOptions::default()
        };
        DiskWalk::new(root, options)
    }

    /// What `path` is, its folder's children queued when it is one.
    fn visit(&mut self, path: PathBuf) -> Option<DiskEntry> {
        let locator = Locator::root(segment_from_bytes(path.as_os_str().as_bytes()));
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) => {
                return Some(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot stat: {e}"),
                })
            }
        };
        let mut ft = meta.file_type();
        let mut meta = meta;
        if ft.is_symlink() {
            if !self.options.follow_links {
                return Some(DiskEntry::Ignored {
                    locator,
                    reason: LINK_REASON.into(),
                });
            }
            let target = match std::fs::canonicalize(&path) {
                Ok(t) => t,
                Err(e) => {
                    return Some(DiskEntry::Ignored {
                        locator,
                        reason: format!("link: its target cannot be opened: {e}"),
                    })
                }
            };
            if !target.starts_with(&self.root) {
                return Some(DiskEntry::Ignored {
                    locator,
                    reason: "link: leads outside the walked folder (give its target to \
                             ingest it)"
                        .into(),
                });
            }
            meta = match std::fs::metadata(&target) {
                Ok(m) => m,
                Err(e) => {
                    return Some(DiskEntry::Failed {
                        locator,
                        reason: format!("cannot stat the link's target: {e}"),
                    })
                }
            };
            ft = meta.file_type();
        }
        if ft.is_dir() {
            use std::os::unix::fs::MetadataExt;
            if !self.entered.insert((meta.dev(), meta.ino())) {
                return Some(DiskEntry::Ignored {
                    locator,
                    reason: "link: leads back into a folder already walked (a loop)".into(),
                });
            }
            match std::fs::read_dir(&path) {
                Ok(rd) => {
                    let mut children: Vec<(PathBuf, bool)> = rd
                        .filter_map(|e| {
                            let e = e.ok()?;
                            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                            Some((e.path(), is_dir))
                        })
                        .filter(|(p, _)| !self.options.except.contains(p))
                        .collect();
                    children.sort();
                    let include_hidden = self.options.include_hidden;
                    let (ready, judge) = (&mut self.ready, &mut self.judge);
                    let children: Vec<PathBuf> = children
                        .into_iter()
                        .filter_map(|(child, is_dir)| {
                            let hidden =
                                !include_hidden && child.file_name().is_some_and(is_hidden);
                            let why = if hidden {
                                Some(HIDDEN_REASON.to_string())
                            } else {
                                judge.excluded(&child, is_dir)
                            };
                            match why {
                                Some(reason) => {
                                    ready.push_back(DiskEntry::Ignored {
                                        locator: Locator::root(segment_from_bytes(
                                            child.as_os_str().as_bytes(),
                                        )),
                                        reason,
                                    });
                                    None
                                }
                                None => Some(child),
                            }
                        })
                        .collect();
                    self.stack.extend(children.into_iter().rev());
                    None
                }
                Err(e) => Some(DiskEntry::Failed {
                    locator,
                    reason: format!("cannot read folder: {e}"),
                }),
            }
        } else if ft.is_file() {
            Some(DiskEntry::File(DiskFile {
                path,
                locator,
                size: meta.len(),
                mtime_ns: mtime_ns(&meta),
            }))
        } else {
            Some(DiskEntry::Skipped {
                locator,
                reason: "special file (device, FIFO or socket)".into(),
            })
        }
    }
}

impl Iterator for DiskWalk {
    type Item = DiskEntry;

    fn next(&mut self) -> Option<DiskEntry> {
        loop {
            if let Some(entry) = self.ready.pop_front() {
                return Some(entry);
            }
            let path = self.stack.pop()?;
            if let Some(entry) = self.visit(path) {
                return Some(entry);
            }
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
            for e in DiskWalk::new(&root, options.clone()) {
                let (loc, what) = match e {
                    DiskEntry::File(f) => (f.locator, "file".to_string()),
                    DiskEntry::Skipped { locator, reason } => (locator, reason),
                    DiskEntry::Failed { locator, reason } => (locator, reason),
                    DiskEntry::Ignored { locator, reason } => (locator, reason),
                };
                let rel = loc.to_string();
                let rel = rel.strip_prefix(&format!("{}/", root.display())).unwrap();
                got.push(format!("{rel}: {what}"));
            }
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
        assert_eq!(
            DiskWalk::everything(&root).count(),
            5,
            "folders are not entries"
        );
        // A hidden folder given as the root is walked; only what is below it is judged.
        let files = DiskWalk::new(&root.join(".git"), WalkOptions::default())
            .filter(|e| matches!(e, DiskEntry::File(_)))
            .count();
        assert_eq!(files, 2);
    }

    #[test]
    fn links_are_ignored_unless_followed_and_never_lead_out_or_around() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        let root = base.join("docs");
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::fs::write(root.join("real/a.txt"), "a").unwrap();
        std::fs::write(base.join("secret.txt"), "outside").unwrap();
        let link = |target: &Path, at: &str| std::os::unix::fs::symlink(target, root.join(at));
        link(&root.join("real/a.txt"), "to-a.txt").unwrap();
        link(&root.join("real"), "to-real").unwrap();
        link(&base.join("secret.txt"), "to-secret.txt").unwrap();
        link(&root, "real/loop").unwrap();
        link(&root.join("gone"), "dangling").unwrap();
        let walked = |follow: bool| -> Vec<String> {
            let options = WalkOptions {
                follow_links: follow,
                ..WalkOptions::default()
            };
            DiskWalk::new(&root, options)
                .map(|e| {
                    let (loc, what) = match e {
                        DiskEntry::File(f) => (f.locator, "file".to_string()),
                        DiskEntry::Skipped { locator, reason }
                        | DiskEntry::Failed { locator, reason }
                        | DiskEntry::Ignored { locator, reason } => (locator, reason),
                    };
                    let rel = loc.to_string();
                    let rel = rel.strip_prefix(&format!("{}/", root.display())).unwrap();
                    let what: String = what.chars().take(28).collect();
                    format!("{rel}: {what}")
                })
                .collect()
        };
        let not = "link: not followed (--follow";
        assert_eq!(
            walked(false),
            [
                format!("dangling: {not}"),
                "real/a.txt: file".into(),
                format!("real/loop: {not}"),
                format!("to-a.txt: {not}"),
                format!("to-real: {not}"),
                format!("to-secret.txt: {not}"),
            ]
        );
        assert_eq!(
            walked(true),
            [
                String::from("dangling: link: its target cannot be o"),
                "real/a.txt: file".into(),
                "real/loop: link: leads back into a fold".into(),
                "to-a.txt: file".into(),
                "to-real: link: leads back into a fold".into(),
                "to-secret.txt: link: leads outside the walk".into(),
            ]
        );
    }

    #[test]
    fn the_walk_reads_a_folder_only_when_it_gets_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/b.txt"), "b").unwrap();
        let mut walk = DiskWalk::new(&root, WalkOptions::default());
        let first = walk.next().unwrap();
        assert!(matches!(&first, DiskEntry::File(f) if f.path == root.join("a.txt")));
        // Added after the first entry was handed out, and still met: nothing under `sub`
        // was read before the caller asked for more.
        std::fs::write(root.join("sub/c.txt"), "c").unwrap();
        let rest: Vec<PathBuf> = walk
            .map(|e| match e {
                DiskEntry::File(f) => f.path,
                other => panic!("only files here: {other:?}"),
            })
            .collect();
        assert_eq!(rest, [root.join("sub/b.txt"), root.join("sub/c.txt")]);
        // A root that is not there is one failed entry.
        let gone: Vec<DiskEntry> = DiskWalk::everything(&root.join("nope")).collect();
        assert!(
            matches!(&gone[..], [DiskEntry::Failed { reason, .. }] if reason.starts_with("cannot open"))
        );
    }
}
