//! The end-to-end benchmark: every figure of docs/PERFORMANCE.md's tables, measured in one
//! run on the same inputs, each beside the best alternative measured in that run.
//!
//! ```text
//! make bench-e2e CORPUS=DIR        # or: cargo bench --bench e2e -- --corpus DIR [options]
//! ```
//!
//! 1. **PDF text, one core**: our PDF extractor (in-process, no OCR) over every PDF of the
//!    corpus, against `pdftotext` on the same files; pages/s.
//! 2. **Extraction only, all cores**: every corpus file read, unpacked and extracted in
//!    isolated workers as `ingest` does (OCR on, its default), against Kreuzberg's default
//!    configuration on the same files and as many threads (`--kreuzberg PYTHON`); files/s and
//!    how many gave text, none, or an error.
//! 3. **Ingest**: the real `ingest` binary on the corpus, once per model variant, against the
//!    ceiling: the same model embedding the same chunks in a bare loop (no extraction,
//!    chunking or store running beside it); chunks/s and tokens/s. With `--st PYTHON`, the
//!    Python peer on the first variant's chunks: sentence-transformers fp32 and bf16
//!    autocast (benches/st_peer.py), tokens/s of the same chunks; with `int8-weights` among
//!    the variants, the first variant end to end against that first model's bare loop.
//!    `--steps pdf,extract,ingest,search` runs only some steps.
//! 4. **Warm search**: hybrid searches (the default) through `Ingestor::search_filtered`, the
//!    call the daemon, MCP and CLI faces make, with the model loaded and the index open, on
//!    indexes of `--sizes` chunks (real chunks of `--search-source`, copied with slightly
//!    moved vectors and renamed files until the size is reached, then optimized as an ingest
//!    leaves them); p50/p99 over `--queries`. With `--store qdrant://HOST:PORT/NAME`, the
//!    same points are also imported into a server collection (`NAME_benchSIZE`) and searched
//!    the same way, beside the embedded figures.
//!
//! Figures depend on the machine; the table says what ran beside what.

// A benchmark whose setup fails has nothing to measure: it stops, like a test.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ingest::extractors::{detect, extract, ContentType, ExtractInput, Extractor, Locator};
use ingest::{
    find_model_dir, Config, Ingestor, IsolationConfig, Limits, ModelVariant, Scope, SearchFilter,
    SearchMode,
};
use ingest_embed::{load_embedder, load_tokenizer};
use ingest_index::{EdgeIndex, ExportedPoint, IndexRead, IndexWrite};
use ingest_isolation::WorkerPool;
use ingest_unpack::{Leaf, Unpacker};
use rayon::prelude::*;

struct Args {
    corpus: PathBuf,
    ingest_corpus: Option<PathBuf>,
    baseline: Option<PathBuf>,
    search_source: Option<PathBuf>,
    sizes: Vec<usize>,
    kreuzberg: Option<PathBuf>,
    queries: PathBuf,
    variants: Vec<ModelVariant>,
    rounds: usize,
    /// A Qdrant server (`qdrant://HOST:PORT/COLLECTION`): step 4 also on it.
    store: Option<String>,
    /// A Python with sentence-transformers (the Makefile's `.venv-st`): step 3 also runs the
    /// Python peer (benches/st_peer.py) on the first variant's chunks.
    st: Option<PathBuf>,
    /// Which steps run (`--steps pdf,extract,ingest,search`; default all).
    steps: Vec<String>,
}

/// The steps, in the order they run.
const STEPS: [&str; 4] = ["pdf", "extract", "ingest", "search"];

impl Args {
    fn runs(&self, step: &str) -> bool {
        self.steps.iter().any(|s| s == step)
    }
}

