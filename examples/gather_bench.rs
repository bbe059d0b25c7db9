//! `gather_context` latency at scale (issue 27's benchmark; a measurement, not a test):
//!
//! ```sh
//! cargo run --release --example gather_bench -- DATA_DIR QUESTIONS.tsv... [--items 1000]
//! ```
//!
//! DATA_DIR holds the documents (docs/PERFORMANCE.md says how the 100 k-chunk index was made:
//! three copies of an exported corpus index imported under `alice` and `carol` (private) and
//! `bob` (shared), all in mandate `acme`). The first run fills workflow `bench` of `alice` with
//! `--items` items (40 % tool results: the JSON of an earlier search's hits, 40 % entities,
//! 20 % summaries), stored through the workflow tools like a host would. Then every question
//! (the first column of each TSV) is asked twice: once as `gather_context` (max_chars 8000,
//! the default layers) and once as `search_documents` (limit 10, max_chars 8000), the single
//! search a host would otherwise start from; p50/p90/p99 of both are printed side by side.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::time::Instant;

use ingest::tools::{
    self, GatherArgs, RememberArgs, SearchArgs, StoreResultArgs, SummaryArgs, ToolCall,
};
use ingest::{Config, Ingestor, Scope};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn call(ing: &Ingestor, scope: &Scope, c: &ToolCall) -> (f64, String) {
    let t = Instant::now();
    let a = tools::call(ing, scope, c);
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(!a.is_error, "{}: {}", c.name(), a.text);
    (ms, a.text)
}

fn main() {
    // Extraction runs in worker processes: this same binary, started with the worker flag.
    ingest::run_worker_if_requested();
    let mut args = std::env::args().skip(1);
    let data_dir = args.next().expect("DATA_DIR");
    let mut files = Vec::new();
    let mut items = 1000usize;
    while let Some(a) = args.next() {
        if a == "--items" {
            items = args.next().and_then(|n| n.parse().ok()).expect("--items N");
        } else {
            files.push(a);
        }
    }
    let questions: Vec<String> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .expect("questions")
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .filter_map(|l| l.split('\t').next().map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(!questions.is_empty(), "no questions");
    let ing = Ingestor::open(Config::new(&data_dir)).expect("open");
    ing.load_model().expect("model");
    let alice = Scope {
        user_id: "alice".into(),
        mandate_id: Some("acme".into()),
        ..Scope::default()
    };
    ing.open_index().expect("store");
    let status = ingest_serve::daemon::status_of(&ing).expect("status");
    println!("index: {} points in the store", status["points"]);

    let wf = ing.workflows();
    let have = wf.results(&alice, "bench").unwrap().len()
        + wf.entities(&alice, "bench").unwrap().len()
        + wf.summaries(&alice, "bench").unwrap().len();
    let filling = Instant::now();
    let mut stored = 0;
    for i in have..items {
        let q = &questions[i % questions.len()];
        let c = match i % 5 {
            0 | 1 => {
                // A tool result: the hits of a search, as JSON.
                let (_, hits) = call(
                    &ing,
                    &alice,
                    &ToolCall::SearchDocuments(SearchArgs {
                        query: q.clone(),
                        limit: Some(5),
                        max_chars: Some(6000),
                        ..SearchArgs::default()
                    }),
                );
                ToolCall::StoreToolResult(StoreResultArgs {
                    workflow: "bench".into(),
                    tool: "search_documents".into(),
                    content: ingest::tools::RawJson::json_of(&serde_json::from_str(&hits).unwrap()),
                    args: Some(ingest::tools::RawJson::json_of(
                        &serde_json::json!({ "query": q }),
                    )),
                    max_chars: Some(1000),
                    ..StoreResultArgs::default()
                })
            }
            2 | 3 => ToolCall::Remember(RememberArgs {
                workflow: "bench".into(),
                key: format!("topic_{i}"),
                value: q.clone(),
                source: Some(format!("round {i}")),
                ..RememberArgs::default()
            }),
            _ => ToolCall::StoreSummary(SummaryArgs {
                workflow: "bench".into(),
                text: format!(
                    "Round {i}: the user asked \"{q}\" and we searched the manuals for it."
                ),
                covers: Some(format!("round {i}")),
                ..SummaryArgs::default()
            }),
        };
        let (_, answer) = call(&ing, &alice, &c);
        assert!(!answer.contains("not_indexed"), "not indexed: {answer}");
        stored += 1;
    }
    if stored > 0 {
        println!(
            "stored {stored} workflow items in {:.1} s",
            filling.elapsed().as_secs_f64()
        );
    }
    let s = wf.stats().unwrap();
    println!(
        "workflow items: {} tool results ({} bytes), {} entities, {} summaries",
        s.results, s.result_bytes, s.entities, s.summaries
    );

    let (mut gather, mut search) = (Vec::new(), Vec::new());
    let (mut n_items, mut chars) = (0usize, 0usize);
    for q in &questions {
        let (ms, text) = call(
            &ing,
            &alice,
            &ToolCall::GatherContext(GatherArgs {
                query: q.clone(),
                workflow: "bench".into(),
                max_chars: Some(8000),
                ..GatherArgs::default()
            }),
        );
        gather.push(ms);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        n_items += v["items"].as_array().map_or(0, Vec::len);
        chars += text.len();
        let (ms, _) = call(
            &ing,
            &alice,
            &ToolCall::SearchDocuments(SearchArgs {
                query: q.clone(),
                limit: Some(10),
                max_chars: Some(8000),
                ..SearchArgs::default()
            }),
        );
        search.push(ms);
    }
    gather.sort_by(f64::total_cmp);
    search.sort_by(f64::total_cmp);
    let n = questions.len();
    println!("{n} questions, max_chars 8000");
    println!("| call | p50 ms | p90 ms | p99 ms |");
    println!("|---|---|---|---|");
    for (name, v) in [
        ("gather_context (5 layers)", &gather),
        ("search_documents (limit 10)", &search),
    ] {
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} |",
            percentile(v, 0.5),
            percentile(v, 0.9),
            percentile(v, 0.99)
        );
    }
    println!(
        "gather_context: {:.1} items and {:.0} chars per answer on average",
        n_items as f64 / n as f64,
        chars as f64 / n as f64
    );
}
