//! Integration tests: the real `ingest` binary, the real model and the real Qdrant Edge store.
//! One test binary; helpers live in `util.rs`.

// Test code (helpers included) stops at the first surprise.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod architecture;
mod cards;
mod catalog_tls;
mod catalogs;
mod cli;
mod crash;
mod day;
mod docs;
mod eval;
mod faces;
mod formats;
mod hostile;
mod isolation;
mod languages;
mod library;
mod linger;
mod mail;
mod mcp;
mod ocr;
mod privacy;
mod quarantine;
mod readme;
mod robustness;
mod scale_out;
mod security;
mod service;
mod sources;
mod terminal;
mod tools;
mod unpack_panic;
mod util;
mod watch;
mod workflow;