fn args() -> Args {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut a = Args {
        corpus: root.join("fixtures"),
        ingest_corpus: None,
        baseline: None,
        search_source: None,
        sizes: vec![10_000, 100_000],
        kreuzberg: None,
        queries: root.join("eval/dev.tsv"),
        variants: ModelVariant::ALL.to_vec(),
        rounds: 5,
        store: None,
        st: None,
        steps: STEPS.map(String::from).to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--bench" => {}
            "--corpus" => a.corpus = value().into(),
            "--ingest-corpus" => a.ingest_corpus = Some(value().into()),
            "--baseline-binary" => a.baseline = Some(value().into()),
            "--search-source" => a.search_source = Some(value().into()),
            "--sizes" => {
                a.sizes = value()
                    .split(',')
                    .map(|s| s.trim().parse().expect("--sizes 10000,100000"))
                    .collect()
            }
            "--kreuzberg" => a.kreuzberg = Some(value().into()),
            "--queries" => a.queries = value().into(),
            "--variants" => {
                a.variants = value()
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse()
                            .expect("--variants bf16,block-int8,int8-weights,dynamic-int8")
                    })
                    .collect()
            }
            "--rounds" => a.rounds = value().parse().expect("--rounds N"),
            "--store" => a.store = Some(value()),
            "--st" => a.st = Some(value().into()),
            "--steps" => {
                a.steps = value().split(',').map(|s| s.trim().to_string()).collect();
                for s in &a.steps {
                    assert!(
                        STEPS.contains(&s.as_str()),
                        "--steps pdf,extract,ingest,search (got {s})"
                    );
                }
            }
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// One line of the final table.
struct Row {
    what: String,
    ours: String,
    other: String,
    ratio: String,
}

fn row(rows: &mut Vec<Row>, what: &str, ours: String, other: String, ratio: String) {
    eprintln!("  {what}: {ours} | {other} | {ratio}");
    rows.push(Row {
        what: what.into(),
        ours,
        other,
        ratio,
    });
}

fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("corpus folder").flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                stack.push(p);
            } else if t.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn main() {
    let a = args();
    let files = corpus_files(&a.corpus);
    let bytes: u64 = files
        .iter()
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    eprintln!(
        "e2e: {} files, {:.1} MB in {}; {} cores",
        files.len(),
        bytes as f64 / 1e6,
        a.corpus.display(),
        cores()
    );
    let config = Config::new(std::env::temp_dir());
    let mut rows = Vec::new();
    if a.runs("pdf") {
        pdf_text(&files, &config, &mut rows);
    }
    if a.runs("extract") {
        extraction(&files, &config, a.kreuzberg.as_deref(), &mut rows);
    }
    let ingest_corpus = a.ingest_corpus.as_deref().unwrap_or(&a.corpus);
    let mut runs: Vec<IngestRun> = Vec::new();
    if a.runs("ingest") {
        for &variant in &a.variants {
            runs.push(ingest_run(ingest_corpus, variant, &mut rows));
        }
        against_first_model(&runs, &mut rows);
    }
    // The first variant (the default unless --variants says otherwise) is the one the
    // baseline and the Python peer are compared with, and searched without --search-source.
    let ingested = (!runs.is_empty()).then(|| runs.swap_remove(0));
    drop(runs);
    if let (Some(python), Some(ours)) = (&a.st, &ingested) {
        python_peer(python, ours, a.rounds.clamp(1, 3), &mut rows);
    }
    if let (Some(baseline), Some(ours)) = (&a.baseline, &ingested) {
        baseline_run(baseline, ingest_corpus, ours, &mut rows);
    }
    let source = a
        .search_source
        .clone()
        .or_else(|| ingested.as_ref().map(|r| r.dir.path().to_path_buf()));
    match source.filter(|_| a.runs("search")) {
        Some(source) => {
            for &size in &a.sizes {
                search(
                    &source,
                    size,
                    &a.queries,
                    a.rounds,
                    a.store.as_deref(),
                    &mut rows,
                );
            }
        }
        None => {
            eprintln!("search: skipped (not in --steps, or no index: give --search-source or an ingest variant)")
        }
    }
    println!();
    println!("| measure | ingest | alternative | ratio |");
    println!("|---|---|---|---|");
    for r in &rows {
        println!("| {} | {} | {} | {} |", r.what, r.ours, r.other, r.ratio);
    }
}

