//! The tours of README.md and docs/CLI.md print what the binary prints today: every
//! `$ ingest …` line of their text blocks is run on the fixtures (ingested as `make demo`
//! does) and its output compared with the lines under it, `/…/` standing for the folder the
//! repository is in. A block whose command says `(shortened)` shows part of its output and is
//! not compared.

use std::path::Path;
use std::process::Command;

use crate::util::*;

/// One `$ ingest …` of a document: its arguments and the output shown under it.
struct Shown {
    doc: &'static str,
    command: String,
    output: Vec<String>,
}

/// Every command with its shown output in the text blocks (fences without a language) of
/// `text`.
fn commands(doc: &'static str, text: &str) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    // The language of the fence open (`""` for a text block), or `None` outside one.
    let mut fence: Option<&str> = None;
    let mut current: Option<Shown> = None;
    for line in text.lines() {
        if let Some(lang) = line.strip_prefix("```") {
            out.extend(current.take());
            fence = match fence {
                Some(_) => None,
                None => Some(lang),
            };
            continue;
        }
        if fence != Some("") {
            continue;
        }
        if let Some(command) = line.strip_prefix("$ ingest ") {
            out.extend(current.take());
            current = Some(Shown {
                doc,
                command: command.to_string(),
                output: Vec::new(),
            });
        } else if let Some(c) = current.as_mut() {
            if !line.is_empty() {
                c.output.push(line.to_string());
            }
        }
    }
    out.extend(current);
    out
}

/// A shell word list of `command` (`$F` put in, `# comments` and `'…'`/`"…"` quotes taken
/// out): enough for the tours' commands.
fn words(command: &str, fixtures: &Path) -> Vec<String> {
    let command = command.split("  #").next().unwrap_or(command).trim();
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    for c in command.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
        .into_iter()
        .map(|w| w.replace("$F", &fixtures.display().to_string()))
        .collect()
}

#[test]
fn the_tours_show_what_the_binary_prints() {
    let sb = Sandbox::new();
    let folders = benign_fixtures();
    let paths: Vec<&Path> = folders.iter().map(|p| p.as_path()).collect();
    let (_, _, code) = sb.ingest(&paths);
    assert_eq!(code, 0);
    let root = repo_dir();
    let fixtures = root.join("fixtures");
    let parent = std::fs::canonicalize(&root).unwrap().display().to_string();
    let mut shown = Vec::new();
    for (doc, path) in [("README.md", "README.md"), ("docs/CLI.md", "docs/CLI.md")] {
        let text = std::fs::read_to_string(root.join(path)).unwrap();
        shown.extend(commands(doc, &text));
    }
    let compared: Vec<&Shown> = shown
        .iter()
        .filter(|s| !s.command.contains("(shortened)"))
        .collect();
    assert!(
        compared.len() >= 6,
        "the tours' commands: {}",
        compared.len()
    );
    let mut wrong = Vec::new();
    for s in compared {
        let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
            .args(words(&s.command, &fixtures))
            .args(["--color", "never", "--data-dir"])
            .arg(sb.data_dir())
            .current_dir(&root)
            .output()
            .unwrap();
        assert_exited(&out);
        let printed: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| l.replace(&parent, "/…"))
            .collect();
        if printed != s.output {
            wrong.push(format!(
                "{}: $ ingest {}\nshown:\n{}\nprinted:\n{}\n{}",
                s.doc,
                s.command,
                s.output.join("\n"),
                printed.join("\n"),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
