//! Re-embed an index with another model variant, keeping its chunks as they are (text,
//! payload, ids): compares two models on exactly the same chunks, without extracting again.
//!
//! ```text
//! cargo run --release --example reembed -- FROM_DATA_DIR TO_DATA_DIR VARIANT
//! ingest eval --data-dir TO_DATA_DIR eval/dev.tsv
//! ```
//!
//! Only the shard is written (with the variant record): enough for `ingest eval` and
//! `ingest search`, not for syncing (no catalog).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use ingest::{find_model_dir, ModelVariant};
use ingest_embed::load_embedder;
use ingest_index::{EdgeIndex, IndexRead, IndexWrite};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [from, to, variant] = args.as_slice() else {
        eprintln!("usage: reembed FROM_DATA_DIR TO_DATA_DIR VARIANT");
        std::process::exit(2);
    };
    let variant: ModelVariant = variant.parse().expect("variant");
    let (from, to) = (PathBuf::from(from), PathBuf::from(to));
    let mut points = Vec::new();
    EdgeIndex::open(&from)
        .expect("open FROM")
        .export_points(&mut |p| points.push(p))
        .expect("export");
    ingest::prepare_data_dir(&to).expect("TO");
    std::fs::write(to.join("embedding-model"), format!("{}\n", variant.name())).expect("record");
    let embedder =
        load_embedder(&find_model_dir(None).expect("model"), variant, 16).expect("load model");
    let index = EdgeIndex::open(&to).expect("open TO");
    let started = std::time::Instant::now();
    let total = points.len();
    for (i, group) in points.chunks_mut(64).enumerate() {
        let texts: Vec<&str> = group
            .iter()
            .map(|p| p.payload.get("text").and_then(|t| t.as_str()).unwrap_or(""))
            .collect();
        let vectors = embedder.embed(&texts).expect("embed");
        for (p, v) in group.iter_mut().zip(vectors) {
            p.vector = v;
        }
        index.import_points(group).expect("import");
        if i % 50 == 0 {
            eprintln!(
                "{} / {} chunks, {:.0} s",
                i * 64,
                total,
                started.elapsed().as_secs_f64()
            );
        }
    }
    index.flush();
    index.optimize().expect("optimize");
    eprintln!(
        "{} chunks re-embedded with {variant} in {:.0} s",
        points.len(),
        started.elapsed().as_secs_f64()
    );
}