/// Step 1: our PDF text path against `pdftotext`, both on one core.
fn pdf_text(files: &[PathBuf], config: &Config, rows: &mut Vec<Row>) {
    let pdfs: Vec<&PathBuf> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e.eq_ignore_ascii_case("pdf")))
        .collect();
    if pdfs.is_empty() {
        eprintln!("pdf: no PDFs in the corpus");
        return;
    }
    let mut options = config.extract_options();
    options.ocr.enabled = false;
    let mut pages = 0u64;
    let mut ours = Duration::ZERO;
    for f in &pdfs {
        let bytes = std::fs::read(f).expect("read");
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let started = Instant::now();
        let detected = detect(&bytes, &name);
        let locator = Locator::root(name.as_str());
        let out = extract(&ExtractInput {
            bytes: &bytes,
            locator: &locator,
            file_hash: "0000000000000000",
            detected: &detected,
            options: &options,
        });
        ours += started.elapsed();
        pages += out
            .ok()
            .and_then(|e| e.structure.page_count)
            .map_or(0, u64::from);
    }
    let started = Instant::now();
    let mut ran = true;
    for f in &pdfs {
        ran &= Command::new("pdftotext")
            .args(["-q".as_ref(), f.as_os_str(), "/dev/null".as_ref()])
            .status()
            .is_ok();
    }
    let theirs = started.elapsed();
    let ours_rate = pages as f64 / ours.as_secs_f64();
    let what = format!("PDF text, 1 core ({} PDFs, {pages} pages)", pdfs.len());
    if ran {
        let theirs_rate = pages as f64 / theirs.as_secs_f64();
        row(
            rows,
            &what,
            format!("{ours_rate:.0} pages/s"),
            format!("pdftotext {theirs_rate:.0} pages/s"),
            format!("{:.2}×", ours_rate / theirs_rate),
        );
    } else {
        row(
            rows,
            &what,
            format!("{ours_rate:.0} pages/s"),
            "pdftotext missing".into(),
            "–".into(),
        );
    }
}

/// How one top-level file came out of an extraction-only pass.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Outcome {
    Text,
    Empty,
    Error,
}

/// Step 2: unpack + extract every file on all cores, as the pipeline's extract stage does (isolated
/// workers, OCR on), against Kreuzberg on the same files.
fn extraction(files: &[PathBuf], config: &Config, kreuzberg: Option<&Path>, rows: &mut Vec<Row>) {
    let pool = WorkerPool::new(IsolationConfig {
        program: Some(env!("CARGO_BIN_EXE_ingest").into()),
        ..IsolationConfig::default()
    });
    let options = config.extract_options();
    let limits = Limits::default();
    let threads = cores();
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let started = Instant::now();
    let outcomes: Vec<Outcome> = rayon.install(|| {
        files
            .par_iter()
            .map(|f| {
                let name = f.file_name().unwrap().to_string_lossy().into_owned();
                let mut leaves = Vec::new();
                Unpacker::new(&limits)
                    .expand_file(f, &Locator::root(name.as_str()), &mut |l| leaves.push(l));
                let mut text = false;
                let mut error = false;
                for leaf in leaves {
                    match leaf {
                        Leaf::File {
                            locator,
                            bytes,
                            detected,
                        } => {
                            let input = ExtractInput {
                                bytes: &bytes,
                                locator: &locator,
                                file_hash: "0000000000000000",
                                detected: &detected,
                                options: &options,
                            };
                            match pool.extract(&input) {
                                Ok(e) => {
                                    text |= e.objects.iter().any(|o| {
                                        o.content_type == ContentType::Text
                                            && !o.data.trim().is_empty()
                                    })
                                }
                                Err(_) => error = true,
                            }
                        }
                        Leaf::Failed { .. } => error = true,
                        _ => {}
                    }
                }
                if text {
                    Outcome::Text
                } else if error {
                    Outcome::Error
                } else {
                    Outcome::Empty
                }
            })
            .collect()
    });
    let ours = started.elapsed();
    let count = |o: &[Outcome], x: Outcome| o.iter().filter(|&&y| y == x).count();
    let ours_rate = files.len() as f64 / ours.as_secs_f64();
    let ours_text = format!(
        "{ours_rate:.2} files/s: {} with text, {} without, {} errors",
        count(&outcomes, Outcome::Text),
        count(&outcomes, Outcome::Empty),
        count(&outcomes, Outcome::Error)
    );
    let what = format!("extraction only, {threads} cores ({} files)", files.len());
    let Some(python) = kreuzberg else {
        row(
            rows,
            &what,
            ours_text,
            "kreuzberg not run (--kreuzberg PYTHON)".into(),
            "–".into(),
        );
        return;
    };
    let script = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("benches/kreuzberg_extract.py");
    let mut cmd = Command::new(python);
    cmd.arg(&script).arg(threads.to_string()).args(files);
    let out = cmd.output().expect("run kreuzberg");
    let report: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| {
            panic!(
                "kreuzberg gave no report: {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            )
        });
    let secs = report["seconds"].as_f64().unwrap_or(f64::NAN);
    let theirs_rate = files.len() as f64 / secs;
    row(
        rows,
        &what,
        ours_text,
        format!(
            "kreuzberg {} {theirs_rate:.2} files/s: {} with text, {} without, {} errors",
            report["version"].as_str().unwrap_or("?"),
            report["text"],
            report["empty"],
            report["error"]
        ),
        format!("{:.2}×", ours_rate / theirs_rate),
    );
}

