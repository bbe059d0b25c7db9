//! An upload handler using the library directly: what a Rust web application does with a
//! file a user uploads. It hands the body over as a stream and answers at once with a job
//! id; later requests ask for the job's status; the user's searches see the file once it is
//! `indexed`.
//!
//! ```sh
//! cargo run --release --example upload_handler -- DATA_DIR FILE...
//! ```
//!
//! Each FILE stands for one upload (opened and streamed, never read whole); the program
//! prints each job's state as it changes, each file's line at the end, then searches for the
//! first words of the first file's name.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ingest::{Config, Ingestor, JobId, JobState, Scope, UploadOptions, Uploads, UploadsConfig};

/// The application's handler for `POST /upload` (its framework's request body as a `Read`):
/// accept, and answer with the job to poll.
pub fn handle_upload(
    uploads: &Uploads,
    user: &str,
    file_name: &str,
    body: impl std::io::Read,
) -> Result<JobId, ingest::Error> {
    let scope = Scope::user(user);
    uploads.submit(file_name, body, &scope, &UploadOptions::default())
}

/// Upload `files` for user `demo` into the data dir of `config`, follow the jobs to their
/// end, search; what it shows goes to `out`.
pub fn run(config: Config, files: &[PathBuf], out: &mut dyn std::io::Write) -> anyhow::Result<()> {
    // Open once per process and share: `Ingestor` and `Uploads` are Send + Sync.
    let ingestor = Arc::new(Ingestor::open(config)?);
    let uploads = Uploads::start(Arc::clone(&ingestor), UploadsConfig::default())?;
    let scope = Scope::user("demo");
    let mut jobs = Vec::new();
    for path in files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "upload".into());
        let job = handle_upload(&uploads, "demo", &name, std::fs::File::open(path)?)?;
        writeln!(out, "accepted {name} as job {job}")?;
        jobs.push(job);
    }
    // What a status endpoint would answer, polled until every job has ended.
    let mut seen: HashMap<JobId, JobState> = HashMap::new();
    loop {
        let mut open = 0;
        for job in &jobs {
            let Some(status) = uploads.job(job, &scope) else {
                continue;
            };
            if seen.insert(job.clone(), status.state) != Some(status.state) {
                writeln!(
                    out,
                    "job {job} {}: {}",
                    status.locator,
                    status.state.as_str()
                )?;
            }
            if !status.state.is_final() {
                open += 1;
            }
        }
        if open == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for job in &jobs {
        if let Some(status) = uploads.job(job, &scope) {
            for line in &status.files {
                let reason = line.reason.as_deref().unwrap_or("");
                writeln!(out, "  {} {} {reason}", line.status, line.locator)?;
            }
        }
    }
    if let Some(first) = files.first().and_then(|f| f.file_stem()) {
        let query = first.to_string_lossy().replace(['-', '_'], " ");
        for hit in ingestor.search(&query, &scope, 3, None)? {
            writeln!(out, "hit {:.3} {}", hit.score, hit.locator)?;
        }
    }
    uploads.shutdown();
    Ok(())
}

#[allow(dead_code)] // a test includes this file as a module and calls `run`
fn main() -> anyhow::Result<()> {
    // Documents are parsed in worker processes started from this same executable: let such
    // a process serve its jobs instead of running the handler.
    ingest::run_worker_if_requested();
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let data_dir = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: upload_handler DATA_DIR FILE..."))?;
    let files: Vec<PathBuf> = args.collect();
    run(Config::new(data_dir), &files, &mut std::io::stdout())
}
