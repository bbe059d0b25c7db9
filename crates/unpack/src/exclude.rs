//! What a folder walk leaves out besides hidden entries: `--exclude` and `--include` globs
//! and the ignore files it meets (`.gitignore`, `.ignore`, `.ingestignore`), all in
//! .gitignore syntax and matched by the `ignore` crate (ripgrep's). An entry left out is
//! one `ignored` ledger line and nothing under it is read.
//!
//! Precedence, as in ripgrep: the globs first (`--exclude !x` re-includes), then the ignore
//! files from the entry's own folder up to the filesystem's root, the nearest deciding.
//! Everything read is bounded: globs by count and length ([`Exclusions::check`]), ignore
//! files by size and number per walk (a larger or further one is not used, with a warning).

use std::io::Read;
use std::path::{Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;

/// The ignore files a walk reads in every folder, in this order (a later file's line wins).
pub const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".ingestignore"];

/// The most globs of `include` and `exclude` together.
pub const MAX_GLOBS: usize = 1000;
/// The longest glob, in bytes.
pub const MAX_GLOB_BYTES: usize = 1024;
/// The largest ignore file read; a larger one is not used.
pub const MAX_IGNORE_FILE_BYTES: u64 = 256 * 1024;
/// The most ignore files one walk reads; further ones are not used.
pub const MAX_IGNORE_FILES: usize = 10_000;

/// What folder walks leave out besides hidden entries (see the module's documentation).
#[derive(Debug, Clone)]
pub struct Exclusions {
    /// Globs (.gitignore lines) of files and folders to leave out; `!glob` re-includes.
    pub exclude: Vec<String>,
    /// When not empty: only files matching one of these globs are ingested (folders are
    /// still walked).
    pub include: Vec<String>,
    /// Honour `.gitignore`, `.ignore` and `.ingestignore` files in the folders walked and
    /// above them. On by default.
    pub ignore_files: bool,
    /// Where globs with a `/` inside are anchored (`build/*.o`): the working directory on
    /// the command line, as ripgrep does. `None`: the filesystem's root. Globs without a
    /// `/` (`*.log`, `node_modules/`) match at any depth.
    pub glob_root: Option<PathBuf>,
}

impl Default for Exclusions {
    fn default() -> Self {
        Exclusions {
            exclude: Vec::new(),
            include: Vec::new(),
            ignore_files: true,
            glob_root: None,
        }
    }
}

impl Exclusions {
    /// Whether the globs are within bounds and parse.
    pub fn check(&self) -> Result<(), String> {
        let count = self.exclude.len().saturating_add(self.include.len());
        if count > MAX_GLOBS {
            return Err(format!(
                "{count} include and exclude globs: at most {MAX_GLOBS}"
            ));
        }
        if let Some(g) = self
            .exclude
            .iter()
            .chain(&self.include)
            .find(|g| g.len() > MAX_GLOB_BYTES || g.contains(['\n', '\r', '\0']))
        {
            return Err(format!(
                "glob {:?}…: at most {MAX_GLOB_BYTES} bytes on one line",
                g.chars().take(40).collect::<String>()
            ));
        }
        self.globs().map(|_| ())
    }

    /// The exclude and include globs as matchers.
    fn globs(&self) -> Result<(Gitignore, Gitignore), String> {
        let root = self.glob_root.clone().unwrap_or_else(|| PathBuf::from("/"));
        let build = |globs: &[String], what: &str| {
            let mut b = GitignoreBuilder::new(&root);
            // A typed glob with an unclosed `[` is a mistake to say, not a literal bracket.
            b.allow_unclosed_class(false);
            for g in globs {
                b.add_line(None, g)
                    .map_err(|e| format!("--{what} {g:?}: {e}"))?;
            }
            b.build().map_err(|e| format!("--{what} globs: {e}"))
        };
        Ok((
            build(&self.exclude, "exclude")?,
            build(&self.include, "include")?,
        ))
    }
}

