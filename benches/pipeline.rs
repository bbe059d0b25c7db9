//! Throughput of each pipeline stage on the bundled fixtures and on generated text.
//! Run with `make bench` (needs the provisioned model for chunking and embedding).

// A benchmark whose setup fails has nothing to measure: it stops, like a test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ingest::extractors::{detect, extract, ExtractInput, Extractor, Locator};
use ingest::{find_model_dir, ChunkingConfig, IsolationConfig, Limits, ModelVariant, Scope};
use ingest_embed::{load_embedder, load_tokenizer, Chunker};
use ingest_index::prelude::*;
use ingest_index::{CatalogEntry, SqliteCatalog};
use ingest_isolation::{InProcess, WorkerPool};
use ingest_unpack::{Leaf, Unpacker};

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("fixtures")
            .join(rel),
    )
    .expect("fixture")
}

fn report_text(words: usize) -> String {
    let vocab = [
        "harbour", "tide", "ledger", "survey", "buoy", "vessel", "anchor", "cliff",
    ];
    let mut s = String::new();
    for i in 0..words {
        s.push_str(vocab.get(i % vocab.len()).copied().unwrap_or("x"));
        s.push(if i % 12 == 11 { '\n' } else { ' ' });
    }
    s
}

fn bench_extract(c: &mut Criterion) {
    let mut g = c.benchmark_group("extract");
    for name in [
        "docs/handbook.md",
        "docs/visitors.html",
        "docs/inventory.csv",
        "docs/species.xml",
    ] {
        let bytes = fixture(name);
        let locator = Locator::root(name);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let detected = detect(&bytes, name);
                let input = ExtractInput {
                    bytes: &bytes,
                    locator: &locator,
                    file_hash: "0000000000000000",
                    detected: &detected,
                    options: extractors::ExtractOptions::without_ocr(),
                };
                black_box(extract(&input).map(|e| e.objects.len()))
            })
        });
    }
    let big = report_text(200_000);
    let locator = Locator::root("big.txt");
    g.throughput(Throughput::Bytes(big.len() as u64));
    g.bench_function("1.4MB plain text", |b| {
        b.iter(|| {
            let detected = detect(big.as_bytes(), "big.txt");
            let input = ExtractInput {
                bytes: big.as_bytes(),
                locator: &locator,
                file_hash: "0000000000000000",
                detected: &detected,
                options: extractors::ExtractOptions::without_ocr(),
            };
            black_box(extract(&input).map(|e| e.objects.len()))
        })
    });
    g.finish();
}

fn bench_unpack(c: &mut Criterion) {
    let bytes = fixture("archives/bundle.zip");
    let limits = Limits::default();
    c.bench_function("unpack bundle.zip (zip > tar.gz)", |b| {
        b.iter(|| {
            let mut n = 0;
            Unpacker::new(&limits).expand_bytes(
                bytes.clone(),
                &Locator::root("bundle.zip"),
                &mut |l| {
                    if matches!(l, Leaf::File { .. }) {
                        n += 1;
                    }
                },
            );
            black_box(n)
        })
    });
}

fn bench_chunk_and_embed(c: &mut Criterion) {
    let Ok(dir) = find_model_dir(None) else {
        eprintln!("model not provisioned (make models): skipping chunk and embed benchmarks");
        return;
    };
    let chunker = Chunker::new(
        load_tokenizer(&dir).expect("tokenizer"),
        &ChunkingConfig::default(),
        ingest_embed::MAX_SEQ_TOKENS,
    );
    let text = report_text(20_000);
    let locator = Locator::root("r.txt");
    let detected = detect(text.as_bytes(), "r.txt");
    let objects = extract(&ExtractInput {
        bytes: text.as_bytes(),
        locator: &locator,
        file_hash: "0000000000000000",
        detected: &detected,
        options: extractors::ExtractOptions::without_ocr(),
    })
    .map(|e| e.objects)
    .unwrap_or_default();
    let mut g = c.benchmark_group("chunk");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.bench_function("20k words", |b| {
        b.iter(|| black_box(chunker.chunk_objects(&objects).len()))
    });
    g.finish();

    let chunks = chunker.chunk_objects(&objects);
    let batch: Vec<&str> = chunks.iter().take(16).map(|c| c.text.as_str()).collect();
    let mut g = c.benchmark_group("embed");
    g.sample_size(10);
    g.throughput(Throughput::Elements(batch.len() as u64));
    // Both model files, side by side in one run.
    for variant in ModelVariant::ALL {
        let embedder = match load_embedder(&dir, variant, 16) {
            Ok(e) => e,
            Err(e) => {
                eprintln!("skipping the {variant} embed benchmark: {e}");
                continue;
            }
        };
        g.bench_function(format!("16 chunks of ~250 tokens, {variant}"), |b| {
            b.iter(|| black_box(embedder.embed(&batch).map(|v| v.len())))
        });
    }
    g.finish();
}

/// What isolation costs: every sample document of `fixtures/formats/` extracted in-process and
/// through a (warm) worker process, which adds a pipe round trip and serde both ways.
fn bench_isolation(c: &mut Criterion) {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("fixtures/formats");
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("fixtures/formats")
        .filter_map(|e| e.ok())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(e.path()).expect("fixture");
            (name, bytes)
        })
        .collect();
    files.sort();
    let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    let pool = WorkerPool::new(IsolationConfig {
        program: Some(env!("CARGO_BIN_EXE_ingest").into()),
        ..IsolationConfig::default()
    });
    let run = |extractor: &dyn Extractor| {
        let mut objects = 0;
        for (name, bytes) in &files {
            let locator = Locator::root(name.as_str());
            let detected = detect(bytes, name);
            let input = ExtractInput {
                bytes,
                locator: &locator,
                file_hash: "0000000000000000",
                detected: &detected,
                options: extractors::ExtractOptions::without_ocr(),
            };
            objects += extractor.extract(&input).map_or(0, |e| e.objects.len());
        }
        objects
    };
    let mut g = c.benchmark_group("isolation");
    g.throughput(Throughput::Bytes(total));
    let n = files.len();
    g.bench_function(format!("{n} format samples, in-process"), |b| {
        b.iter(|| black_box(run(&InProcess)))
    });
    g.bench_function(format!("{n} format samples, worker process"), |b| {
        b.iter(|| black_box(run(&pool)))
    });
    g.finish();
}

/// A catalog of 100 000 files in 1 000 folders: what a checkpoint (a whole save) and a
/// watch sync's lookup of one folder cost.
fn bench_catalog(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let scope = Scope::user("bench");
    let catalog = SqliteCatalog::open(dir.path()).expect("catalog");
    for i in 0..100_000u32 {
        catalog.put(
            &scope,
            CatalogEntry::indexed(
                format!("/srv/uploads/folder-{:04}/report-{i:06}.pdf", i % 1000),
                None,
                blake3::hash(&i.to_le_bytes()).to_hex().to_string(),
                123_456,
                1_700_000_000_000_000_000,
                12,
            ),
        );
    }
    let mut g = c.benchmark_group("catalog of 100k files");
    g.sample_size(10);
    g.bench_function("save (checkpoint)", |b| {
        b.iter(|| catalog.save().expect("save"))
    });
    g.bench_function("top-level entries under one folder", |b| {
        b.iter(|| black_box(catalog.top_level_under(&scope, "/srv/uploads/folder-0500")))
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_catalog,
    bench_extract,
    bench_unpack,
    bench_isolation,
    bench_chunk_and_embed
);
criterion_main!(benches);
