//! PDF extraction speed, one file after another on one thread: pages, seconds, pages/s.
//!
//! `cargo run --release -p ingest-extractors --example pdf_speed -- [--pdfium LIB | --no-pdfium] [--dump DIR] FILE.pdf...`
//! (default library: `.models/all-minilm-l6-v2-int8/libpdfium.so`). OCR is off; the time is
//! extraction alone (files are read before the clock starts). Compare with
//! `time (for f in FILE.pdf...; do pdftotext -q "$f" /dev/null; done)`. `--dump DIR` writes
//! each page's text to `DIR/<file number>-<page>.txt` (to compare with `pdftotext -f N -l N`).

use std::path::PathBuf;
use std::time::Instant;

use extractors::{ExtractInput, ExtractOptions, Locator, OcrOptions};

fn main() {
    let mut pdfium = Some(PathBuf::from(".models/all-minilm-l6-v2-int8/libpdfium.so"));
    let mut files = Vec::new();
    let mut dump: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--no-pdfium" => pdfium = None,
            "--pdfium" => pdfium = args.next().map(PathBuf::from),
            "--dump" => dump = args.next().map(PathBuf::from),
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
    let (mut pages, mut seconds, mut failed) = (0u64, 0f64, 0usize);
    let mut engines = std::collections::BTreeMap::<String, usize>::new();
    for (i, path) in files.iter().enumerate() {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{}: {e}", path.display());
                continue;
            }
        };
        let name = path.display().to_string();
        let locator = Locator::root(&name);
        let detected = extractors::detect(&bytes, &name);
        let started = Instant::now();
        let result = extractors::extract(&ExtractInput {
            bytes: &bytes,
            locator: &locator,
            file_hash: "0",
            detected: &detected,
            options: &options,
        });
        let took = started.elapsed().as_secs_f64();
        seconds += took;
        match result {
            Ok(x) => {
                let n = x.structure.page_count.unwrap_or(0);
                pages += u64::from(n);
                for o in &x.objects {
                    if let Some(s) = o.metadata.get("text_source").and_then(|v| v.as_str()) {
                        *engines.entry(s.to_string()).or_default() += 1;
                        if let (Some(dir), Some(p)) = (&dump, o.context_ref.page_index) {
                            let out = dir.join(format!("{i}-{p}.txt"));
                            if let Err(e) = std::fs::write(&out, &o.data) {
                                eprintln!("{}: {e}", out.display());
                            }
                        }
                    }
                }
                println!("{n:6} pages {took:8.3} s  {name}");
            }
            Err(e) => {
                failed += 1;
                println!("failed {took:8.3} s  {name}: {e}");
            }
        }
    }
    println!(
        "total: {} files ({failed} failed), {pages} pages, {seconds:.2} s, {:.0} pages/s; text objects by engine: {engines:?}",
        files.len(),
        pages as f64 / seconds.max(1e-9)
    );
}
