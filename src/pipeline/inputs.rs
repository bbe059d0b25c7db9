//! [`Input`]: what a run is given; [`InputTracker`]: which input each file on its way to a ledger line came from, so that an
//! input is known to be complete once its walk ended and every file of it has its line. A
//! complete input has its archives recorded and is reported to the caller (an upload's
//! `done`), so completing one early would record an archive before its members are stored,
//! and never completing one would keep an upload waiting forever.
//!
//! Plain bookkeeping without locks or I/O: the run keeps it under one mutex, and sends the
//! completion after the line that completed it while still holding that mutex.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

/// What to ingest.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file or folder on disk.
    Path(PathBuf),
    /// A remote source (S3, SFTP, FTP, WebDAV), synced like a folder: unchanged objects
    /// (same size and modification time) are not downloaded, what it no longer holds leaves
    /// the index.
    Remote(Box<crate::sources::Source>),
    /// One member of an archive on disk, read alone: what the agent's
    /// `extract_container_item` asks for. The archive is walked under the configured limits,
    /// except the member count (a member past `max_files` can be read this way); only
    /// `member` (a full locator such as `/d/a.zip!/docs/b.pdf`) and what it contains are
    /// extracted and catalogued, nothing is removed.
    Member {
        /// Where the archive's bytes are: the file ingested from this machine, or the copy
        /// the upload queue kept. The archive is known by `member`'s first segment.
        archive: PathBuf,
        /// The member's full locator.
        member: String,
    },
    /// Bytes from elsewhere (an upload), named by `name`.
    Bytes {
        /// The name it is known by (its locator's first segment).
        name: String,
        /// Its content.
        bytes: Vec<u8>,
    },
    /// Text from elsewhere (a workflow's tool result, entity or summary), named by `name`:
    /// indexed as plain text, or as JSON when `json`, never unpacked as a container nor
    /// typed by its bytes (a tool result holding an archive's bytes is text a tool returned,
    /// not an archive to unpack into the workflow).
    Text {
        /// The name it is known by (its locator's first segment).
        name: String,
        /// Its content.
        text: String,
        /// Whether `text` is one JSON value.
        json: bool,
    },
    /// An upload spooled to a file, known as `name` (its locator's first segment): what
    /// [`crate::Uploads`] queues. Never answered as unchanged from the catalog (an upload has
    /// no modification time); identical bytes are still found by hash and not embedded again.
    Upload {
        /// The name it is known by.
        name: String,
        /// The spooled bytes.
        path: PathBuf,
        /// Limits for this upload's container tree instead of the configured ones.
        limits: Option<crate::Limits>,
        /// User tags (`key=value`, sorted) for the file and every member of it.
        tags: Vec<String>,
    },
    /// Remove a file (an archive with all its members) from the catalog and the index.
    Remove {
        /// Its locator, as search hits and reports name it (without `#fragment`).
        locator: String,
    },
}

/// Inputs are numbered from 0 in the order they came.
pub(super) type InputNo = usize;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct InputTracker {
    /// The input the walk stage is on.
    current: InputNo,
    /// Locator of a file sent on → the inputs waiting for its line, oldest first (the same
    /// locator may be given twice, as two inputs).
    outstanding: HashMap<String, VecDeque<InputNo>>,
    /// Input → files sent on without a line yet, for every input started and not complete.
    pending: HashMap<InputNo, usize>,
    /// Inputs whose walk ended (without a stop in the middle) and that are not complete.
    walked: HashSet<InputNo>,
}

impl InputTracker {
    /// The walk stage starts `input`.
    pub(super) fn started(&mut self, input: InputNo) {
        self.current = input;
        self.pending.entry(input).or_insert(0);
    }

    /// The input the walk stage is on.
    pub(super) fn current(&self) -> InputNo {
        self.current
    }

    /// A file of the current input goes on to a later stage: its input waits for its line.
    pub(super) fn expect(&mut self, locator: &str) {
        let input = self.current;
        self.outstanding
            .entry(locator.to_string())
            .or_default()
            .push_back(input);
        *self.pending.entry(input).or_default() += 1;
    }

