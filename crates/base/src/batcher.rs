//! The embed stage's bookkeeping: chunks of many files wait in per-file queues and leave in
//! batches of a fixed size, taken round-robin from every file with chunks waiting, so a
//! 10 000-chunk file takes one share of each batch and the small files behind it still go
//! through at once. A file is complete once none of its chunks is still queued; only then may
//! the store stage record it (its last batch is upserted before its `FileStored` arrives).

use std::collections::VecDeque;

/// Items of many files, leaving in batches of `batch_size` drawn round-robin from the files
/// that have items queued, with the files they complete. `T` is one queued item (a chunk),
/// `F` what is known of its file.
#[derive(Debug)]
pub struct Batcher<T, F> {
    batch_size: usize,
    /// Files with items still queued (or not yet reported complete), in arrival order.
    files: VecDeque<Waiting<T, F>>,
    /// Items queued over all files.
    queued: usize,
    /// Where the next round-robin pass starts, so no file is always served first.
    next: usize,
}

#[derive(Debug)]
struct Waiting<T, F> {
    file: F,
    items: VecDeque<T>,
    total: usize,
}

impl<T, F> Batcher<T, F> {
    /// A batcher handing out batches of `batch_size` items (at least one).
    pub fn new(batch_size: usize) -> Self {
        Batcher {
            batch_size: batch_size.max(1),
            files: VecDeque::new(),
            queued: 0,
            next: 0,
        }
    }

    /// Queue a file's items (none is fine: the file completes at the next `completed`).
    pub fn push(&mut self, file: F, items: impl IntoIterator<Item = T>) {
        let items: VecDeque<T> = items.into_iter().collect();
        self.queued += items.len();
        self.files.push_back(Waiting {
            file,
            total: items.len(),
            items,
        });
    }

    /// Whether a full batch is queued.
    pub fn has_batch(&self) -> bool {
        self.queued >= self.batch_size
    }

    /// Whether nothing is queued and no file waits to be reported.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Files waiting: with items queued, or complete but not yet reported.
    pub fn files_waiting(&self) -> usize {
        self.files.len()
    }

    /// The next batch: a full one, or with `all` (the input has ended) whatever is left.
    /// Items are taken one per file in turn; each file's items leave in their order.
    pub fn next_batch(&mut self, all: bool) -> Option<Vec<T>> {
        if !(self.has_batch() || (all && self.queued > 0)) {
            return None;
        }
        let take = self.queued.min(self.batch_size);
        let mut batch = Vec::with_capacity(take);
        let n = self.files.len();
        let mut idle = 0;
        let mut i = self.next % n.max(1);
        while batch.len() < take && idle < n {
            match self.files.get_mut(i).and_then(|w| w.items.pop_front()) {
                Some(item) => {
                    batch.push(item);
                    idle = 0;
                }
                None => idle += 1,
            }
            i = (i + 1) % n;
        }
        self.next = i;
        self.queued -= batch.len();
        Some(batch)
    }

