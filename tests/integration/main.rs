//! Integration tests: the real `ingest` binary, the real model and the real Qdrant Edge store.
//! One test binary; helpers live in `util.rs`.

mod cli;
mod formats;
mod hostile;
mod isolation;
mod library;
mod util;
mod watch;
