//! Extraction worker processes: the real `ingest` binary as a worker, and workers that hang or
//! die, driven through the public `WorkerPool`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ingest::extractors::{detect, ExtractError, ExtractInput, Extraction, Extractor, Locator};
use ingest::testing::WorkerPool;
use ingest::IsolationConfig;

fn config(program: PathBuf, deadline: Duration) -> IsolationConfig {
    IsolationConfig {
        program: Some(program),
        deadline,
        ..IsolationConfig::default()
    }
}

/// A worker program that is a shell script (it gets the worker arguments and ignores them).
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Extract `bytes` as `name` through `pool` on another thread; `None` if it has not
/// answered within a generous hang guard.
fn extract(
    pool: &std::sync::Arc<WorkerPool>,
    name: &str,
    bytes: &[u8],
) -> Option<Result<Extraction, ExtractError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let pool = std::sync::Arc::clone(pool);
    let (name, bytes) = (name.to_string(), bytes.to_vec());
    std::thread::spawn(move || {
        let locator = Locator::root(&name);
        let detected = detect(&bytes, &name);
        let _ = tx.send(pool.extract(&ExtractInput {
            bytes: &bytes,
            locator: &locator,
            file_hash: "feed",
            detected: &detected,
            options: ingest::ExtractOptions::defaults(),
        }));
    });
    rx.recv_timeout(Duration::from_secs(120)).ok()
}

fn in_process(name: &str, bytes: &[u8]) -> Result<Extraction, ExtractError> {
    let locator = Locator::root(name);
    let detected = detect(bytes, name);
    ingest::testing::InProcess.extract(&ExtractInput {
        bytes,
        locator: &locator,
        file_hash: "feed",
        detected: &detected,
        options: ingest::ExtractOptions::defaults(),
    })
}

/// PDFium loads inside the worker (under its memory limit) and reads the PDF's text there;
/// in-process extraction without it reads the same pages through pdf-extract.
#[test]
fn the_ingest_binary_as_worker_reads_pdf_text_with_pdfium() {
    let pool = WorkerPool::new(config(
        PathBuf::from(env!("CARGO_BIN_EXE_ingest")),
        Duration::from_secs(60),
    ));
    let options = ingest::ExtractOptions {
        pdfium_library: Some(
            ingest::find_pdfium(None).expect("libpdfium.so in the model folder: run `make models`"),
        ),
        ..ingest::ExtractOptions::default()
    };
    let name = "survey-report.pdf";
    let bytes = std::fs::read(crate::util::fixtures().join("formats").join(name)).unwrap();
    let locator = Locator::root(name);
    let detected = detect(&bytes, name);
    let input = ExtractInput {
        bytes: &bytes,
        locator: &locator,
        file_hash: "feed",
        detected: &detected,
        options: &options,
    };
    let texts = |e: &Extraction| -> Vec<(String, String)> {
        e.objects
            .iter()
            .filter(|o| o.content_type == ingest::ContentType::Text)
            .map(|o| {
                let source = o.metadata["text_source"].as_str().unwrap_or("").to_string();
                (o.context_ref.location.clone(), source)
            })
            .collect()
    };
    let fast = texts(&pool.extract(&input).unwrap());
    let slow = texts(&in_process(name, &bytes).unwrap());
    assert!(!fast.is_empty());
    assert_eq!(fast.len(), slow.len(), "{fast:?} {slow:?}");
    for ((at, source), (slow_at, slow_source)) in fast.iter().zip(&slow) {
        assert_eq!(at, slow_at);
        assert_eq!(source, "pdfium");
        assert_eq!(slow_source, "pdf-extract");
    }
}

#[test]
fn the_ingest_binary_as_worker_answers_as_in_process_extraction_and_is_reused() {
    let pool = std::sync::Arc::new(WorkerPool::new(config(
        PathBuf::from(env!("CARGO_BIN_EXE_ingest")),
        Duration::from_secs(60),
    )));
    let md = b"# Title\nSome text under it.\n\n## Next\nMore.\n";
    let got = extract(&pool, "a.md", md).expect("answer");
    assert_eq!(got, in_process("a.md", md));
    assert!(got.is_ok_and(|e| e.objects.len() >= 2));
    let pids = ingest::testing::idle_worker_pids(&pool);
    assert_eq!(pids.len(), 1);
    // A file the extractor refuses is an answer too, and the worker stays.
    let bad = b"%PDF-1.4\nnot a pdf\n";
    let got = extract(&pool, "b.pdf", bad).expect("answer");
    assert!(
        matches!(got, Err(ExtractError::Malformed { .. })),
        "{got:?}"
    );
    assert_eq!(got, in_process("b.pdf", bad));
    assert_eq!(
        ingest::testing::idle_worker_pids(&pool),
        pids,
        "the same worker served both jobs"
    );
}

#[test]
fn a_worker_that_hangs_is_killed_at_the_deadline_and_replaced() {
    let dir = tempfile::tempdir().unwrap();
    // Takes the job and never answers.
    let hang = script(dir.path(), "hang.sh", "exec sleep 600");
    let pool = std::sync::Arc::new(WorkerPool::new(config(hang, Duration::from_millis(300))));
    for _ in 0..2 {
        let got = extract(&pool, "a.txt", b"hello\n").expect("the watchdog ended the job");
        assert_eq!(
            got,
            Err(ExtractError::Aborted("timed out after 0.3 s".into()))
        );
        assert!(
            ingest::testing::idle_worker_pids(&pool).is_empty(),
            "a killed worker is not reused"
        );
    }
}

#[test]
fn a_worker_that_dies_mid_job_fails_that_job_with_its_last_words() {
    let dir = tempfile::tempdir().unwrap();
    // Reads a little of the job, says why it gives up, exits.
    let die = script(
        dir.path(),
        "die.sh",
        "head -c 4 >/dev/null\necho 'extraction worker: cannot go on' >&2\nexit 7",
    );
    let pool = std::sync::Arc::new(WorkerPool::new(config(die, Duration::from_secs(60))));
    let got = extract(&pool, "a.txt", b"hello\n").expect("answer");
    assert_eq!(
        got,
        Err(ExtractError::Aborted(
            "exited with status 7: extraction worker: cannot go on".into()
        ))
    );
    // Killed by a signal once it has the job (reading 4 bytes means the whole frame, one
    // write under PIPE_BUF, is in the pipe: the job was accepted).
    let sig = script(dir.path(), "sig.sh", "head -c 4 >/dev/null\nkill -9 $$");
    let pool = std::sync::Arc::new(WorkerPool::new(config(sig, Duration::from_secs(60))));
    let got = extract(&pool, "a.txt", b"hello\n").expect("answer");
    assert_eq!(got, Err(ExtractError::Aborted("killed (signal 9)".into())));
}
