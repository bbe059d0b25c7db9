//! OCR end to end: a scanned letter (image-only PDF) and a whiteboard picture are found by
//! words that exist only as pixels; `--no-ocr` turns it off; without tesseract on `PATH` the
//! files are still indexed (without OCR text) and the run says so once.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::*;

/// The OCR fixtures (and a picture without words) copied into the sandbox.
fn scans(sb: &Sandbox) -> PathBuf {
    for name in ["scanned-letter.pdf", "whiteboard.png", "pier.png"] {
        let bytes = std::fs::read(fixtures().join("formats").join(name)).unwrap();
        sb.write(&format!("scans/{name}"), &bytes);
    }
    sb.path("scans")
}

fn answer(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", crate::util::told(out));
    json_lines(out).pop().expect("an answer")
}

fn hit_on(hits: &[Value], suffix: &str) -> bool {
    hits.iter()
        .any(|h| h["locator"].as_str().is_some_and(|l| l.ends_with(suffix)))
}

fn read(sb: &Sandbox, file: &Path) -> Vec<Value> {
    let a = answer(&sb.run(&["read", "--json", &file.display().to_string()]));
    a["objects"].as_array().cloned().unwrap_or_default()
}

#[test]
fn words_only_in_the_pixels_are_found_and_marked_as_ocr() {
    let sb = Sandbox::new();
    let dir = scans(&sb);
    let (lines, summary, code) = sb.ingest(&[&dir]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0, "{lines:#?}");

    let hits = sb.search("barnacle inspection of the north pier", 3);
    assert!(hit_on(&hits, "scanned-letter.pdf#page=1"), "{hits:#?}");
    let hits = sb.search("cormorant colony on the breakwater", 3);
    assert!(hit_on(&hits, "scanned-letter.pdf#page=2"), "{hits:#?}");
    let hits = sb.search("Wasserstandsmeldung Hafenmeisterei", 3);
    assert!(hit_on(&hits, "whiteboard.png"), "{hits:#?}");

    // Read: the page's OCR text sits at the page's locator, marked, next to its picture.
    let pdf = dir.join("scanned-letter.pdf");
    let objects = read(&sb, &pdf);
    let texts: Vec<_> = objects.iter().filter(|o| o["type"] == "text").collect();
    assert_eq!(texts.len(), 2, "{objects:#?}");
    assert!(texts.iter().all(|o| o["ocr"] == true), "{objects:#?}");
    assert!(texts[0]["locator"].as_str().unwrap().ends_with("#page=1"));
    assert!(texts[0]["text"]
        .as_str()
        .unwrap()
        .contains("Ingrid Solvberg"));
    assert_eq!(objects.iter().filter(|o| o["type"] == "image").count(), 2);

    // Browse: the pages still have no text layer, and their text came from OCR.
    let doc = answer(&sb.run(&["browse", "--json", &pdf.display().to_string()]));
    assert_eq!(doc["pages_without_text"], "1-2", "{doc:#}");
    assert_eq!(doc["pages_ocr"], "1-2", "{doc:#}");

    // The picture without words has no OCR text.
    let pier = read(&sb, &dir.join("pier.png"));
    assert_eq!(pier.len(), 1, "{pier:#?}");
    assert_eq!(pier[0]["meta"]["ocr"], "no text found");
}

#[test]
fn no_ocr_indexes_scans_without_their_text() {
    let sb = Sandbox::new();
    let dir = scans(&sb);
    let (lines, summary, code) = sb.ingest_with(&["--no-ocr"], &[&dir]);
    assert_eq!(code, 0, "{lines:#?}");
    assert_eq!(summary["failed"], 0, "{lines:#?}");
    let objects = read(&sb, &dir.join("scanned-letter.pdf"));
    assert!(
        objects
            .iter()
            .all(|o| o["type"] == "image" && o["meta"]["ocr"] == "disabled"),
        "{objects:#?}"
    );
    let hits = sb.search("barnacle inspection of the north pier", 3);
    assert!(!hit_on(&hits, "scanned-letter.pdf#page=1"), "{hits:#?}");
}

#[test]
fn without_tesseract_files_are_indexed_and_the_run_says_so_once() {
    let sb = Sandbox::new();
    let dir = scans(&sb);
    // No tesseract, no pdftoppm: PATH points nowhere.
    let out = Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(sb.data_dir())
        .arg(&dir)
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut lines = json_lines(&out);
    let summary = lines.pop().unwrap()["summary"].clone();
    assert_eq!(out.status.code(), Some(0), "{stderr}\n{lines:#?}");
    assert_eq!(summary["failed"], 0, "{lines:#?}");
    assert_eq!(files_only(&lines).len(), 3, "{lines:#?}");
    // Two pictures needed tesseract: one warning for it (and one for pdftoppm).
    assert_eq!(stderr.matches("tesseract not found").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("pdftoppm not found").count(), 1, "{stderr}");
    let objects = read(&sb, &dir.join("whiteboard.png"));
    assert_eq!(objects.len(), 1, "{objects:#?}");
    assert!(objects[0]["meta"]["ocr_error"]
        .as_str()
        .unwrap()
        .contains("tesseract not found"));
}
