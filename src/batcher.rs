//! The embed stage's bookkeeping: chunks of many files wait in one queue and leave it in
//! batches of a fixed size, so a batch may hold the end of one file and the start of the next.
//! A file is complete once none of its chunks is still queued; only then may the store stage
//! record it (its last batch is upserted before its `FileStored` arrives).

use std::collections::VecDeque;

/// Items of many files, leaving in batches of `batch_size`, with the files they complete.
/// `T` is one queued item (a chunk), `F` what is known of its file.
#[derive(Debug)]
pub(crate) struct Batcher<T, F> {
    batch_size: usize,
    pending: VecDeque<T>,
    /// Files with items still in `pending`, in arrival order, with their item counts.
    waiting: VecDeque<(F, usize)>,
}

impl<T, F> Batcher<T, F> {
    /// A batcher handing out batches of `batch_size` items (at least one).
    pub fn new(batch_size: usize) -> Self {
        Batcher {
            batch_size: batch_size.max(1),
            pending: VecDeque::new(),
            waiting: VecDeque::new(),
        }
    }

    /// Queue a file's items (none is fine: the file completes once the files before it do).
    pub fn push(&mut self, file: F, items: impl IntoIterator<Item = T>) {
        let before = self.pending.len();
        self.pending.extend(items);
        self.waiting.push_back((file, self.pending.len() - before));
    }

    /// The next batch: a full one, or with `all` (the input has ended) whatever is left.
    pub fn next_batch(&mut self, all: bool) -> Option<Vec<T>> {
        let ready = self.pending.len() >= self.batch_size || (all && !self.pending.is_empty());
        ready.then(|| {
            let take = self.pending.len().min(self.batch_size);
            self.pending.drain(..take).collect()
        })
    }

    /// Files none of whose items is queued any more, in arrival order, with their item
    /// counts. Files that came after one still waiting wait too, so files complete in the
    /// order they arrived.
    pub fn completed(&mut self) -> Vec<(F, usize)> {
        // Queued items belong to the last files to arrive: count them off from the back.
        let mut queued = self.pending.len();
        let mut still = 0;
        for (_, n) in self.waiting.iter().rev() {
            if queued == 0 {
                break;
            }
            queued = queued.saturating_sub(*n);
            still += 1;
        }
        let done = self.waiting.len() - still;
        self.waiting.drain(..done).collect()
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
    }

    #[test]
    fn files_wait_while_any_of_their_items_is_queued() {
        let mut b = Batcher::new(4);
        b.push("a", items("a", 1));
        b.push("b", items("b", 2));
        assert!(flush(&mut b, false).is_empty(), "no full batch yet");
        b.push("c", items("c", 3));
        // a0 b0 b1 c0 leave; c1 c2 stay, so a and b are complete, c is not.
        assert_eq!(
            flush(&mut b, false),
            ["points a0,b0,b1,c0", "stored a (1)", "stored b (2)"]
        );
        assert_eq!(flush(&mut b, true), ["points c1,c2", "stored c (3)"]);
    }

    #[test]
    fn files_without_items_complete_in_arrival_order() {
        let mut b = Batcher::new(2);
        // Alone, an empty file completes at once.
        b.push("empty", Vec::new());
        assert_eq!(flush(&mut b, false), ["stored empty (0)"]);
        // Behind a file with queued items, it waits for that file.
        b.push("a", items("a", 1));
        b.push("none", Vec::new());
        assert!(flush(&mut b, false).is_empty());
        b.push("b", items("b", 1));
        assert_eq!(
            flush(&mut b, false),
            [
                "points a0,b0",
                "stored a (1)",
                "stored none (0)",
                "stored b (1)"
            ]
        );
    }

    #[test]
    fn the_final_flush_empties_the_queue_in_batches() {
        let mut b = Batcher::new(3);
        b.push("a", items("a", 2));
        b.push("b", items("b", 5));
        assert_eq!(
            flush(&mut b, false),
            ["points a0,a1,b0", "points b1,b2,b3", "stored a (2)"]
        );
        b.push("c", Vec::new());
        assert!(flush(&mut b, false).is_empty(), "c waits behind b4");
        b.push("d", items("d", 3));
        assert_eq!(
            flush(&mut b, false),
            ["points b4,d0,d1", "stored b (5)", "stored c (0)"]
        );
        // The input ends: the last, short batch.
        assert_eq!(flush(&mut b, true), ["points d2", "stored d (3)"]);
        assert!(b.next_batch(true).is_none());
        assert!(b.completed().is_empty());
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
            let left: Vec<&str> = events
                .iter()
                .filter_map(|e| e.strip_prefix("points "))
                .flat_map(|p| p.split(','))
                .collect();
            let all: Vec<String> = names
                .iter()
                .zip(&sizes)
                .flat_map(|(f, n)| items(f, *n))
                .collect();
            assert_eq!(left, all, "batch {batch}: every item once, in order");
            let stored: Vec<&String> = events.iter().filter(|e| e.starts_with("stored")).collect();
            assert_eq!(stored.len(), names.len(), "batch {batch}");
            for ((name, n), s) in names.iter().zip(&sizes).zip(&stored) {
                assert_eq!(**s, format!("stored {name} ({n})"), "batch {batch}");
            }
            // Each file is stored only after the batch with its last item.
            for (name, n) in names.iter().zip(&sizes) {
                let stored_at = events
                    .iter()
                    .position(|e| *e == format!("stored {name} ({n})"))
                    .unwrap();
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
        }
    }
}