/// One walk's judge: the globs, and the ignore files of the folders from the filesystem's
/// root down to the entry last judged. The walk goes depth-first, so a folder left is never
/// met again: only that one chain is kept.
#[derive(Debug)]
pub struct Judge {
    exclude: Gitignore,
    include: Gitignore,
    ignore_files: bool,
    /// The folders above the last entry judged, outermost first, with their ignore files'
    /// lines (`None`: it has none).
    chain: Vec<(PathBuf, Option<Gitignore>)>,
    /// Ignore files read (towards [`MAX_IGNORE_FILES`]).
    files: usize,
}

impl Judge {
    /// A judge for `exclusions` (whose globs [`Exclusions::check`] accepted; globs that do
    /// not parse leave nothing out).
    pub fn new(exclusions: &Exclusions) -> Judge {
        let (exclude, include) = exclusions
            .globs()
            .unwrap_or_else(|_| (Gitignore::empty(), Gitignore::empty()));
        Judge {
            exclude,
            include,
            ignore_files: exclusions.ignore_files,
            chain: Vec::new(),
            files: 0,
        }
    }

    /// Why `path` (a folder when `is_dir`) is left out, if it is: its own folder's and every
    /// folder's above it ignore files are read first, once each.
    pub fn excluded(&mut self, path: &Path, is_dir: bool) -> Option<String> {
        match self.exclude.matched(path, is_dir) {
            Match::Ignore(g) => return Some(format!("excluded by --exclude {}", g.original())),
            Match::Whitelist(_) => return None,
            Match::None => {}
        }
        if !is_dir && !self.include.is_empty() && !self.include.matched(path, false).is_ignore() {
            return Some("excluded: not matched by --include".into());
        }
        if !self.ignore_files {
            return None;
        }
        self.follow(path);
        for (folder, lines) in self.chain.iter().rev() {
            let Some(lines) = lines else {
                continue;
            };
            match lines.matched(path, is_dir) {
                Match::Ignore(g) => {
                    let file = g
                        .from()
                        .map_or_else(|| folder.display().to_string(), |f| f.display().to_string());
                    return Some(format!(
                        "excluded by {file}: {} (--no-ignore ingests it)",
                        g.original()
                    ));
                }
                Match::Whitelist(_) => return None,
                Match::None => {}
            }
        }
        None
    }

    /// Make the chain the folders above `path`: the ones left behind dropped, the new ones
    /// read.
    fn follow(&mut self, path: &Path) {
        let above = path.parent().unwrap_or(path);
        while self
            .chain
            .last()
            .is_some_and(|(folder, _)| !above.starts_with(folder))
        {
            self.chain.pop();
        }
        let known = self.chain.len();
        let mut missing: Vec<&Path> = above.ancestors().collect();
        missing.reverse();
        for folder in missing.into_iter().skip(known) {
            let lines = self.read_ignore_files(folder);
            self.chain.push((folder.to_path_buf(), lines));
        }
    }

    /// `folder`'s ignore files' lines, if it has any.
    fn read_ignore_files(&mut self, folder: &Path) -> Option<Gitignore> {
        let mut builder = GitignoreBuilder::new(folder);
        let mut any = false;
        for name in IGNORE_FILES {
            let file = folder.join(name);
            let Ok(meta) = std::fs::metadata(&file) else {
                continue;
            };
            if !meta.is_file() {
                continue;
            }
            if self.files >= MAX_IGNORE_FILES {
                tracing::warn!(
                    "{}: not used (a walk reads at most {MAX_IGNORE_FILES} ignore files)",
                    file.display()
                );
                continue;
            }
            if meta.len() > MAX_IGNORE_FILE_BYTES {
                tracing::warn!(
                    "{}: not used ({} bytes; an ignore file may have at most {MAX_IGNORE_FILE_BYTES})",
                    file.display(),
                    meta.len()
                );
                continue;
            }
            self.files += 1;
            let mut text = String::new();
            let read = std::fs::File::open(&file)
                .and_then(|f| f.take(MAX_IGNORE_FILE_BYTES).read_to_string(&mut text));
            if let Err(e) = read {
                tracing::warn!("{}: not used: {e}", file.display());
                continue;
            }
            for line in text.lines() {
                // A line that is not a glob is left out, as git does.
                if builder.add_line(Some(file.clone()), line).is_ok() {
                    any = true;
                }
            }
        }
        if !any {
            return None;
        }
        builder
            .build()
            .inspect_err(|e| tracing::warn!("ignore files in {}: not used: {e}", folder.display()))
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (rel, text) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        (dir, root)
    }