/// What step 3 leaves for the baseline comparison and the searches.
struct IngestRun {
    variant: ModelVariant,
    dir: tempfile::TempDir,
    /// End-to-end seconds of the run.
    seconds: f64,
    /// Seconds the bare model loop took on the same chunks.
    bare_seconds: f64,
    /// Tokens the run embedded.
    tokens: f64,
}

/// Step 3, against the first model: the first variant's run end to end (the whole process:
/// start, model load, extraction, chunking, store) against the bare loop of `int8-weights`,
/// the model first provisioned (int8 weights computed in fp32), when both ran.
fn against_first_model(runs: &[IngestRun], rows: &mut Vec<Row>) {
    let (Some(ours), Some(first)) = (
        runs.first(),
        runs.iter().find(|r| r.variant == ModelVariant::Int8Weights),
    ) else {
        return;
    };
    if ours.variant == ModelVariant::Int8Weights {
        return;
    }
    let ours_rate = ours.tokens / ours.seconds;
    let first_rate = first.tokens / first.bare_seconds;
    row(
        rows,
        &format!(
            "ingest, {} end to end, against the first model's bare loop",
            ours.variant
        ),
        format!("{ours_rate:.0} tokens/s ({:.0} s)", ours.seconds),
        format!("int8-weights bare loop {first_rate:.0} tokens/s"),
        format!("{:.2}×", ours_rate / first_rate),
    );
}

/// Step 3: the real binary on the corpus with `variant`, then the same chunks through the same
/// model in a bare loop. Returns the run (its data directory is the search benchmark's default
/// source).
fn ingest_run(corpus: &Path, variant: ModelVariant, rows: &mut Vec<Row>) -> IngestRun {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = ingest_summary(
        Path::new(env!("CARGO_BIN_EXE_ingest")),
        dir.path(),
        &["--model-variant", variant.name()],
        corpus,
    );
    let chunks = summary["chunks_embedded"].as_f64().unwrap_or(0.0);
    let tokens = summary["tokens_embedded"].as_f64().unwrap_or(0.0);
    let total = summary["seconds"]["total"].as_f64().unwrap_or(f64::NAN);

    // The same chunks, as stored, through the same model with nothing else running.
    let texts = stored_texts(dir.path());
    let model_dir = find_model_dir(None).expect("model provisioned");
    let embedder =
        load_embedder(&model_dir, variant, Config::default().embed_batch).expect("load model");
    let window = Config::default().embed_batch * 4;
    let started = Instant::now();
    for group in texts.chunks(window) {
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        embedder.embed(&refs).expect("embed");
    }
    let ceiling = started.elapsed().as_secs_f64();
    let what = format!("ingest, {variant} ({} chunks, {} tokens)", chunks, tokens);
    row(
        rows,
        &what,
        format!(
            "{:.1} chunks/s, {:.0} tokens/s ({total:.0} s)",
            chunks / total,
            tokens / total
        ),
        format!(
            "bare model loop {:.1} chunks/s, {:.0} tokens/s",
            texts.len() as f64 / ceiling,
            tokens / ceiling
        ),
        format!("{:.2} of the ceiling", ceiling / total),
    );
    IngestRun {
        variant,
        dir,
        seconds: total,
        bare_seconds: ceiling,
        tokens,
    }
}

