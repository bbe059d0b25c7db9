//! The catalog at scale: fill the catalog of a data directory with N generated entries (the
//! user `local`, as the CLI's default scope), then time single-entry writes (one put and
//! one commit each) against it. Peak memory of `ingest status` and of a one-file sync on
//! that data directory are measured from the shell (see docs/OPERATIONS.md, "Catalog at
//! scale").
//!
//! `cargo run --release --example catalog_scale -- DATA_DIR [N] [WRITES]`

// A benchmark's command line stops at the first surprise.
#![allow(clippy::expect_used, clippy::indexing_slicing)]

use std::time::Instant;

use ingest_index::prelude::*;
use ingest_index::testkit::{fill_catalog, generated_entry};
use ingest_index::SqliteCatalog;

fn main() -> ingest::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().expect("DATA_DIR"));
    let n: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("N"));
    let writes: u64 = args.next().map_or(200, |a| a.parse().expect("WRITES"));
    ingest::DataDir::at(&dir).prepare()?;
    let scope = ingest::Scope::user("local");
    let started = Instant::now();
    fill_catalog(&dir, &scope, n)?;
    println!(
        "filled {n} entries in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let opened = Instant::now();
    let catalog = SqliteCatalog::open(&dir)?;
    println!("open: {:.1} ms", opened.elapsed().as_secs_f64() * 1e3);
    let mut times = Vec::new();
    for k in 0..writes {
        // Rewrite an existing entry spread over the catalog, then commit.
        let mut entry = generated_entry((k * 4_999) % n.max(1));
        entry.chunks = 4;
        let t = Instant::now();
        catalog.put(&scope, entry);
        catalog.save()?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "one entry's write (put + commit), {writes} writes: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    );
    let t = Instant::now();
    let one = catalog.get(&scope, &generated_entry(n / 2).locator);
    println!(
        "one entry's read: {:.3} ms ({})",
        t.elapsed().as_secs_f64() * 1e3,
        if one.is_some() { "found" } else { "missing" }
    );
    let t = Instant::now();
    let folder = catalog.top_level_under(&scope, "/srv/bulk/folder-00500");
    println!(
        "one folder's entries (a sync's lookup): {} in {:.2} ms",
        folder.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
