//! `render_page`'s CPU on a padded PDF (issue 56; a measurement, not a test): one small page
//! plus a stream no page uses, `PADDING_MIB` MiB of it (default 30), rendered in an extraction
//! worker (this example's own binary) under the service's default limits. Prints the
//! worker's CPU seconds (user + system, counted once it is reaped), the wall time and what
//! came back:
//!
//! ```sh
//! cargo run --release --locked --example render_cpu [-- PADDING_MIB [heavy] [in-process]]
//! ```
//!
//! `heavy` draws the page with 400 000 curves as well (a page that is slow to draw): the
//! worker's limits, not the page, then end the rendering. `in-process` renders in this
//! process without any limit (what the rendering itself costs; this process's CPU is
//! printed then).

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ingest::extractors::{detect, ExtractInput, Extractor, Locator, RenderRequest};

fn cpu(who: nix::sys::resource::UsageWho) -> Duration {
    let u = nix::sys::resource::getrusage(who).expect("getrusage");
    let t =
        |tv: nix::sys::time::TimeVal| Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1000);
    t(u.user_time()) + t(u.system_time())
}

fn main() {
    ingest::run_worker_if_requested();
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().map_or(30, |a| a.parse().expect("MiB"));
    let rest: Vec<String> = args.collect();
    let heavy = rest.iter().any(|a| a == "heavy");
    let in_process = rest.iter().any(|a| a == "in-process");
    let mut content = String::from("BT /F1 24 Tf 72 720 Td (A small page, padded) Tj ET\n");
    if heavy {
        content.push_str("0.1 w\n");
        for i in 0..400_000u32 {
            let (x, y) = (f64::from(i % 500), f64::from(i % 700));
            let _ = writeln!(
                content,
                "{x} {y} m {} {} {} {} {} {} c S",
                x + 90.0,
                y + 3.0,
                x + 1.0,
                y + 80.0,
                x + 50.0,
                y + 60.0
            );
        }
    }
    let pdf = ingest::extractors::made_pdf::one_page(
        [0.0, 0.0, 595.0, 842.0],
        &content,
        mib * 1024 * 1024,
    );
    let config = ingest::IsolationConfig::default();
    let pool: Box<dyn Extractor> = if in_process {
        Box::new(ingest_isolation::InProcess)
    } else {
        Box::new(ingest_isolation::WorkerPool::new(config.clone()))
    };
    let before = cpu(nix::sys::resource::UsageWho::RUSAGE_SELF);
    let options = ingest::ExtractOptions {
        render: Some(RenderRequest {
            page: 1,
            dpi: 100,
            region: None,
            max_bytes: 1_000_000,
        }),
        pdfium_library: ingest::find_pdfium(None),
        ..ingest::ExtractOptions::default()
    };
    assert!(
        options.pdfium_library.is_some(),
        "libpdfium.so: run `make models`"
    );
    let locator = Locator::root("padded.pdf");
    let detected = detect(&pdf, "padded.pdf");
    let started = Instant::now();
    let result = pool.extract(&ExtractInput {
        bytes: &pdf,
        locator: &locator,
        file_hash: "feed",
        detected: &detected,
        options: &options,
    });
    let wall = started.elapsed();
    drop(pool); // the worker is reaped: its CPU is counted
    let spent = if in_process {
        cpu(nix::sys::resource::UsageWho::RUSAGE_SELF).saturating_sub(before)
    } else {
        cpu(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
    };
    let answer = match &result {
        Ok(e) => format!(
            "an image of {}x{}",
            e.objects[0].metadata["width"], e.objects[0].metadata["height"]
        ),
        Err(e) => format!("error: {e}"),
    };
    println!(
        "padded PDF of {} bytes ({mib} MiB of padding{}): {} CPU {:.2} s, wall {:.2} s, \
         {answer} (configured limits: {} s CPU, {} s wall)",
        pdf.len(),
        if heavy { ", 400 000 curves" } else { "" },
        if in_process {
            "in-process, no limit:"
        } else {
            "worker"
        },
        spent.as_secs_f64(),
        wall.as_secs_f64(),
        config.cpu_seconds,
        config.deadline.as_secs(),
    );
}
