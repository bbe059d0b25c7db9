//! Integration tests: the real `ingest` binary, the real model and the real Qdrant Edge store.
//! One test binary; helpers live in `util.rs`.

mod cli;
mod crash;
mod formats;
mod hostile;
mod library;
mod privacy;
mod util;
mod watch;
