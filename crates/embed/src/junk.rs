//! What only looks like text: table-of-contents dot leaders (`Installation . . . . . 83`),
//! bare page numbers (`12`, `- 12 -`, `Page 3 of 10`, `xiv`) and running headers and footers
//! (the same line at the top or bottom of many pages). Embedded, they make chunks that match
//! every question about a heading and answer none; so the chunker leaves them out of the
//! embedded text, and drops a chunk that is nothing else. The objects keep them: the read
//! tools show the page as it is.

use std::collections::{HashMap, HashSet};

use extractors::{ContentObject, ContentType};

/// Lines taken from the top and from the bottom of each page when looking for running
/// headers and footers.
const EDGE_LINES: usize = 2;
/// A running line is on at least this many pages …
const MIN_RUNNING_PAGES: usize = 3;
/// … and on at least this share of the file's pages.
const MIN_RUNNING_SHARE: f64 = 0.25;
/// Lines longer than this are prose, never a running header.
const MAX_RUNNING_CHARS: usize = 120;
/// A chunk keeps its place only if what remains has this many words of two letters or more.
const MIN_WORDS: usize = 3;

/// The running headers and footers of one file, by [`normalized`] line.
#[derive(Debug, Default)]
pub struct RunningLines(HashSet<String>);

impl RunningLines {
    /// The lines at the top or bottom of at least [`MIN_RUNNING_PAGES`] pages and a quarter
    /// of them, among the paged text objects of `objects`.
    pub fn of(objects: &[ContentObject]) -> Self {
        let mut pages: HashMap<String, HashSet<u32>> = HashMap::new();
        let mut all_pages = HashSet::new();
        for o in objects {
            let (ContentType::Text, Some(page)) = (o.content_type, o.context_ref.page_index) else {
                continue;
            };
            all_pages.insert(page);
            let lines: Vec<&str> = o.data.lines().filter(|l| !l.trim().is_empty()).collect();
            let top = lines.iter().take(EDGE_LINES);
            let bottom = lines.iter().rev().take(EDGE_LINES);
            for line in top.chain(bottom) {
                if line.chars().count() <= MAX_RUNNING_CHARS {
                    pages.entry(normalized(line)).or_default().insert(page);
                }
            }
        }
        let floor = (all_pages.len() as f64 * MIN_RUNNING_SHARE).max(MIN_RUNNING_PAGES as f64);
        RunningLines(
            pages
                .into_iter()
                .filter(|(line, on)| on.len() as f64 >= floor && !line.is_empty())
                .map(|(line, _)| line)
                .collect(),
        )
    }

    fn contains(&self, line: &str) -> bool {
        !self.0.is_empty() && self.0.contains(&normalized(line))
    }
}

/// A line compared across pages: lowercase, digits as `#`, whitespace runs as one space (the
/// page number in a footer changes from page to page, the footer does not).
fn normalized(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().map(|c| {
            if c.is_ascii_digit() {
                '#'
            } else {
                c.to_lowercase().next().unwrap_or(c)
            }
        }));
    }
    out
}

/// A table-of-contents line: a title, a leader of at least three dots (or `…`, `·`, `_`)
/// and a page number (digits or Roman numerals) at its end.
pub fn is_dot_leader(line: &str) -> bool {
    let t = line.trim();
    let head = t.trim_end_matches(|c: char| c.is_alphanumeric());
    let page = &t[head.len()..];
    let is_page = !page.is_empty()
        && page.len() <= 8
        && (page.chars().all(|c| c.is_ascii_digit()) || is_roman(page));
    let leader: usize = head
        .chars()
        .rev()
        .take_while(|c| matches!(c, '.' | '…' | '·' | '_' | ' ' | '\t'))
        .map(|c| match c {
            '…' => 3,
            ' ' | '\t' => 0,
            _ => 1,
        })
        .sum();
    is_page && leader >= 3
}

/// Roman numerals up to 200, in one case (`xiv`, `XIV`).
fn is_roman(w: &str) -> bool {
    let lower = w.to_lowercase();
    (w == lower || w == w.to_uppercase()) && (1..=200).any(|n| extractors::roman(n) == lower)
}

