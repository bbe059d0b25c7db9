//! What an upload handler does with the library: open one `Ingestor` per process, hand it
//! the uploaded bytes with the uploader's scope, then search.
//!
//! Run: `cargo run --release --example upload_handler -- [DATA_DIR]`
//! (needs the provisioned model: `make models`).

use ingest::{Config, Ingestor, Scope};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Documents are parsed in worker processes started from this same executable: let such
    // a process serve its jobs instead of running the handler.
    ingest::run_worker_if_requested();
    let data_dir = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::temp_dir()
            .join("ingest-example")
            .display()
            .to_string()
    });
    let ingestor = Ingestor::open(Config::new(&data_dir))?;
    let scope = Scope::user("alice");

    let upload = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/archives/bundle.zip"
    ))?;
    let report = ingestor.ingest_bytes("bundle.zip", upload, &scope)?;
    for file in &report.files {
        println!(
            "{:<9} {:>3} chunks  {}",
            format!("{:?}", file.status),
            file.chunks,
            file.locator
        );
    }

    for hit in ingestor.search("who kept the lighthouse", &scope, 3, Some(0.2))? {
        println!("{:.3}  {}", hit.score, hit.locator);
    }
    // Another user's scope sees nothing of Alice's upload.
    assert!(ingestor
        .search("who kept the lighthouse", &Scope::user("bob"), 3, None)?
        .is_empty());
    Ok(())
}
