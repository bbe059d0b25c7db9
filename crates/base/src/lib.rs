//! What every layer of `ingest` stands on, and nothing above it: the error type
//! ([`error`]), the one access rule and its checks on scopes ([`access`]), the data
//! directory's layout ([`data_dir`]) and owner-only permissions ([`perms`]), crash-test
//! failpoints ([`failpoint`]), upload names ([`names`]), a run's reports ([`report`]) and
//! progress ([`progress`]), byte gates that bound memory in flight ([`gate`]), JSON counted
//! before it is built ([`bounded_json`]) and the embedding batcher's queue ([`batcher`]).
//!
//! ARCHITECTURE.md draws the crates above it.

pub mod access;
pub mod batcher;
pub mod bounded_json;
pub mod data_dir;
pub mod error;
pub mod failpoint;
pub mod gate;
pub mod names;
pub mod perms;
pub mod progress;
pub mod report;

pub use error::{Error, Result};

/// The longest search query, in bytes: the model reads at most 256 tokens of it, and a
/// longer one only costs tokenizing.
pub const MAX_QUERY_BYTES: usize = 4096;

/// Lock a mutex, poisoned or not: a panic while holding one of the crates' locks leaves
/// consistent data behind (every update is a single insert/remove or assignment), so
/// poisoning is not a reason to stop.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
