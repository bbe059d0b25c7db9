//! ARCHITECTURE.md stays true to the source: every file it names exists, every name of code
//! in its walk of one file is still in the source, and the walk's count is the count of what
//! it names.

use std::collections::BTreeSet;

use ingest_unpack::{DiskEntry, DiskWalk, WalkOptions};

use crate::util::repo_dir;

/// The texts between backticks in `text`.
fn quoted(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

/// A path of a source file (`src/pipeline/walk.rs`, `books.rs`).
fn is_source_path(s: &str) -> bool {
    s.ends_with(".rs") && !s.contains(' ')
}

/// Every `.rs` file under the repository's folders `dirs` (one that is not there has none),
/// as paths relative to the repository, read with the ingest walk itself.
fn source_files(dirs: &[&str]) -> Vec<String> {
    let root = std::fs::canonicalize(repo_dir()).unwrap();
    dirs.iter()
        .flat_map(|dir| DiskWalk::new(&root.join(dir), WalkOptions::default()))
        .filter_map(|entry| match entry {
            DiskEntry::File(f) if f.path.extension().is_some_and(|e| e == "rs") => {
                let rel = f.path.strip_prefix(&root).ok()?;
                Some(rel.to_string_lossy().into_owned())
            }
            _ => None,
        })
        .collect()
}

fn architecture() -> String {
    std::fs::read_to_string(repo_dir().join("ARCHITECTURE.md")).unwrap()
}

/// The section of `doc` from heading `title` to the next `## ` heading.
fn section<'a>(doc: &'a str, title: &str) -> &'a str {
    let start = doc
        .find(title)
        .unwrap_or_else(|| panic!("no section {title:?}"));
    let rest = &doc[start + title.len()..];
    &rest[..rest.find("\n## ").unwrap_or(rest.len())]
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        !text[..at].chars().next_back().is_some_and(ident)
            && !text[at + word.len()..].chars().next().is_some_and(ident)
    })
}

/// Whether `name` is code in `sources` (path, text): a bare name is a word of some file; in
/// `Owner::item`, the owner is a type (a file defines or implements it) or a module (its
/// file), and that file has a function `item` or, for a type, the variant `Item`.
fn names_code(sources: &[(String, String)], name: &str) -> bool {
    let Some((owner, item)) = name.rsplit_once("::") else {
        return sources.iter().any(|(_, text)| has_word(text, name));
    };
    let owner = owner.rsplit("::").next().unwrap_or(owner);
    let is_type = owner.starts_with(|c: char| c.is_ascii_uppercase());
    sources.iter().any(|(path, text)| {
        let owns = if is_type {
            text.lines().any(|line| {
                let line = line.trim_start();
                let defines = ["struct ", "enum ", "trait "]
                    .iter()
                    .any(|kind| line.contains(&format!("{kind}{owner}")));
                (defines || line.starts_with("impl")) && has_word(line, owner)
            })
        } else {
            path.ends_with(&format!("/{owner}.rs")) || path.ends_with(&format!("/{owner}/mod.rs"))
        };
        let has_fn = text.contains(&format!("fn {item}(")) || text.contains(&format!("fn {item}<"));
        let variant = is_type && item.starts_with(|c: char| c.is_ascii_uppercase());
        owns && (has_fn || (variant && has_word(text, item)))
    })
}

