//! The content ledger: one run's bookkeeping of which contents (by hash) are being extracted,
//! which a file in flight is about to share, and which no file holds any more but one in
//! flight may still adopt. It is the rule behind "nothing lost, nothing duplicated":
//!
//! - a content is extracted and embedded once per run, by the first file that **claims** it;
//!   every other file with the same bytes **shares** it;
//! - a sharing file **pins** the content from before it looks at the catalog until the store
//!   stage records it, so that the last holder letting go meanwhile (a file renamed, an
//!   archive member gone) does not delete what it is about to hold;
//! - a content whose last holder lets go while it is pinned or claimed becomes an **orphan**:
//!   kept, adopted by the file that wanted it, deleted at the end of the run if none did.
//!
//! One mutex guards all three sets, so each decision is atomic. The ledger never calls the
//! catalog or the store: the stages ask it, then act.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use crate::lock;

/// What a file arriving with some content is to do with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Arrival {
    /// Nobody has it: this file extracts it (it holds the claim until [`ContentLedger::unclaim`]).
    Extract,
    /// It is indexed, or another file of the run claimed it: this file shares it, pinned
    /// until the store stage records it ([`ContentLedger::unpin`]).
    Share,
}

/// What to do with a content whose last holder let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Retire {
    /// A file in flight wants it: kept as an orphan for it to adopt.
    Keep,
    /// Nobody wants it: delete it now.
    Delete,
}

#[derive(Default)]
struct Books {
    /// Contents claimed for extraction in this run.
    claimed: HashSet<String>,
    /// Contents a file in flight is about to share: hash → number of such files.
    pinned: HashMap<String, u32>,
    /// Contents no file holds but one in flight may adopt: hash → its chunk count.
    orphaned: HashMap<String, u32>,
}

/// See the module documentation.
#[derive(Default)]
pub(super) struct ContentLedger {
    books: Mutex<Books>,
}

impl ContentLedger {
    /// A file with content `hash` arrives. The content is pinned while `indexed` looks
    /// whether a catalog entry already holds it (without the ledger's lock: it may take the
    /// catalog's); then it is claimed when neither indexed, orphaned nor claimed, else it
    /// stays pinned.
    ///
    /// A file that claimed the content may record it and end its claim between that look
    /// and this claim: so a new claim looks again. The claimant records before it lets go
    /// ([`ContentLedger::unclaim`] follows the catalog's put), so the second look sees it
    /// (or, if its last holder let go meanwhile, the orphan) and the content is shared
    /// instead of extracted and embedded a second time.
    pub(super) fn arrive(&self, hash: &str, indexed: impl Fn() -> bool) -> Arrival {
        self.pin(hash);
        if indexed() {
            return Arrival::Share;
        }
        {
            let mut books = lock(&self.books);
            // An orphan is adopted, not extracted again.
            if books.orphaned.contains_key(hash) || !books.claimed.insert(hash.to_string()) {
                return Arrival::Share;
            }
        }
        if indexed() || lock(&self.books).orphaned.contains_key(hash) {
            lock(&self.books).claimed.remove(hash);
            return Arrival::Share;
        }
        // The claim protects it from here on.
        unpin_in(&mut lock(&self.books), hash);
        Arrival::Extract
    }

    /// Pin `hash`: a file in flight is about to hold it.
    pub(super) fn pin(&self, hash: &str) {
        *lock(&self.books)
            .pinned
            .entry(hash.to_string())
            .or_default() += 1;
    }

    /// The file that pinned `hash` reached the store stage (or gave up).
    pub(super) fn unpin(&self, hash: &str) {
        unpin_in(&mut lock(&self.books), hash);
    }

    /// The claim on `hash` ends: its file is recorded, or its extraction failed.
    pub(super) fn unclaim(&self, hash: &str) {
        lock(&self.books).claimed.remove(hash);
    }

    /// Whether `hash` lies orphaned, waiting for a file of the run to adopt it.
    pub(super) fn is_orphaned(&self, hash: &str) -> bool {
        lock(&self.books).orphaned.contains_key(hash)
    }

