//! How far a run has come, for a person watching it: counters the stages add to as they go
//! (files and bytes found by the walk and read by extraction, chunks known and embedded, the
//! files being embedded with their own counts), read at any moment by a caller such as the
//! CLI's progress line (`ingest::Ingestor::progress`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

/// A run's progress, shared by its stages. One per `ingest::Ingestor`, started again by
/// each run (with several scopes' runs at once, it adds theirs up).
#[derive(Debug)]
pub struct RunProgress {
    files_found: AtomicU64,
    bytes_found: AtomicU64,
    files_read: AtomicU64,
    bytes_read: AtomicU64,
    chunks_known: AtomicU64,
    chunks_embedded: AtomicU64,
    started: Mutex<Instant>,
    /// Files whose chunks wait for or are in the model: (done, total) chunks. Bounded by the
    /// embed stage's waiting files.
    embedding: Mutex<BTreeMap<String, (u64, u64)>>,
}

impl Default for RunProgress {
    fn default() -> Self {
        RunProgress {
            files_found: AtomicU64::new(0),
            bytes_found: AtomicU64::new(0),
            files_read: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
            chunks_known: AtomicU64::new(0),
            chunks_embedded: AtomicU64::new(0),
            started: Mutex::new(Instant::now()),
            embedding: Mutex::new(BTreeMap::new()),
        }
    }
}

/// What [`RunProgress::snapshot`] reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProgressSnapshot {
    /// Files (and archive members) the walk handed to extraction.
    pub files_found: u64,
    /// Their bytes.
    pub bytes_found: u64,
    /// Of those, the files extraction has read.
    pub files_read: u64,
    /// Their bytes.
    pub bytes_read: u64,
    /// Chunks cut from the files read (what embedding has to do so far).
    pub chunks_known: u64,
    /// Chunks embedded.
    pub chunks_embedded: u64,
    /// Time since the run started.
    pub elapsed: Duration,
    /// The largest file being embedded: its locator, chunks embedded and its chunks.
    pub embedding: Option<(String, u64, u64)>,
}

impl ProgressSnapshot {
    /// Chunks embedded per second so far.
    pub fn chunks_per_second(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.chunks_embedded as f64 / secs
        } else {
            0.0
        }
    }

    /// Time left, estimated: the chunks still to embed (those of files not read yet guessed
    /// from the bytes per chunk of the files read) at the rate so far. `None` until something
    /// was embedded.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.chunks_per_second();
        if rate <= 0.0 || self.bytes_read == 0 {
            return None;
        }
        let unread = self.bytes_found.saturating_sub(self.bytes_read) as f64;
        let guessed = self.chunks_known as f64 / self.bytes_read as f64 * unread;
        let left = (self.chunks_known as f64 + guessed - self.chunks_embedded as f64).max(0.0);
        Some(Duration::from_secs_f64(left / rate))
    }
}

impl RunProgress {
    /// The counters now.
    pub fn snapshot(&self) -> ProgressSnapshot {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let embedding = lock(&self.embedding)
            .iter()
            .max_by_key(|(_, (_, total))| *total)
            .map(|(l, (done, total))| (l.clone(), *done, *total));
        ProgressSnapshot {
            files_found: get(&self.files_found),
            bytes_found: get(&self.bytes_found),
            files_read: get(&self.files_read),
            bytes_read: get(&self.bytes_read),
            chunks_known: get(&self.chunks_known),
            chunks_embedded: get(&self.chunks_embedded),
            elapsed: lock(&self.started).elapsed(),
            embedding,
        }
    }

    /// A run starts: everything from zero.
    pub fn start(&self) {
        for a in [
            &self.files_found,
            &self.bytes_found,
            &self.files_read,
            &self.bytes_read,
            &self.chunks_known,
            &self.chunks_embedded,
        ] {
            a.store(0, Ordering::Relaxed);
        }
        *lock(&self.started) = Instant::now();
        lock(&self.embedding).clear();
    }

    /// The walk handed a file of `bytes` to extraction.
    pub fn found(&self, bytes: u64) {
        self.files_found.fetch_add(1, Ordering::Relaxed);
        self.bytes_found.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Extraction read a file of `bytes` (and cut `chunks` from it).
    pub fn read(&self, bytes: u64, chunks: u64) {
        self.files_read.fetch_add(1, Ordering::Relaxed);
        self.bytes_read.fetch_add(bytes, Ordering::Relaxed);
        self.chunks_known.fetch_add(chunks, Ordering::Relaxed);
    }

    /// The embed stage took `locator`'s `chunks`.
    pub fn waiting(&self, locator: &str, chunks: u64) {
        lock(&self.embedding).insert(locator.to_string(), (0, chunks));
    }

    /// `n` more chunks of `locator` are embedded (the file leaves the list with its last).
    pub fn embedded(&self, locator: &str, n: u64) {
        self.chunks_embedded.fetch_add(n, Ordering::Relaxed);
        let mut files = lock(&self.embedding);
        if let Some((done, total)) = files.get_mut(locator) {
            *done = done.saturating_add(n);
            if *done >= *total {
                files.remove(locator);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_counts_the_chunks_of_files_not_read_yet() {
        let p = RunProgress::default();
        p.start();
        p.found(1000);
        p.found(3000);
        p.read(1000, 10);
        p.waiting("/d/a.pdf", 10);
        p.embedded("/d/a.pdf", 4);
        let s = p.snapshot();
        assert_eq!((s.files_found, s.bytes_found, s.files_read), (2, 4000, 1));
        assert_eq!(s.embedding, Some(("/d/a.pdf".to_string(), 4, 10)));
        let snapshot = ProgressSnapshot {
            elapsed: Duration::from_secs(2),
            ..s
        };
        // 4 chunks in 2 s; 6 left of a.pdf and about 30 of the unread 3000 bytes.
        assert_eq!(snapshot.eta(), Some(Duration::from_secs(18)));
        p.embedded("/d/a.pdf", 6);
        assert_eq!(p.snapshot().embedding, None, "done: off the list");
        p.start();
        assert_eq!(p.snapshot().files_found, 0);
    }
}