#[test]
fn every_file_architecture_names_exists() {
    let files = source_files(&[
        "src",
        "crates",
        "extractors",
        "tests",
        "benches",
        "examples",
        "fixtures",
    ]);
    let doc = architecture();
    let named: BTreeSet<&str> = quoted(&doc)
        .into_iter()
        .filter(|s| is_source_path(s))
        .collect();
    assert!(named.len() > 40, "the walk alone names more: {named:?}");
    let missing: Vec<&&str> = named
        .iter()
        .filter(|n| {
            // A full path is exact; a bare name (`books.rs`) is some file of that name.
            !files
                .iter()
                .any(|f| f == **n || (!n.contains('/') && f.ends_with(&format!("/{n}"))))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names files that are not there: {missing:?}"
    );
}

#[test]
fn the_walk_of_one_file_counts_what_it_names_and_its_code_names_exist() {
    let doc = architecture();
    let walk = section(&doc, "## The walk of one file");
    // The steps: numbered items whose file is in bold (`1. **`src/...`** — ...`).
    let on_the_way: Vec<&str> = walk
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let (n, rest) = l.split_once(". **`")?;
            n.parse::<u32>().ok()?;
            rest.split('`').next()
        })
        .collect();
    let distinct: BTreeSet<&str> = on_the_way.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        on_the_way.len(),
        "a step file twice: {on_the_way:?}"
    );
    let (before, after) = walk
        .split_once("**The count: ")
        .expect("the walk ends with its count");
    let stated_way: usize = after.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(stated_way, on_the_way.len());
    assert!(
        stated_way <= 10,
        "the way is at most ten files: {on_the_way:?}"
    );
    // The called files: every full path named in the steps but not on the way, less those
    // the count says are not counted (named in its own paragraph).
    let count_paragraph = &after[..after.find("\n\n").unwrap_or(after.len())];
    let not_counted: BTreeSet<&str> = quoted(count_paragraph)
        .into_iter()
        .filter(|s| is_source_path(s))
        .collect();
    let called: BTreeSet<&str> = quoted(before)
        .into_iter()
        .filter(|s| is_source_path(s) && s.contains('/'))
        .filter(|s| !distinct.contains(s) && !not_counted.contains(s))
        .collect();
    let stated_called: usize = count_paragraph
        .split("and ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("the count says how many files are called");
    assert_eq!(stated_called, called.len(), "{called:?}");
    // The names of code in the steps (`WalkStage`, `Ingestor::open`, `route_leaf`) are
    // still in the source.
    let root = repo_dir();
    let sources: Vec<(String, String)> = source_files(&["src", "crates", "extractors/src"])
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(root.join(&f)).unwrap();
            (f, text)
        })
        .collect();
    let is_code_name = |s: &&str| {
        s.split("::").all(|part| {
            part.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) && (s.contains('_') || s.contains("::") || s.chars().any(|c| c.is_ascii_uppercase()))
    };
    let gone: Vec<&str> = quoted(before)
        .into_iter()
        .filter(is_code_name)
        .filter(|name| !names_code(&sources, name))
        .collect();
    assert!(
        gone.is_empty(),
        "the walk names code that is not there: {gone:?}"
    );
}

/// The quoted texts of `row` that are folders (`src/tools/`, `crates/embed/`).
fn folders_of(row: &str) -> Vec<&str> {
    quoted(row)
        .into_iter()
        .filter(|q| q.ends_with('/'))
        .collect()
}

/// Whether `folder` (as "Where things are" names it) holds the source files of `dir`: the
/// folder itself, or a crate folder whose `src/` it is.
fn folder_holds(folder: &str, dir: &str) -> bool {
    let dir = format!("{dir}/");
    dir == folder || dir.strip_prefix(folder) == Some("src/")
}

#[test]
fn every_source_file_is_named_under_its_crate_and_folder() {
    let doc = architecture();
    let table = section(&doc, "## Where things are");
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| `")).collect();
    let files = source_files(&["src", "crates", "extractors/src"]);
    assert!(files.len() > 100, "{files:?}");
    // Every file: by its full path, or by its name in a row of its own folder.
    let unnamed: Vec<&String> = files
        .iter()
        .filter(|f| {
            if table.contains(&format!("`{f}`")) {
                return false;
            }
            let (dir, name) = f.rsplit_once('/').unwrap();
            !rows.iter().any(|row| {
                quoted(row).contains(&name)
                    && folders_of(row)
                        .iter()
                        .any(|folder| folder_holds(folder, dir))
            })
        })
        .collect();
    assert!(
        unnamed.is_empty(),
        "ARCHITECTURE.md's \"Where things are\" does not name these source files in a row of \
         their folder: {unnamed:?}"
    );
    // And every bare file name a folder's row gives is a file of that folder (of the right
    // crate), not of another.
    let root = repo_dir();
    let misplaced: Vec<(Vec<&str>, &str)> = rows
        .iter()
        .flat_map(|row| {
            let folders = folders_of(row);
            let misplaced: Vec<&str> = quoted(row)
                .into_iter()
                .filter(|q| is_source_path(q) && !q.contains('/'))
                .filter(|name| {
                    !folders.is_empty()
                        && !folders.iter().any(|folder| {
                            root.join(folder).join(name).is_file()
                                || root.join(folder).join("src").join(name).is_file()
                        })
                })
                .collect();
            misplaced
                .into_iter()
                .map(move |name| (folders.clone(), name))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        misplaced.is_empty(),
        "ARCHITECTURE.md names files under folders that do not hold them: {misplaced:?}"
    );
}

#[test]
fn nothing_architecture_calls_not_yet_exists() {
    // What the design once listed as "not yet" was built (the PostgreSQL catalog, its job
    // queue and workflow records, a shared spool): the document says what is, not what was
    // planned, so a "not yet" must name nothing the source already holds.
    let doc = architecture();
    let not_yet: Vec<&str> = doc
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("not yet"))
        .collect();
    assert!(
        not_yet.is_empty(),
        "ARCHITECTURE.md says \"not yet\" (say what is; plans go to issues): {not_yet:?}"
    );
}
