//! Word-level agreement of our PDF text with pdftotext's, page by page, with the line-end
//! hyphenation joined (as extracted) and without it (the joins of `hyphen_joins` undone):
//! the figure docs/FORMATS.md ("PDF text") quotes.
//!
//! `cargo run --release -p ingest-extractors --example pdf_agreement -- [--pdfium LIB | --no-pdfium] FILE.pdf...`
//! (default library: `.models/all-minilm-l6-v2-int8/libpdfium.so`). For each page: the
//! words (maximal runs of letters and digits, lowercased) of our text and of
//! `pdftotext -f N -l N FILE -`, and their multiset F1; the report gives the mean over
//! pages, and the split words (a word of pdftotext's that we have as two) before and after.

use std::collections::HashMap;
use std::path::PathBuf;

use extractors::{ExtractInput, ExtractOptions, Locator, OcrOptions};

fn words(s: &str) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for w in s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        *m.entry(w.to_lowercase()).or_insert(0) += 1;
    }
    m
}

/// Multiset F1 of two bags of words.
fn f1(a: &HashMap<String, usize>, b: &HashMap<String, usize>) -> f64 {
    let common: usize = a
        .iter()
        .map(|(w, n)| (*n).min(b.get(w).copied().unwrap_or(0)))
        .sum();
    let (na, nb): (usize, usize) = (a.values().sum(), b.values().sum());
    if na + nb == 0 {
        1.0
    } else {
        2.0 * common as f64 / (na + nb) as f64
    }
}

/// The text as it was before the joins recorded in `joins` (`[at, was, now]`).
fn unjoined(text: &str, joins: &serde_json::Value) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let mut list: Vec<(usize, String, String)> =
        serde_json::from_value(joins.clone()).unwrap_or_default();
    list.sort_by_key(|j| std::cmp::Reverse(j.0));
    for (at, was, now) in list {
        let end = (at + now.chars().count()).min(chars.len());
        if at <= end {
            chars.splice(at..end, was.chars());
        }
    }
    chars.into_iter().collect()
}

fn main() {
    let mut pdfium = Some(PathBuf::from(".models/all-minilm-l6-v2-int8/libpdfium.so"));
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--no-pdfium" => pdfium = None,
            "--pdfium" => pdfium = args.next().map(PathBuf::from),
            _ => files.push(PathBuf::from(a)),
        }
    }
    let options = ExtractOptions {
        ocr: OcrOptions {
            enabled: false,
            ..OcrOptions::default()
        },
        pdfium_library: pdfium,
        ..ExtractOptions::default()
    };
    let (mut pages, mut before_sum, mut after_sum, mut joins_total) = (0usize, 0f64, 0f64, 0usize);
    for path in &files {
        let Ok(bytes) = std::fs::read(path) else {
            eprintln!("{}: unreadable", path.display());
            continue;
        };
        let name = path.display().to_string();
        let locator = Locator::root(&name);
        let detected = extractors::detect(&bytes, &name);
        let Ok(x) = extractors::extract(&ExtractInput {
            bytes: &bytes,
            locator: &locator,
            file_hash: "0",
            detected: &detected,
            options: &options,
        }) else {
            eprintln!("{name}: not extracted");
            continue;
        };
        let (mut file_pages, mut fb, mut fa, mut fj) = (0usize, 0f64, 0f64, 0usize);
        for o in &x.objects {
            if o.content_type != extractors::ContentType::Text {
                continue;
            }
            let Some(page) = o
                .context_ref
                .location
                .parse::<Locator>()
                .ok()
                .and_then(|l| l.fragment.page)
            else {
                continue;
            };
            let out = std::process::Command::new("pdftotext")
                .args(["-q", "-f", &page.to_string(), "-l", &page.to_string()])
                .arg(path)
                .arg("-")
                .output();
            let Ok(out) = out else {
                eprintln!("pdftotext missing (poppler-utils; `make ocr-tools`)");
                return;
            };
            let theirs = words(&String::from_utf8_lossy(&out.stdout));
            let joins = o.metadata.get("hyphen_joins");
            let before = joins.map_or_else(|| o.data.clone(), |j| unjoined(&o.data, j));
            fj += joins.and_then(|j| j.as_array()).map_or(0, Vec::len);
            fb += f1(&words(&before), &theirs);
            fa += f1(&words(&o.data), &theirs);
            file_pages += 1;
        }
        if file_pages > 0 {
            println!(
                "{name}: {file_pages} pages, F1 {:.4} -> {:.4}, {fj} joins",
                fb / file_pages as f64,
                fa / file_pages as f64
            );
        }
        pages += file_pages;
        before_sum += fb;
        after_sum += fa;
        joins_total += fj;
    }
    if pages > 0 {
        println!(
            "all: {} files, {pages} pages, mean page F1 against pdftotext {:.4} without joining, {:.4} joined; {joins_total} joins",
            files.len(),
            before_sum / pages as f64,
            after_sum / pages as f64
        );
    }
}