/// A line that is only a page number: `12`, `- 12 -`, `[12]`, `xiv`, `Page 3`, `Page 3 of
/// 10`, `Seite 3 von 10`, `p. 4`, `3/10`.
pub fn is_page_number(line: &str) -> bool {
    let t = line
        .trim()
        .trim_matches(|c: char| matches!(c, '-' | '–' | '—' | '[' | ']' | '(' | ')' | '|'))
        .trim();
    if t.is_empty() {
        return false;
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    let number = |w: &str| w.chars().all(|c| c.is_ascii_digit()) && w.len() <= 5;
    let roman = is_roman;
    let label = |w: &str| {
        matches!(
            w.to_lowercase().trim_end_matches('.'),
            "page" | "p" | "pg" | "seite" | "s" | "pagina" | "página" | "pagină" | "blatt"
        )
    };
    let joiner = |w: &str| {
        matches!(
            w.to_lowercase().as_str(),
            "of" | "von" | "de" | "/" | "sur" | "van"
        )
    };
    match words.as_slice() {
        // Alone, only lowercase Roman numerals (front matter): `CV`, `LI`, `XL` are words too.
        [w] => {
            number(w)
                || (roman(w) && *w == w.to_lowercase())
                || w.split_once('/')
                    .is_some_and(|(a, b)| number(a) && number(b))
        }
        [l, n] => label(l) && (number(n) || roman(n)),
        [l, n, j, m] => label(l) && number(n) && joiner(j) && number(m),
        [n, j, m] => number(n) && joiner(j) && number(m),
        _ => false,
    }
}

/// The text to embed for a chunk whose text is `text`: without dot-leader lines, page numbers
/// and `running` lines; `None` when the chunk is mostly a table of contents, or when lines
/// were left out and fewer than [`MIN_WORDS`] words remain. A chunk without such lines is
/// kept as it is, however short.
pub fn clean(text: &str, running: &RunningLines) -> Option<String> {
    let mut kept = Vec::new();
    let (mut lines, mut leaders, mut dropped) = (0usize, 0usize, false);
    for line in text.lines() {
        if line.trim().is_empty() {
            kept.push(line);
            continue;
        }
        lines += 1;
        if is_dot_leader(line) {
            leaders += 1;
            dropped = true;
        } else if is_page_number(line) || running.contains(line) {
            dropped = true;
        } else {
            kept.push(line);
        }
    }
    if lines > 0 && leaders * 2 >= lines {
        return None;
    }
    if !dropped {
        // Short is not junk: a one-line note is embedded as it is.
        return Some(text.to_string());
    }
    let out = kept.join("\n").trim().to_string();
    let words = out
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2)
        .take(MIN_WORDS)
        .count();
    (words >= MIN_WORDS).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use extractors::ContextRef;

    #[test]
    fn page_numbers_and_leaders_are_told_from_text() {
        for yes in [
            "12",
            " - 12 - ",
            "[iv]",
            "Page 3",
            "Page 3 of 10",
            "Seite 3 von 10",
            "p. 4",
            "3/10",
            "xiv",
        ] {
            assert!(is_page_number(yes), "{yes:?}");
        }
        for no in [
            "12 apples",
            "In 1997 we",
            "Page",
            "I think",
            "mix",
            "MIX",
            "Civic",
            "CV",
            "XL",
            "2024-2025 budget",
            "",
        ] {
            assert!(!is_page_number(no), "{no:?}");
        }
        assert!(is_dot_leader("3.1 Priming the pump . . . . . . . . 83"));
        assert!(is_dot_leader("Installation.......................12"));
        assert!(is_dot_leader("Anhang …… xii"));
        assert!(!is_dot_leader("Wait.... what? Then it stopped."));
        assert!(!is_dot_leader("See section 3.1. It explains priming."));
    }

    #[test]
    fn a_toc_chunk_is_dropped_and_prose_keeps_its_words() {
        let none = RunningLines::default();
        let toc = "Contents\n1 Intro . . . . . 1\n2 Setup . . . . . 5\n3 Care . . . . . 9\n";
        assert_eq!(clean(toc, &none), None);
        assert_eq!(clean("  17  \n\n- 18 -", &none), None);
        let prose = "Prime the pump before the first start.\n17";
        assert_eq!(
            clean(prose, &none).as_deref(),
            Some("Prime the pump before the first start.")
        );
        let plain = "Prime the pump before the first start.";
        assert_eq!(clean(plain, &none).as_deref(), Some(plain));
        assert_eq!(clean("Buy milk", &none).as_deref(), Some("Buy milk"));
        assert_eq!(clean("Buy milk\n12", &none), None);
    }

    #[test]
    fn running_headers_repeat_on_many_pages_with_their_numbers_changing() {
        let page = |n: u32, body: &str| ContentObject {
            id: format!("p{n}"),
            file_id: "h".into(),
            content_type: ContentType::Text,
            data: format!("ACME Pump 3000 — Operating manual\n{body}\nRevision 4 · page {n}"),
            context_ref: ContextRef {
                page_index: Some(n),
                ..ContextRef::default()
            },
            metadata: Default::default(),
            sequence: n,
            positions: None,
        };
        let steps = [
            "Open the valve.",
            "Close the lid firmly.",
            "Wait for the green light.",
            "Prime the pump slowly.",
            "Check the seals.",
            "Drain the tank.",
            "Clean the filter.",
            "Store it dry.",
        ];
        let objects: Vec<_> = (1..=8).map(|n| page(n, steps[n as usize - 1])).collect();
        let running = RunningLines::of(&objects);
        let cleaned = clean(&objects[2].data, &running).unwrap();
        assert_eq!(cleaned, "Wait for the green light.");
        // Two pages are not enough to call a line running.
        let running = RunningLines::of(&objects[..2]);
        assert!(clean(&objects[0].data, &running).unwrap().contains("ACME"));
    }
}
