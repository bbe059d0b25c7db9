//! The two catalogs side by side: the embedded SQLite one and PostgreSQL (a throw-away
//! cluster started here, as the tests do, or the server at `$INGEST_TEST_POSTGRES_URL`),
//! both filled with the same N entries (folders of files and archives of members, in a
//! few scopes), then the operations the tools and `ingest status` use, timed one by one:
//! p50 / p99 over R repetitions each. See docs/OPERATIONS.md, "A shared catalog".
//!
//! `cargo run --release --example catalog_backends -- [N] [R]`

// A benchmark's command line stops at the first surprise.
#![allow(clippy::expect_used, clippy::indexing_slicing, clippy::unwrap_used)]

use std::time::Instant;

use ingest_index::testkit::PostgresServer;
use ingest_index::{Catalog, CatalogEntry, PgCatalog, SqliteCatalog};

/// Entry `i`: in folder `i / 1000`; every tenth file an archive of 20 members.
fn entries(i: u64) -> Vec<CatalogEntry> {
    let folder = format!("/srv/docs/folder-{:04}", i / 1000);
    let hash = |k: u64| blake3::hash(&k.to_le_bytes()).to_hex().to_string();
    if !i.is_multiple_of(10) {
        return vec![CatalogEntry::indexed(
            format!("{folder}/report-{i:07}.txt"),
            None,
            hash(i),
            4096,
            1,
            3,
        )];
    }
    let archive = format!("{folder}/bundle-{i:07}.zip");
    let mut out = vec![CatalogEntry::container(
        archive.clone(),
        hash(i),
        65536,
        1,
        "archive: 20 members",
        Vec::new(),
    )];
    for m in 0..20u64 {
        out.push(CatalogEntry::indexed(
            format!("{archive}!/part-{m:02}.txt"),
            Some(archive.clone()),
            hash(i * 100 + m + 1_000_000_000),
            2048,
            0,
            2,
        ));
    }
    out
}

fn percentiles(mut ms: Vec<f64>) -> String {
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    format!("p50 {:>8.3} ms  p99 {:>8.3} ms", at(0.5), at(0.99))
}

fn time(reps: u64, mut f: impl FnMut(u64)) -> String {
    let mut ms = Vec::new();
    for k in 0..reps {
        let t = Instant::now();
        f(k);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    percentiles(ms)
}

fn bench(name: &str, c: &dyn Catalog, n: u64, reps: u64) {
    let scopes: Vec<ingest::Scope> = (0..4)
        .map(|s| ingest::Scope::user(format!("tenant-{s}")))
        .collect();
    let t = Instant::now();
    let mut rows = 0u64;
    for i in 0..n {
        for e in entries(i) {
            c.put(&scopes[(i % 4) as usize], e);
            rows += 1;
        }
        if i % 10_000 == 9_999 {
            c.save().unwrap();
        }
    }
    c.save().unwrap();
    println!(
        "{name}: filled {rows} entries ({n} files and archives, 4 scopes) in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let scope = &scopes[0];
    // Scope 0 holds i % 4 == 0; files are i % 10 != 0: i = 20 j + 4.
    let file_of_scope0 = |j: u64| (20 * j + 4) % (n / 20 * 20).max(20);
    // Archives of scope 0: i % 40 == 0.
    let archive = |k: u64| {
        let i = (k * 40 * 7) % n / 40 * 40;
        format!("/srv/docs/folder-{:04}/bundle-{i:07}.zip", i / 1000)
    };
    println!(
        "  write one entry (put + save)     {}",
        time(reps, |k| {
            let mut e = entries(file_of_scope0(k * 13)).remove(0);
            e.chunks = 5;
            c.put(scope, e);
            c.save().unwrap();
        })
    );
    println!(
        "  get one entry                    {}",
        time(reps, |k| {
            let e = entries(file_of_scope0(k * 17)).remove(0);
            assert!(c.get(scope, &e.locator).is_some());
        })
    );
    println!(
        "  browse an archive (names, 20)    {}",
        time(reps, |k| {
            let (names, count, _) = c.member_names(scope, &archive(k), 50);
            assert_eq!((names.len(), count), (20, 20));
        })
    );
    println!(
        "  browse an archive (entries)      {}",
        time(reps, |k| {
            assert_eq!(c.members_of(scope, &archive(k)).len(), 20);
        })
    );
    println!(
        "  a folder's top level (sync)      {}",
        time(reps, |k| {
            let folder = format!("/srv/docs/folder-{:04}", (k * 7) % (n / 1000).max(1));
            assert!(!c.top_level_under(scope, &folder).is_empty());
        })
    );
    println!(
        "  status of one scope              {}",
        time(reps.min(20), |_| {
            assert!(c.stats(Some(scope)).files > 0);
        })
    );
    println!(
        "  status of every scope            {}",
        time(reps.min(20), |_| {
            assert!(c.stats(None).files > 0);
        })
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(20_000, |a| a.parse().expect("N"));
    let reps: u64 = args.next().map_or(200, |a| a.parse().expect("R"));
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "CPU: {cpu}, {} threads",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let dir = tempfile::tempdir().unwrap();
    bench(
        "embedded (SQLite)",
        &SqliteCatalog::open(dir.path()).unwrap(),
        n,
        reps,
    );
    let Some(pg) = PostgresServer::start() else {
        return;
    };
    let url = pg.database("bench");
    let pg_dir = tempfile::tempdir().unwrap();
    let catalog = PgCatalog::open(&url.parse().unwrap(), pg_dir.path()).unwrap();
    bench("PostgreSQL (loopback)", &catalog, n, reps);
}