    /// Files none of whose items is queued any more, in arrival order, with their item
    /// counts (every batch handed out before this call is taken as sent).
    pub fn completed(&mut self) -> Vec<(F, usize)> {
        let mut done = Vec::new();
        let mut still = VecDeque::with_capacity(self.files.len());
        for w in self.files.drain(..) {
            if w.items.is_empty() {
                done.push((w.file, w.total));
            } else {
                still.push_back(w);
            }
        }
        self.files = still;
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drain every ready batch (as the embed stage does), then the completed files: the
    /// events in the order the store stage would get them.
    fn flush<F: std::fmt::Display>(b: &mut Batcher<String, F>, all: bool) -> Vec<String> {
        let mut events = Vec::new();
        while let Some(batch) = b.next_batch(all) {
            events.push(format!("points {}", batch.join(",")));
        }
        for (file, n) in b.completed() {
            events.push(format!("stored {file} ({n})"));
        }
        events
    }

    fn items(file: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{file}{i}")).collect()
    }

    #[test]
    fn a_file_spanning_batches_is_stored_after_its_last_batch() {
        let mut b = Batcher::new(2);
        b.push("a", items("a", 3));
        // a0,a1 leave; a2 is still queued, so a is not complete.
        assert_eq!(flush(&mut b, false), ["points a0,a1"]);
        b.push("b", items("b", 1));
        assert_eq!(
            flush(&mut b, false),
            ["points a2,b0", "stored a (3)", "stored b (1)"]
        );
        assert!(flush(&mut b, true).is_empty());
        assert!(b.is_empty());
    }

    #[test]
    fn batches_take_one_item_per_file_in_turn() {
        let mut b = Batcher::new(4);
        b.push("a", items("a", 1));
        b.push("b", items("b", 2));
        assert!(flush(&mut b, false).is_empty(), "no full batch yet");
        b.push("c", items("c", 3));
        // One from each file in turn; c1 c2 stay, so a and b are complete, c is not.
        assert_eq!(
            flush(&mut b, false),
            ["points a0,b0,c0,b1", "stored a (1)", "stored b (2)"]
        );
        assert_eq!(flush(&mut b, true), ["points c1,c2", "stored c (3)"]);
    }

    #[test]
    fn files_without_items_complete_at_once() {
        let mut b = Batcher::new(2);
        b.push("empty", Vec::new());
        assert_eq!(flush(&mut b, false), ["stored empty (0)"]);
        // Behind a file with queued items it does not wait.
        b.push("a", items("a", 1));
        b.push("none", Vec::new());
        assert_eq!(flush(&mut b, false), ["stored none (0)"]);
        b.push("b", items("b", 1));
        assert_eq!(
            flush(&mut b, false),
            ["points a0,b0", "stored a (1)", "stored b (1)"]
        );
    }

    /// What fairness means for the embed stage: it takes one batch, then whatever files
    /// arrived meanwhile; small files arriving behind a huge one are complete within a batch
    /// or two instead of after all of it.
    #[test]
    fn a_huge_file_does_not_hold_back_the_small_files_behind_it() {
        let mut b = Batcher::new(4);
        b.push("big", items("big", 100));
        assert_eq!(
            b.next_batch(false).unwrap(),
            ["big0", "big1", "big2", "big3"]
        );
        b.push("s", items("s", 2));
        b.push("t", items("t", 1));
        let mut stored = Vec::new();
        let mut batches = 0;
        while stored.len() < 2 {
            b.next_batch(false).unwrap();
            batches += 1;
            stored.extend(b.completed().into_iter().map(|(f, _)| f));
        }
        assert_eq!(stored, ["t", "s"]);
        assert_eq!(batches, 2, "both small files through in two batches");
        assert_eq!(b.files_waiting(), 1, "big is still queued");
        let mut rest = 0;
        while let Some(batch) = b.next_batch(true) {
            rest += batch.len();
        }
        // Two batches of 4 held 3 small items, so 5 of big's.
        assert_eq!(rest, 100 - 4 - 5);
        assert_eq!(b.completed(), [("big", 100)]);
    }

    #[test]
    fn every_item_leaves_once_and_every_file_completes_once_after_its_items() {
        // Many shapes: file sizes 0..=5 in a rolling pattern, batch sizes 1..=7.
        for batch in 1..=7 {
            let mut b = Batcher::new(batch);
            let mut events = Vec::new();
            let sizes: Vec<usize> = (0..20).map(|i| (i * 7 + 3) % 6).collect();
            let names: Vec<String> = (0..20).map(|i| format!("f{i}-")).collect();
            for (name, n) in names.iter().zip(&sizes) {
                b.push(name.clone(), items(name, *n));
                events.extend(flush(&mut b, false));
            }
            events.extend(flush(&mut b, true));
            assert!(b.is_empty());
            let left: Vec<&str> = events
                .iter()
                .filter_map(|e| e.strip_prefix("points "))
                .flat_map(|p| p.split(','))
                .collect();
            for (name, n) in names.iter().zip(&sizes) {
                // Each file's items leave once each, in their order.
                let mine: Vec<&str> = left
                    .iter()
                    .copied()
                    .filter(|i| i.starts_with(name.as_str()))
                    .collect();
                assert_eq!(mine, items(name, *n), "batch {batch}: {name}");
                let stored: Vec<&String> = events
                    .iter()
                    .filter(|e| e.starts_with(&format!("stored {name} ")))
                    .collect();
                assert_eq!(stored, [&format!("stored {name} ({n})")], "batch {batch}");
                // Stored only after the batch with its last item.
                let stored_at = events.iter().position(|e| e == stored[0]).unwrap();
                if let Some(last) = n.checked_sub(1) {
                    let item = format!("{name}{last}");
                    let batch_at = events
                        .iter()
                        .position(|e| {
                            e.strip_prefix("points ")
                                .is_some_and(|p| p.split(',').any(|i| i == item))
                        })
                        .unwrap();
                    assert!(batch_at < stored_at, "batch {batch}: {name}");
                }
            }
            assert_eq!(left.len(), sizes.iter().sum::<usize>());
        }
    }
}