    /// The ledger line of `locator` goes out: the input it completes, if any. A line nobody
    /// waits for (a file that was not sent on) completes nothing.
    pub(super) fn line(&mut self, locator: &str) -> Option<InputNo> {
        let waiting = self.outstanding.get_mut(locator)?;
        let input = waiting.pop_front()?;
        if waiting.is_empty() {
            self.outstanding.remove(locator);
        }
        let left = self.pending.get_mut(&input)?;
        *left = left.saturating_sub(1);
        self.complete_if_done(input)
    }

    /// The walk stage is through `input`: the input, when that completes it (no file of it
    /// still on its way).
    pub(super) fn walked(&mut self, input: InputNo) -> Option<InputNo> {
        if !self.pending.contains_key(&input) {
            return None; // not started, or complete already
        }
        self.walked.insert(input);
        self.complete_if_done(input)
    }

    /// `input` once it is walked with no file on its way; it is forgotten then, so each input
    /// completes once and a run fed for days (an upload queue) keeps nothing of finished ones.
    fn complete_if_done(&mut self, input: InputNo) -> Option<InputNo> {
        let done = self.pending.get(&input) == Some(&0) && self.walked.contains(&input);
        if done {
            self.pending.remove(&input);
            self.walked.remove(&input);
        }
        done.then_some(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_completes_after_its_walk_and_its_last_line_whichever_comes_last() {
        let mut t = InputTracker::default();
        t.started(0);
        t.expect("a.txt");
        t.expect("b.txt");
        assert_eq!(t.line("a.txt"), None, "not walked yet");
        assert_eq!(t.walked(0), None, "b.txt is still on its way");
        assert_eq!(t.line("b.txt"), Some(0), "the last line completes it");
        // Lines before the end of the walk: the walk's end completes it.
        t.started(1);
        t.expect("c.txt");
        assert_eq!(t.line("c.txt"), None);
        assert_eq!(t.walked(1), Some(1));
    }

    #[test]
    fn an_input_without_files_completes_when_walked_and_only_once() {
        let mut t = InputTracker::default();
        t.started(0);
        assert_eq!(t.walked(0), Some(0));
        assert_eq!(t.walked(0), None, "completes once");
        assert_eq!(
            t.line("stray.txt"),
            None,
            "a line nobody waits for completes nothing"
        );
    }

    #[test]
    fn inputs_are_counted_apart_while_their_lines_interleave() {
        let mut t = InputTracker::default();
        t.started(0);
        t.expect("one/a");
        t.expect("one/b");
        assert_eq!(t.walked(0), None);
        t.started(1);
        assert_eq!(t.current(), 1);
        t.expect("two/a");
        assert_eq!(t.line("one/a"), None);
        assert_eq!(t.walked(1), None);
        assert_eq!(t.line("two/a"), Some(1), "input 1 is done before input 0");
        assert_eq!(t.line("one/b"), Some(0));
    }

    #[test]
    fn the_same_locator_in_two_inputs_answers_the_oldest_first() {
        let mut t = InputTracker::default();
        t.started(0);
        t.expect("same.txt");
        assert_eq!(t.walked(0), None);
        t.started(1);
        t.expect("same.txt");
        assert_eq!(t.walked(1), None);
        assert_eq!(t.line("same.txt"), Some(0));
        assert_eq!(t.line("same.txt"), Some(1));
        assert_eq!(t.line("same.txt"), None, "no third file was sent on");
    }

    #[test]
    fn an_input_stopped_in_the_middle_never_completes() {
        let mut t = InputTracker::default();
        t.started(0);
        t.expect("a.txt");
        // The run stops: the walk of input 0 never ends.
        assert_eq!(t.line("a.txt"), None);
        assert_eq!(t.pending.get(&0), Some(&0), "still waiting for its walk");
    }

    #[test]
    fn complete_inputs_are_forgotten() {
        let mut t = InputTracker::default();
        for input in 0..1000 {
            t.started(input);
            t.expect(&format!("upload-{input}.txt"));
            assert_eq!(t.walked(input), None);
            assert_eq!(t.line(&format!("upload-{input}.txt")), Some(input));
        }
        assert!(t.pending.is_empty() && t.walked.is_empty() && t.outstanding.is_empty());
    }
}
