//! [`LeafHandoff`]: how many leaves the walk stage handed to extraction, and how many of them
//! the content ledger has looked at (pinned or claimed their content, or they ended first).
//!
//! The walk stage sends a removal (a file that is gone) only after every leaf handed before it
//! was looked at: when the file was renamed, its new name has then pinned the content, so the
//! store stage keeps the content for it instead of deleting it and embedding it again (the
//! "rename vs delete" race). [`Looked`] is the extraction side's once-only receipt.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

/// See the module documentation.
#[derive(Debug, Default)]
pub(super) struct LeafHandoff {
    handed: AtomicU64,
    looked: Mutex<u64>,
    looked_cv: Condvar,
}

/// How often a waiter looks whether the run halted.
const HALT_POLL: Duration = Duration::from_millis(50);

impl LeafHandoff {
    /// A leaf goes to extraction.
    pub(super) fn handed(&self) {
        self.handed.fetch_add(1, Ordering::SeqCst);
    }

    /// The ledger has looked at a leaf's content, or the leaf ended before that.
    pub(super) fn looked(&self) {
        *self.looked.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.looked_cv.notify_all();
    }

    /// Wait until every leaf handed so far has been looked at (leaves handed meanwhile are
    /// not waited for). Gives up once `halted` says so: a halted run sends no removal.
    pub(super) fn wait_all_looked(&self, halted: impl Fn() -> bool) {
        let handed = self.handed.load(Ordering::SeqCst);
        let mut looked = self.looked.lock().unwrap_or_else(PoisonError::into_inner);
        while *looked < handed && !halted() {
            looked = match self.looked_cv.wait_timeout(looked, HALT_POLL) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// Tells the handoff, once, that a leaf was looked at: by [`Looked::now`], else when dropped
/// (a leaf that ends early, by a halt or a panic, still counts, so no waiter waits forever).
pub(super) struct Looked<'h> {
    handoff: &'h LeafHandoff,
    told: bool,
}

impl<'h> Looked<'h> {
    pub(super) fn new(handoff: &'h LeafHandoff) -> Self {
        Looked {
            handoff,
            told: false,
        }
    }

    pub(super) fn now(&mut self) {
        if !std::mem::replace(&mut self.told, true) {
            self.handoff.looked();
        }
    }
}

impl Drop for Looked<'_> {
    fn drop(&mut self) {
        self.now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    fn looked_count(h: &LeafHandoff) -> u64 {
        *h.looked.lock().unwrap()
    }

    #[test]
    fn nothing_handed_or_all_looked_does_not_wait() {
        let h = LeafHandoff::default();
        h.wait_all_looked(|| false);
        h.handed();
        h.looked();
        h.wait_all_looked(|| false);
    }

    #[test]
    fn a_removal_waits_for_the_leaves_handed_before_it_and_only_those() {
        let h = Arc::new(LeafHandoff::default());
        h.handed();
        h.handed();
        h.looked();
        let (waiting_tx, waiting) = std::sync::mpsc::channel();
        let waiter = {
            let h = Arc::clone(&h);
            let first = AtomicBool::new(true);
            std::thread::spawn(move || {
                h.wait_all_looked(|| {
                    if first.swap(false, Ordering::SeqCst) {
                        // A leaf handed while the removal waits: not waited for.
                        h.handed();
                        let _ = waiting_tx.send(());
                    }
                    false
                })
            })
        };
        waiting.recv().unwrap();
        assert!(
            !waiter.is_finished(),
            "one leaf handed before is not looked at"
        );
        h.looked();
        waiter.join().unwrap();
        assert_eq!(looked_count(&h), 2, "the third leaf was never looked at");
    }

    #[test]
    fn a_halt_releases_the_waiter() {
        let h = Arc::new(LeafHandoff::default());
        let halted = Arc::new(AtomicBool::new(false));
        h.handed();
        let waiter = {
            let (h, halted) = (Arc::clone(&h), Arc::clone(&halted));
            std::thread::spawn(move || h.wait_all_looked(|| halted.load(Ordering::SeqCst)))
        };
        std::thread::sleep(Duration::from_millis(120));
        assert!(!waiter.is_finished());
        halted.store(true, Ordering::SeqCst);
        waiter.join().unwrap();
        assert_eq!(looked_count(&h), 0, "released by the halt, not by a look");
    }

    #[test]
    fn a_receipt_counts_once_whether_told_or_dropped() {
        let h = LeafHandoff::default();
        {
            let mut told = Looked::new(&h);
            told.now();
            told.now();
        }
        assert_eq!(looked_count(&h), 1, "told twice and dropped: one look");
        drop(Looked::new(&h));
        assert_eq!(looked_count(&h), 2, "dropped untold: one look");
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _receipt = Looked::new(&h);
            std::panic::resume_unwind(Box::new("a leaf's work panicked"));
        }));
        assert!(unwound.is_err());
        assert_eq!(looked_count(&h), 3, "a panicking leaf still counts");
    }
}