    /// A file adopts orphaned content `hash`: its chunk count, if it was one.
    pub(super) fn adopt(&self, hash: &str) -> Option<u32> {
        lock(&self.books).orphaned.remove(hash)
    }

    /// The last file holding `hash` (with `chunks` chunks) let go: keep it as an orphan when
    /// a file in flight pins or claims it, else it is to be deleted.
    pub(super) fn retire(&self, hash: &str, chunks: u32) -> Retire {
        let mut books = lock(&self.books);
        if books.pinned.contains_key(hash) || books.claimed.contains(hash) {
            books.orphaned.insert(hash.to_string(), chunks);
            Retire::Keep
        } else {
            Retire::Delete
        }
    }

    /// The orphans nobody adopted, for the end of the run (the ledger forgets them).
    pub(super) fn take_orphans(&self) -> Vec<String> {
        let mut orphans: Vec<String> = std::mem::take(&mut lock(&self.books).orphaned)
            .into_keys()
            .collect();
        orphans.sort();
        orphans
    }
}

fn unpin_in(books: &mut Books, hash: &str) {
    if let Some(n) = books.pinned.get_mut(hash) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            books.pinned.remove(hash);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_file_extracts_and_every_other_with_the_same_bytes_shares() {
        let ledger = ContentLedger::default();
        assert_eq!(ledger.arrive("h", || false), Arrival::Extract);
        assert_eq!(ledger.arrive("h", || false), Arrival::Share);
        assert_eq!(ledger.arrive("h", || false), Arrival::Share);
        // Another content is claimed on its own.
        assert_eq!(ledger.arrive("g", || false), Arrival::Extract);
        // Once the claim ends (its file recorded: now indexed), newcomers share.
        ledger.unclaim("h");
        assert_eq!(ledger.arrive("h", || true), Arrival::Share);
    }

    #[test]
    fn a_claim_that_ends_while_the_catalog_is_asked_is_not_taken_again() {
        // A extracts; B looks at the catalog before A is recorded, A is recorded and lets
        // go of its claim, then B would claim: it looks again and shares instead.
        let ledger = ContentLedger::default();
        assert_eq!(ledger.arrive("h", || false), Arrival::Extract);
        let looks = std::cell::Cell::new(0);
        let arrival = ledger.arrive("h", || {
            looks.set(looks.get() + 1);
            if looks.get() == 1 {
                // A's store stage: the catalog's put, then the end of the claim.
                ledger.unclaim("h");
                false
            } else {
                true
            }
        });
        assert_eq!(arrival, Arrival::Share);
        assert_eq!(looks.get(), 2);
        // B holds no claim but its pin: the last holder letting go keeps the content.
        assert_eq!(ledger.retire("h", 2), Retire::Keep);
        ledger.unpin("h");
        assert_eq!(ledger.adopt("h"), Some(2));
        // A content nobody recorded is still claimed after the second look.
        assert_eq!(ledger.arrive("g", || false), Arrival::Extract);
        assert_eq!(ledger.retire("g", 1), Retire::Keep, "claimed");
        // Recorded, then let go by its last holder, between the claim and the second look:
        // the orphan is shared.
        let looks = std::cell::Cell::new(0);
        let arrival = ledger.arrive("o", || {
            looks.set(looks.get() + 1);
            if looks.get() == 2 {
                assert_eq!(ledger.retire("o", 3), Retire::Keep);
            }
            false
        });
        assert_eq!(arrival, Arrival::Share);
        ledger.unpin("o");
        assert_eq!(ledger.adopt("o"), Some(3));
    }

    #[test]
    fn content_already_indexed_is_shared_and_never_claimed() {
        let ledger = ContentLedger::default();
        assert_eq!(ledger.arrive("h", || true), Arrival::Share);
        // Not claimed: had it been, the last holder letting go would keep it for the claim
        // after the sharer unpinned.
        ledger.unpin("h");
        assert_eq!(ledger.retire("h", 3), Retire::Delete);
    }

    #[test]
    fn content_is_pinned_while_the_catalog_is_asked() {
        let ledger = ContentLedger::default();
        // The last holder lets go while the arriving file looks: the content must be kept.
        let arrival = ledger.arrive("h", || {
            assert_eq!(ledger.retire("h", 4), Retire::Keep);
            true
        });
        assert_eq!(arrival, Arrival::Share);
        assert!(ledger.is_orphaned("h"));
        assert_eq!(ledger.adopt("h"), Some(4));
        assert!(!ledger.is_orphaned("h"));
        assert_eq!(ledger.adopt("h"), None, "adopted once");
    }

    #[test]
    fn a_claim_keeps_released_content_for_its_file() {
        // A file changed back to bytes it had before, in the same run: its old entry's
        // content is released while its new extraction holds the claim.
        let ledger = ContentLedger::default();
        assert_eq!(ledger.arrive("h", || false), Arrival::Extract);
        assert_eq!(ledger.retire("h", 2), Retire::Keep);
        ledger.unclaim("h");
        assert_eq!(ledger.take_orphans(), ["h"]);
        assert!(ledger.take_orphans().is_empty(), "forgotten once taken");
    }

    #[test]
    fn a_rename_keeps_the_content_for_the_new_name_and_a_delete_does_not() {
        // mv a.pdf b.pdf: b arrives (shares a's content, pinned), then a is found gone.
        let ledger = ContentLedger::default();
        assert_eq!(ledger.arrive("h", || true), Arrival::Share);
        assert_eq!(ledger.retire("h", 7), Retire::Keep);
        // The store stage records b: it unpins and adopts the chunks.
        ledger.unpin("h");
        assert_eq!(ledger.adopt("h"), Some(7));
        assert!(ledger.take_orphans().is_empty());
        // rm c.pdf: nobody wants its content.
        assert_eq!(ledger.retire("c", 1), Retire::Delete);
        assert!(!ledger.is_orphaned("c"));
    }

    #[test]
    fn an_orphan_is_shared_not_extracted_again() {
        let ledger = ContentLedger::default();
        ledger.pin("h");
        assert_eq!(ledger.retire("h", 3), Retire::Keep);
        ledger.unpin("h");
        // Its old holder is gone from the catalog, yet the points are there to adopt.
        assert_eq!(ledger.arrive("h", || false), Arrival::Share);
        assert_eq!(ledger.adopt("h"), Some(3));
    }

    #[test]
    fn pins_count_files_and_unpinning_below_zero_is_harmless() {
        let ledger = ContentLedger::default();
        ledger.pin("h");
        ledger.pin("h");
        ledger.unpin("h");
        assert_eq!(ledger.retire("h", 1), Retire::Keep, "one pin left");
        ledger.unpin("h");
        ledger.unpin("h");
        ledger.unpin("never-pinned");
        assert_eq!(ledger.adopt("h"), Some(1));
        assert_eq!(ledger.retire("h", 1), Retire::Delete, "no pin left");
    }

    #[test]
    fn an_orphan_nobody_adopts_is_left_for_the_end_of_the_run() {
        // A shadowed member: its file pinned the content, then turned out hidden by an
        // earlier member of the same name and gave up without adopting.
        let ledger = ContentLedger::default();
        ledger.pin("h");
        assert_eq!(ledger.retire("h", 5), Retire::Keep);
        ledger.unpin("h");
        assert!(ledger.is_orphaned("h"));
        assert_eq!(ledger.take_orphans(), ["h"]);
    }

    #[test]
    fn many_threads_claim_each_content_exactly_once() {
        let ledger = ContentLedger::default();
        let extracted = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for i in 0..200 {
                        if ledger.arrive(&format!("h{i}"), || false) == Arrival::Extract {
                            extracted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        } else {
                            ledger.unpin(&format!("h{i}"));
                        }
                    }
                });
            }
        });
        assert_eq!(extracted.into_inner(), 200);
        // Every sharer unpinned: nothing is wanted but the claims.
        for i in 0..200 {
            ledger.unclaim(&format!("h{i}"));
            assert_eq!(ledger.retire(&format!("h{i}"), 1), Retire::Delete);
        }
    }
}