/// Step 3, the peer: sentence-transformers (fp32, and bf16 autocast) embedding the chunks
/// `ours` stored, called as a Python user calls it, best of `rounds`; against `ours` end to end and its
/// bare model loop, in tokens/s of the same chunks.
fn python_peer(python: &Path, ours: &IngestRun, rounds: usize, rows: &mut Vec<Row>) {
    let texts = stored_texts(ours.dir.path());
    // The chunker's tokenizer: tokenizer.json as is truncates at 128 tokens.
    let tokenizer = load_tokenizer(&find_model_dir(None).expect("model")).expect("tokenizer");
    let (chunks, tokens) = stored_tokens(ours.dir.path(), &tokenizer);
    let file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(file.path(), serde_json::to_string(&texts).expect("json")).expect("write");
    let script =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("benches/st_peer.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(file.path())
        .arg(rounds.to_string())
        .output()
        .expect("run benches/st_peer.py");
    let answer: serde_json::Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .next_back()
        .unwrap_or_else(|| panic!("st_peer.py: {}", String::from_utf8_lossy(&out.stderr)));
    let best = |k: &str| {
        answer[k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_f64)
            .fold(f64::INFINITY, f64::min)
    };
    let ours_rate = tokens as f64 / ours.seconds;
    let ceiling = ours.bare_seconds;
    for (key, what) in [("fp32", "fp32"), ("bf16", "bf16 autocast (AMX)")] {
        let secs = best(key);
        row(
            rows,
            &format!(
                "embedding peer: sentence-transformers {what}, torch {} ({chunks} chunks, {tokens} tokens)",
                answer["torch"].as_str().unwrap_or("?")
            ),
            format!(
                "ingest {}: {:.0} tokens/s end to end, {:.0} tokens/s bare loop",
                ours.variant,
                ours_rate,
                tokens as f64 / ceiling
            ),
            format!(
                "{:.1} chunks/s, {:.0} tokens/s (bare loop, best of {rounds})",
                chunks as f64 / secs,
                tokens as f64 / secs
            ),
            format!(
                "ingest {:.2}× end to end, {:.2}× bare",
                ours_rate / (tokens as f64 / secs),
                secs / ceiling
            ),
        );
    }
}

/// The text of every chunk an index stores.
fn stored_texts(data_dir: &Path) -> Vec<String> {
    let index = EdgeIndex::open(data_dir).expect("open the index");
    let mut texts = Vec::new();
    index
        .export_points(&mut |p: ExportedPoint| {
            if let Some(t) = p.payload.get("text").and_then(|t| t.as_str()) {
                texts.push(t.to_string());
            }
        })
        .expect("export");
    texts
}

/// The chunks an index stores and their tokens, counted by the model's tokenizer the same way
/// for any build (so a baseline's tokens/s is comparable even when its chunker differed).
fn stored_tokens(data_dir: &Path, tokenizer: &tokenizers::Tokenizer) -> (usize, usize) {
    let texts = stored_texts(data_dir);
    let tokens = texts
        .iter()
        .map(|t| tokenizer.encode(t.as_str(), false).map_or(0, |e| e.len()))
        .sum();
    (texts.len(), tokens)
}

/// `BINARY --data-dir DATA --json FLAGS... CORPUS`: the run's summary.
fn ingest_summary(binary: &Path, data: &Path, flags: &[&str], corpus: &Path) -> serde_json::Value {
    let out = Command::new(binary)
        .arg("--data-dir")
        .arg(data)
        .arg("--json")
        .args(flags)
        .arg(corpus)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|v| v.get("summary").cloned())
        .unwrap_or_else(|| {
            panic!(
                "{} gave no summary: {}",
                binary.display(),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// An earlier build of `ingest` (as given) on the same corpus: what a change gained, in
/// tokens/s (both indexes' stored chunks counted by the same tokenizer).
fn baseline_run(binary: &Path, corpus: &Path, ours: &IngestRun, rows: &mut Vec<Row>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = ingest_summary(binary, dir.path(), &[], corpus);
    let total = summary["seconds"]["total"].as_f64().unwrap_or(f64::NAN);
    // The chunker's tokenizer: tokenizer.json as is truncates at 128 tokens.
    let tokenizer = load_tokenizer(&find_model_dir(None).expect("model")).expect("tokenizer");
    let (chunks, tokens) = stored_tokens(dir.path(), &tokenizer);
    let (our_chunks, our_tokens) = stored_tokens(ours.dir.path(), &tokenizer);
    let (rate, our_rate) = (tokens as f64 / total, our_tokens as f64 / ours.seconds);
    row(
        rows,
        &format!(
            "ingest, baseline {} ({chunks} chunks, {tokens} tokens stored)",
            binary.display()
        ),
        format!(
            "{:.1} chunks/s, {rate:.0} tokens/s ({total:.0} s)",
            chunks as f64 / total
        ),
        format!(
            "this build, {}: {:.1} chunks/s, {our_rate:.0} tokens/s ({our_chunks} chunks, {our_tokens} tokens stored)",
            ours.variant,
            our_chunks as f64 / ours.seconds
        ),
        format!("this build {:.2}× its tokens/s", our_rate / rate),
    );
}

/// Step 4: warm hybrid searches on an index of `size` chunks built from `source`'s points.
fn search(
    source: &Path,
    size: usize,
    queries: &Path,
    rounds: usize,
    store: Option<&str>,
    rows: &mut Vec<Row>,
) {
    let mut points = Vec::new();
    EdgeIndex::open(source)
        .expect("open the search source")
        .export_points(&mut |p| points.push(p))
        .expect("export");
    if points.is_empty() {
        eprintln!("search: {} holds no points", source.display());
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    ingest::prepare_data_dir(dir.path()).expect("data dir");
    // The copies keep the source's model variant (an index from before the record: the
    // earlier model), so queries are embedded as the source's were.
    let variant_file = source.join("embedding-model");
    if variant_file.is_file() {
        std::fs::copy(&variant_file, dir.path().join("embedding-model")).expect("copy");
    } else {
        std::fs::write(dir.path().join("embedding-model"), "int8-weights\n").expect("write");
    }
    let started = Instant::now();
    {
        let index = EdgeIndex::open(dir.path()).expect("open");
        let mut copy = 0u64;
        let mut written = 0usize;
        'fill: loop {
            for group in points.chunks(1000) {
                let batch: Vec<ExportedPoint> = group
                    .iter()
                    .take(size - written)
                    .map(|p| copied(p, copy))
                    .collect();
                written += batch.len();
                index.import_points(&batch).expect("import");
                if written >= size {
                    break 'fill;
                }
            }
            copy += 1;
        }
        index.flush();
        index.optimize().expect("optimize");
    }
    let built = started.elapsed().as_secs_f64();
    let questions: Vec<String> = std::fs::read_to_string(queries)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split('\t').next())
        .filter(|q| !q.trim().is_empty())
        .map(str::to_string)
        .collect();
    let questions = if questions.is_empty() {
        vec![
            "who kept the lighthouse".to_string(),
            "quarterly revenue".to_string(),
        ]
    } else {
        questions
    };
    let embedded = Ingestor::open(Config::new(dir.path())).expect("open");
    let (p50, p99, n) = latencies(&embedded, &questions, rounds);
    row(
        rows,
        &format!("warm hybrid search, {size} chunks ({n} searches)"),
        format!("p50 {p50:.1} ms, p99 {p99:.1} ms"),
        format!("index built from copies in {built:.0} s"),
        "–".into(),
    );
    // The same points on a Qdrant server, searched the same way.
    if let Some(store) = store {
        let mut lines = Vec::new();
        embedded.export(&mut lines).expect("export");
        drop(embedded);
        let server_dir = tempfile::tempdir().expect("tempdir");
        let mut config = Config::new(server_dir.path());
        let mut server: ingest::ServerConfig = store.parse().expect("--store");
        server.collection = format!("{}_bench{size}", server.collection);
        config.server = Some(server.clone());
        let started = Instant::now();
        Ingestor::import(config, &mut lines.as_slice()).expect("import into the server");
        wait_until_indexed(&server);
        let built = started.elapsed().as_secs_f64();
        let remote = Ingestor::open(Config::new(server_dir.path())).expect("open");
        let (s50, s99, n) = latencies(&remote, &questions, rounds);
        row(
            rows,
            &format!("warm hybrid search on the Qdrant server, {size} chunks ({n} searches)"),
            format!("p50 {s50:.1} ms, p99 {s99:.1} ms"),
            format!(
                "embedded p50 {p50:.1} ms, p99 {p99:.1} ms (imported and indexed in {built:.0} s)"
            ),
            format!("{:.2}x p50", s50 / p50),
        );
    }
}

/// Wait until the server has built the collection's search structures (it optimizes in the
/// background after an import; searches meanwhile are exact scans competing with it).
fn wait_until_indexed(server: &ingest::ServerConfig) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = qdrant_client::Qdrant::from_url(&server.url)
            .skip_compatibility_check()
            .build()
            .expect("client");
        loop {
            let info = client
                .collection_info(server.collection.as_str())
                .await
                .expect("collection info");
            let green = info.result.is_some_and(|r| {
                r.status == qdrant_client::qdrant::CollectionStatus::Green as i32
                    && r.optimizer_status.is_some_and(|o| o.ok)
            });
            if green {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    });
}

/// p50 and p99 of warm hybrid searches (ms), and how many were timed.
fn latencies(ingestor: &Ingestor, questions: &[String], rounds: usize) -> (f64, f64, usize) {
    let scope = Scope::user("local");
    let filter = SearchFilter::default();
    let mode = SearchMode::Hybrid;
    // Warm: the model loads and the index opens on the first search.
    ingestor
        .search_filtered(&questions[0], &scope, 10, None, &filter, mode)
        .expect("search");
    let mut times = Vec::new();
    for _ in 0..rounds {
        for q in questions {
            let started = Instant::now();
            let hits = ingestor
                .search_filtered(q, &scope, 10, None, &filter, mode)
                .expect("search");
            times.push(started.elapsed().as_secs_f64() * 1e3);
            assert!(!hits.is_empty(), "no hits for {q}");
        }
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    (pct(0.5), pct(0.99), times.len())
}

/// Copy `k` of a point: another id, files renamed under `copy-k/`, the vector moved a little
/// (so copies are neighbours, not duplicates).
fn copied(p: &ExportedPoint, k: u64) -> ExportedPoint {
    if k == 0 {
        return p.clone();
    }
    let mut q = p.clone();
    q.id = p.id.rotate_left(13) ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let rename = |v: &mut serde_json::Value| {
        if let Some(s) = v.as_str() {
            *v = serde_json::Value::String(format!("copy-{k}/{s}"));
        }
    };
    for field in ["locators", "containers"] {
        if let Some(list) = q.payload.get_mut(field).and_then(|v| v.as_array_mut()) {
            list.iter_mut().for_each(rename);
        }
    }
    for field in ["content_hash"] {
        if let Some(v) = q.payload.get_mut(field) {
            rename(v);
        }
    }
    // A deterministic small displacement, renormalised.
    let mut state = q.id | 1;
    let mut norm = 0.0f32;
    for x in &mut q.vector {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let noise = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.035;
        *x += noise;
        norm += *x * *x;
    }
    let norm = norm.sqrt().max(f32::MIN_POSITIVE);
    q.vector.iter_mut().for_each(|x| *x /= norm);
    q
}