    #[test]
    fn ignore_files_decide_nearest_first_and_globs_before_them() {
        let (_d, root) = tree(&[
            (".gitignore", "node_modules/\n*.log\n"),
            ("sub/.ignore", "!keep.log\nsecret.txt\n"),
            ("sub/.ingestignore", "drafts/\n"),
        ]);
        let mut judge = Judge::new(&Exclusions::default());
        let mut out = |rel: &str, dir: bool| judge.excluded(&root.join(rel), dir);
        assert!(out("node_modules", true)
            .unwrap()
            .contains(".gitignore: node_modules/"));
        assert_eq!(
            out("node_modules", false),
            None,
            "a file of that name stays"
        );
        assert!(out("a.log", false).is_some());
        assert!(out("sub/deep/b.log", false).is_some());
        assert_eq!(
            out("sub/keep.log", false),
            None,
            "the nearer file re-includes"
        );
        assert!(out("sub/secret.txt", false)
            .unwrap()
            .contains("sub/.ignore"));
        assert!(out("sub/drafts", true).unwrap().contains(".ingestignore"));
        assert_eq!(out("readme.md", false), None);

        let globs = Exclusions {
            exclude: vec!["*.md".into(), "!a.log".into()],
            include: vec!["*.md".into(), "*.log".into()],
            glob_root: Some(root.clone()),
            ..Exclusions::default()
        };
        let mut judge = Judge::new(&globs);
        let mut out = |rel: &str, dir: bool| judge.excluded(&root.join(rel), dir);
        assert_eq!(
            out("readme.md", false).unwrap(),
            "excluded by --exclude *.md"
        );
        assert_eq!(
            out("a.log", false),
            None,
            "the globs' whitelist beats .gitignore"
        );
        assert!(out("b.log", false).unwrap().contains(".gitignore"));
        assert!(out("c.txt", false).unwrap().contains("--include"));
        assert_eq!(out("docs", true), None, "folders are walked for --include");

        let off = Exclusions {
            ignore_files: false,
            ..Exclusions::default()
        };
        assert_eq!(Judge::new(&off).excluded(&root.join("a.log"), false), None);
    }

    #[test]
    fn hostile_globs_and_ignore_files_are_bounded() {
        let many = Exclusions {
            exclude: vec!["*.x".into(); MAX_GLOBS + 1],
            ..Exclusions::default()
        };
        assert!(many.check().unwrap_err().contains("at most"));
        let long = Exclusions {
            exclude: vec!["a".repeat(MAX_GLOB_BYTES + 1)],
            ..Exclusions::default()
        };
        assert!(long.check().is_err());
        let two_lines = Exclusions {
            include: vec!["*.md\n*.txt".into()],
            ..Exclusions::default()
        };
        assert!(two_lines.check().is_err());
        let bad = Exclusions {
            exclude: vec!["a[".into()],
            ..Exclusions::default()
        };
        assert!(bad.check().is_err(), "an unclosed class is refused");
        assert!(Exclusions::default().check().is_ok());
        // An oversized ignore file is not used; a line that is no glob is left out alone.
        let big = format!("*.txt\n{}", "x".repeat(MAX_IGNORE_FILE_BYTES as usize));
        let (_d, root) = tree(&[(".gitignore", &big), ("sub/.gitignore", "a[\n*.md\n")]);
        let mut judge = Judge::new(&Exclusions::default());
        assert_eq!(judge.excluded(&root.join("a.txt"), false), None);
        assert!(judge.excluded(&root.join("sub/b.md"), false).is_some());
    }
}
