//! Extract every file under a folder (archives unpacked) without embedding, and print a
//! table per kind: files, extracted, failed, objects, seconds; then each failure's reason.
//!
//! Run: `cargo run --release --example corpus_report -- DIR [--prescan-longest] [--isolated]`
//!
//! `--isolated` extracts through worker processes (the built `ingest` binary, as the pipeline
//! does) instead of in this process; comparing the two totals gives the cost of isolation.

use std::collections::BTreeMap;
use std::time::Instant;

use ingest::extractors::{ExtractInput, Extractor, FileKind};
use ingest::{IsolationConfig, Limits};
use ingest_isolation::{InProcess, WorkerPool};
use ingest_unpack::{DiskEntry, DiskWalk, Leaf, Unpacker};

#[derive(Default)]
struct Row {
    files: u32,
    ok: u32,
    failed: u32,
    objects: u64,
    seconds: f64,
}

fn kind_name(kind: FileKind) -> String {
    match kind {
        FileKind::Container(c) => format!("container/{c:?}"),
        FileKind::Document(d) => format!("{d:?}").to_lowercase(),
        FileKind::Text(t) => format!("text/{t:?}").to_lowercase(),
        other => format!("{other:?}").to_lowercase(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: corpus_report DIR [--prescan-longest]");
        std::process::exit(1);
    };
    let limits = Limits::default();
    let extractor: Box<dyn Extractor> = if args.iter().any(|a| a == "--isolated") {
        let program = std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("ingest")))
            .filter(|p| p.is_file())
            .unwrap_or_else(|| "ingest".into());
        Box::new(WorkerPool::new(IsolationConfig {
            program: Some(program),
            ..IsolationConfig::default()
        }))
    } else {
        Box::new(InProcess)
    };
    let started = Instant::now();
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    let mut failures: Vec<(String, String)> = Vec::new();
    let mut longest_pdf: Option<(u32, String, Vec<u8>)> = None;
    // PDF pages whose text could not be read, per file.
    let mut failed_pages: Vec<(String, u64, u32)> = Vec::new();
    for entry in DiskWalk::everything(std::path::Path::new(dir)) {
        let DiskEntry::File(f) = entry else { continue };
        Unpacker::new(&limits).expand_file(&f.path, &f.locator, &mut |leaf| match leaf {
            Leaf::File {
                locator,
                bytes,
                detected,
            } => {
                let row = rows.entry(kind_name(detected.kind)).or_default();
                row.files += 1;
                let hash = blake3::hash(&bytes).to_hex().to_string();
                let t = Instant::now();
                let input = ExtractInput {
                    bytes: &bytes,
                    locator: &locator,
                    file_hash: &hash,
                    detected: &detected,
                    options: extractors::ExtractOptions::defaults(),
                };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    extractor.extract(&input)
                }));
                row.seconds += t.elapsed().as_secs_f64();
                match result {
                    Ok(Ok(e)) => {
                        row.ok += 1;
                        row.objects += e.objects.len() as u64;
                        let lost = e
                            .objects
                            .first()
                            .and_then(|o| o.metadata.get("failed_pages"))
                            .and_then(serde_json::Value::as_u64);
                        if let (Some(lost), Some(pages)) = (lost, e.structure.page_count) {
                            failed_pages.push((locator.to_string(), lost, pages));
                        }
                        if let Some(pages) = e.structure.page_count {
                            if longest_pdf.as_ref().is_none_or(|(p, _, _)| pages > *p) {
                                longest_pdf = Some((pages, locator.to_string(), bytes.clone()));
                            }
                        }
                    }
                    Ok(Err(e)) => {
                        row.failed += 1;
                        failures.push((locator.to_string(), e.to_string()));
                    }
                    Err(_) => {
                        row.failed += 1;
                        failures.push((locator.to_string(), "panicked".into()));
                    }
                }
            }
            Leaf::Skipped { locator, reason }
            | Leaf::Failed { locator, reason }
            | Leaf::Shadowed { locator, reason } => {
                rows.entry("(unpack)".into()).or_default().failed += 1;
                failures.push((locator.to_string(), reason));
            }
            Leaf::Container { .. } => {
                let row = rows.entry("(archives)".into()).or_default();
                row.files += 1;
                row.ok += 1;
            }
        });
    }
    println!("| kind | files | extracted | failed | objects | seconds |");
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut files, mut ok) = (0, 0);
    for (kind, r) in &rows {
        println!(
            "| {kind} | {} | {} | {} | {} | {:.2} |",
            r.files, r.ok, r.failed, r.objects, r.seconds
        );
        files += r.files;
        ok += r.ok;
    }
    let extract_seconds: f64 = rows.values().map(|r| r.seconds).sum();
    println!(
        "| **all** | {files} | {ok} | {} | | {extract_seconds:.2} |",
        files - ok
    );
    println!(
        "{} extraction; wall clock {:.2} s",
        extractor.name(),
        started.elapsed().as_secs_f64()
    );
    for (loc, reason) in &failures {
        println!("FAILED {loc}: {reason}");
    }
    for (loc, lost, pages) in &failed_pages {
        println!("PAGES WITHOUT TEXT {loc}: {lost} of {pages}");
    }
    if args.iter().any(|a| a == "--prescan-longest") {
        if let Some((pages, loc, bytes)) = longest_pdf {
            let t = Instant::now();
            let scan = ingest::extractors::prescan_pdf(&bytes).map(|s| s.sections.len());
            let prescan = t.elapsed().as_secs_f64();
            let t = Instant::now();
            let texts = ingest::extractors::pdf_page_texts(&bytes, 1..=pages).map(|t| t.len());
            let full = t.elapsed().as_secs_f64();
            println!(
                "longest PDF {loc}: {pages} pages; pre-scan {prescan:.3} s ({scan:?} sections), full text {full:.3} s ({texts:?} pages): {:.1} %",
                100.0 * prescan / full
            );
        }
    }
}
