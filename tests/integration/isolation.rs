//! Extraction worker processes: the real `ingest` binary as a worker, and workers that hang or
//! die, driven through the public `WorkerPool`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ingest::extractors::{detect, ExtractError, ExtractInput, Extraction, Extractor, Locator};
use ingest::IsolationConfig;
use ingest_isolation::WorkerPool;

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
    ingest_isolation::InProcess.extract(&ExtractInput {
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
    let pids = pool.idle_pids();
    assert_eq!(pids.len(), 1);
    // A file the extractor refuses is an answer too, and the worker stays.
    let bad = b"%PDF-1.4\nnot a pdf\n";
    let got = extract(&pool, "b.pdf", bad).expect("answer");
    assert!(
        matches!(got, Err(ExtractError::Malformed { .. })),
        "{got:?}"
    );
    assert_eq!(got, in_process("b.pdf", bad));
    assert_eq!(pool.idle_pids(), pids, "the same worker served both jobs");
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
        assert!(pool.idle_pids().is_empty(), "a killed worker is not reused");
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

/// The state letter of process `pid` (`R`, `S`, `Z`…), from `/proc/PID/stat`; `None`: no
/// such process.
fn state_of(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state …`: comm may hold spaces and parentheses, so from the last `)`.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().next()?.chars().next()
}

/// An extraction worker dies with its parent: `ingest` is killed (SIGKILL, nothing to clean
/// up) while its worker is in the middle of a job (the `extract.job` failpoint makes the job
/// last two minutes), and the worker is gone within seconds, not when its job ends.
#[test]
fn a_worker_dies_with_its_parent_killed_in_the_middle_of_a_job() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("docs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("a.md"), "# Log\nThe keeper logs the gusts.\n").unwrap();
    let mut ingest = std::process::Command::new(env!("CARGO_BIN_EXE_ingest"))
        .args(["--json", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg(&folder)
        .env(ingest_base::failpoint::ENV, "extract.job=1:pause120000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let parent = ingest.id();
    // Its worker, once started (a hang guard, not a speed test).
    let mut worker = None;
    for _ in 0..1200 {
        worker = crate::util::workers_of(parent).first().map(|w| w.0);
        if worker.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(worker) = worker else {
        let _ = ingest.kill();
        let out = ingest.wait_with_output().unwrap();
        panic!(
            "no extraction worker of ingest ({}) appeared: {:?}",
            parent, out.status
        );
    };
    // The job was sent as the worker started: it is in its pause now.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        crate::util::workers_of(parent)
            .iter()
            .any(|w| w.0 == worker),
        "the worker {worker} is working for {parent}"
    );
    ingest.kill().unwrap();
    let status = ingest.wait().unwrap();
    let mut last = None;
    for _ in 0..100 {
        last = state_of(worker);
        // Gone, or a zombie no one reaped: dead either way.
        if last.is_none_or(|s| s == 'Z') {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker),
        nix::sys::signal::Signal::SIGKILL,
    );
    panic!(
        "the worker {worker} outlived its parent (killed: {status:?}) by 10 s: its state is \
         {last:?}"
    );
}

/// A PNG of `width` x `height` black RGBA pixels, written row by row (a 100-million-pixel
/// picture is 400 MB decoded, 400 KB as a file).
fn black_png(width: u32, height: u32) -> Vec<u8> {
    use std::io::Write as _;
    let chunk = |out: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.sum().to_be_bytes());
    };
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0]); // 8 bits, RGBA
    chunk(&mut out, b"IHDR", &header);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let row = vec![0u8; 1 + 4 * width as usize]; // filter 0, then the pixels
    for _ in 0..height {
        z.write_all(&row).unwrap();
    }
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

/// Render `bytes` (named `name`) through `pool`: what the worker answers.
fn render_through(pool: &WorkerPool, name: &str, bytes: &[u8]) -> Result<Extraction, ExtractError> {
    let options = ingest::ExtractOptions {
        render: Some(ingest::extractors::RenderRequest {
            page: 1,
            dpi: 100,
            region: None,
            max_bytes: 1_000_000,
        }),
        pdfium_library: ingest::find_pdfium(None),
        ..ingest::ExtractOptions::default()
    };
    let locator = Locator::root(name);
    let detected = detect(bytes, name);
    pool.extract(&ExtractInput {
        bytes,
        locator: &locator,
        file_hash: "feed",
        detected: &detected,
        options: &options,
    })
}

/// A picture of 100 million pixels (the documented limit for pictures) is rendered within
/// the worker's memory limit (the default 1 GiB): an image comes back, within its bounds, and
/// the worker lives on. Decoded it is 400 MB; scaling it must not copy it again as floats.
#[test]
fn a_picture_of_100_million_pixels_renders_within_the_workers_memory() {
    let pool = WorkerPool::new(config(
        PathBuf::from(env!("CARGO_BIN_EXE_ingest")),
        Duration::from_secs(120),
    ));
    let png = black_png(10_000, 10_000);
    let rendered = render_through(&pool, "big.png", &png);
    let object = match &rendered {
        Ok(e) if e.objects.len() == 1 => &e.objects[0],
        other => panic!("no image for a 100-million-pixel picture: {other:?}"),
    };
    let side = |k: &str| object.metadata[k].as_u64().unwrap_or(u64::MAX);
    assert!(
        side("width") * side("height") <= 16_000_000,
        "{:?}",
        object.metadata
    );
    assert_eq!(side("original_width"), 10_000, "{:?}", object.metadata);
    assert_eq!(pool.idle_pids().len(), 1, "the worker lives on");
}

/// A PDF of 100 000 (empty) pages fails as a file whose page count is over the bound, said
/// so before any page is read, by a worker that lives on: not a panic, nor a worker out of
/// memory.
#[test]
fn a_pdf_of_100_000_pages_is_refused_by_its_page_count() {
    let pool = WorkerPool::new(config(
        PathBuf::from(env!("CARGO_BIN_EXE_ingest")),
        Duration::from_secs(300),
    ));
    let pdf = ingest::extractors::made_pdf::many_pages(100_000);
    let locator = Locator::root("pages.pdf");
    let detected = detect(&pdf, "pages.pdf");
    let got = pool.extract(&ExtractInput {
        bytes: &pdf,
        locator: &locator,
        file_hash: "feed",
        detected: &detected,
        options: ingest::ExtractOptions::defaults(),
    });
    match &got {
        Err(ExtractError::Malformed { reason, .. }) => assert!(
            reason.contains("100000 pages") && reason.contains("at most 20000"),
            "{reason}"
        ),
        other => panic!("{:?}", other.as_ref().map(|e| e.objects.len())),
    }
    assert_eq!(pool.idle_pids().len(), 1, "the worker lives on");
}
