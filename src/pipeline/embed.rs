//! Stage 3: embedding. Chunks of several files are batched together (the model is fastest on
//! full batches); a file is complete once the batch holding its last chunk is embedded, and
//! only then does the store stage record it.
//!
//! Fairness: the stage embeds one batch at a time and takes the files that arrived meanwhile
//! before the next, and batches are drawn round-robin from every waiting file
//! ([`crate::batcher`]), so the small files behind a 10 000-chunk file are indexed within a
//! batch or two instead of after it. Length: each batch holds [`LENGTH_BUCKETS`] model runs,
//! which the embedder fills with chunks of similar length (a run is padded to its longest).

use super::memo::{Plan, Source, VectorMemo};
use super::resume::VectorCheckpoints;
use super::run::Run;
use super::{FileMeta, FileStage, IndexItem, StoreItem};
use crate::batcher::Batcher;
use crate::index::objects::ContentRecord;
use crate::index::StoredChunk;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// Model runs per embedding call: the embedder sorts a call's chunks by length, so the more
/// runs a call holds, the less padding (4 × 16 chunks keeps a file's wait short).
pub(crate) const LENGTH_BUCKETS: usize = 4;

/// How long chunks short of a full batch wait for more files before they are embedded as
/// they are (the model would idle otherwise).
const PARTIAL_WAIT: Duration = Duration::from_millis(100);

/// A file whose chunks are in the batcher, with its content index.
type Waiting = (FileMeta, Box<ContentRecord>);

/// What the embed stage did in a run.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub(super) struct EmbedTally {
    /// Chunks embedded.
    pub(super) chunks: u64,
    /// Model tokens of those chunks.
    pub(super) tokens: u64,
    /// Time in the models.
    pub(super) busy: Duration,
    /// Chunks in other languages also embedded by the multilingual model.
    pub(super) multilingual: u64,
    /// Chunks whose text was embedded before in the run: their vector taken again
    /// ([`super::memo`]).
    pub(super) reused: u64,
}

/// Stage 3: takes [`IndexItem`]s, embeds the chunks of new content in batches across files,
/// and hands [`StoreItem`]s on: the batches, then each file once all its chunks are in a batch
/// sent before, and every other item as it came.
pub(super) struct EmbedStage<'r> {
    run: &'r Run<'r>,
    /// Chunks per embedding call: [`Config::embed_batch`](crate::Config) model runs of
    /// [`LENGTH_BUCKETS`] each.
    batch_size: usize,
    /// Files taken while a full batch waits: beyond this the stage embeds before taking
    /// more (the chunks in the batcher are outside the in-flight byte budget).
    max_waiting: usize,
    tally: EmbedTally,
    /// The vectors of files not yet complete, checkpointed after every batch.
    checkpoints: VectorCheckpoints,
    /// The vectors of the texts embedded so far in the run, by text.
    memo: VectorMemo,
}

impl<'r> EmbedStage<'r> {
    pub(super) fn new(run: &'r Run<'r>) -> Self {
        let config = run.ing.config();
        EmbedStage {
            run,
            batch_size: config.embed_batch.max(1) * LENGTH_BUCKETS,
            max_waiting: config.channel_capacity.max(1),
            tally: EmbedTally::default(),
            checkpoints: VectorCheckpoints::open(&config.data_dir, run.ing.model_variant().name()),
            memo: VectorMemo::new(),
        }
    }

    /// Run until `items` is closed and everything taken is handed on, or the run fails.
    pub(super) fn run(
        mut self,
        items: Receiver<IndexItem>,
        store: Sender<StoreItem>,
    ) -> EmbedTally {
        let mut batcher: Batcher<StoredChunk, Waiting> = Batcher::new(self.batch_size);
        let mut input_open = true;
        loop {
            // Stopped: no further batch. A file not complete is not stored; its vectors so
            // far are checkpointed, and the next run embeds the rest (`resume`).
            if self.run.halted() {
                for _ in items.iter() {} // drain, so senders never block forever
                return self.tally;
            }
            // Take the files that are ready; wait for one only when no full batch is, and
            // for at most PARTIAL_WAIT while chunks are waiting: a run fed by an upload
            // queue may get no next file for hours.
            let mut quiet = false;
            while input_open {
                let full = batcher.has_batch();
                if full && batcher.files_waiting() >= self.max_waiting {
                    break;
                }
                let item = if full {
                    match items.try_recv() {
                        Ok(item) => item,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => {
                            input_open = false;
                            break;
                        }
                    }
                } else if batcher.is_empty() {
                    match items.recv() {
                        Ok(item) => item,
                        Err(_) => {
                            input_open = false;
                            break;
                        }
                    }
                } else {
                    match items.recv_timeout(PARTIAL_WAIT) {
                        Ok(item) => item,
                        Err(RecvTimeoutError::Timeout) => {
                            quiet = true;
                            break;
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            input_open = false;
                            break;
                        }
                    }
                };
                if !self.take(item, &mut batcher, &store) {
                    return self.tally;
                }
            }
            if !self.embed_next(&mut batcher, !input_open || quiet, &store) {
                return self.tally;
            }
            if !input_open && batcher.is_empty() {
                return self.tally;
            }
        }
    }

    /// Queue a file's chunks, or pass on an item that has nothing to embed. False once the
    /// store stage is gone.
    fn take(
        &mut self,
        item: IndexItem,
        batcher: &mut Batcher<StoredChunk, Waiting>,
        store: &Sender<StoreItem>,
    ) -> bool {
        match item {
            IndexItem::Content {
                meta,
                chunks,
                content,
            } => {
                let mut stored: Vec<StoredChunk> = chunks
                    .into_iter()
                    .map(|chunk| StoredChunk {
                        chunk,
                        vector: Vec::new(),
                        multilingual: None,
                        other_language: false,
                        content_hash: meta.hash.clone(),
                        locators: vec![meta.locator.clone()],
                        tags: meta.tags.clone(),
                    })
                    .collect();
                // A document in another language: its chunks in it get a second vector.
                let texts: Vec<&str> = stored.iter().map(|c| c.chunk.text.as_str()).collect();
                let flags = crate::embed::language::other_language_chunks(&texts);
                for (c, other) in stored.iter_mut().zip(flags) {
                    c.other_language = other;
                }
                // Chunks an interrupted run embedded already keep their vectors.
                let restored = self.checkpoints.restore(&meta.hash, &mut stored);
                self.run.stage(&meta.locator, FileStage::Embedding);
                self.run
                    .ing
                    .progress()
                    .waiting(&meta.locator, (stored.len() - restored) as u64);
                batcher.push((meta, content), stored);
                true
            }
            other => store.send(StoreItem::Other(other)).is_ok(),
        }
    }

    /// Embed and send the next batch if one is ready (with `all`, whatever is left), then the
    /// files that are complete. False once the run cannot go on.
    fn embed_next(
        &mut self,
        batcher: &mut Batcher<StoredChunk, Waiting>,
        all: bool,
        store: &Sender<StoreItem>,
    ) -> bool {
        if let Some(batch) = batcher.next_batch(all) {
            let embedder = match self.run.ing.embedder() {
                Ok(e) => e,
                Err(e) => {
                    self.run.fail_run(e);
                    return false;
                }
            };
            // Chunks restored from a checkpoint have their vectors: only the others go in,
            // each distinct text once, none embedded before in the run.
            let (mut fresh, restored): (Vec<StoredChunk>, Vec<StoredChunk>) =
                batch.into_iter().partition(|c| c.vector.is_empty());
            let owned: Vec<_> = fresh.iter().map(|c| c.chunk.embedding_text()).collect();
            let keys: Vec<_> = owned.iter().map(|t| super::memo::key_of(t)).collect();
            let plan = Plan::new(&keys, &mut self.memo);
            let texts: Vec<&str> = plan
                .to_embed
                .iter()
                .filter_map(|&i| owned.get(i))
                .map(|t| t.as_ref())
                .collect();
            let started = Instant::now();
            let embedded = if texts.is_empty() {
                Ok(Vec::new())
            } else {
                embedder.embed(&texts)
            };
            self.tally.busy += started.elapsed();
            // A model that answers with another number of vectors than texts is broken: the
            // run fails rather than store chunks without their vectors.
            let embedded = embedded.and_then(|vs| {
                if vs.len() == texts.len() {
                    Ok(vs)
                } else {
                    Err(crate::error::Error::Embed(format!(
                        "the model returned {} vectors for {} texts",
                        vs.len(),
                        texts.len()
                    )))
                }
            });
            match embedded {
                Ok(vs) => {
                    self.tally.chunks += vs.len() as u64;
                    self.tally.reused += plan.reused() as u64;
                    let tokens: usize = plan
                        .to_embed
                        .iter()
                        .filter_map(|&i| fresh.get(i))
                        .map(|c| c.chunk.tokens)
                        .sum();
                    self.tally.tokens += tokens as u64;
                    for (&i, v) in plan.to_embed.iter().zip(&vs) {
                        if let Some(key) = keys.get(i) {
                            self.memo.put(*key, v);
                        }
                    }
                    for (c, source) in fresh.iter_mut().zip(plan.sources) {
                        c.vector = match source {
                            Source::Embedded(j) => vs.get(j).cloned().unwrap_or_default(), // lengths checked above
                            Source::Remembered(v) => v,
                        };
                    }
                }
                Err(e) => {
                    self.run.fail_run(e);
                    return false;
                }
            }
            let completed = batcher.completed();
            // Per file, in batch order (its chunks are consecutive runs): the progress, and
            // a checkpoint of the new vectors of a file not complete after this batch.
            let mut runs: Vec<(usize, usize)> = Vec::new();
            for (i, c) in fresh.iter().enumerate() {
                match runs.last_mut() {
                    Some((start, end))
                        if fresh.get(*start).map(|s| &s.content_hash) == Some(&c.content_hash) =>
                    {
                        *end = i + 1
                    }
                    _ => runs.push((i, i + 1)),
                }
            }
            for (start, end) in runs {
                let Some(chunks) = fresh.get(start..end) else {
                    continue;
                };
                let Some(first) = chunks.first() else {
                    continue;
                };
                let file = first.locators.first().map_or("", String::as_str);
                self.run.ing.progress().embedded(file, chunks.len() as u64);
                if !completed
                    .iter()
                    .any(|((m, _), _)| m.hash == first.content_hash)
                {
                    self.checkpoints.append(&first.content_hash, chunks);
                }
            }
            let mut batch = restored;
            batch.extend(fresh);
            // Chunks in other languages get their second vector (restored ones too: the
            // checkpoints keep the index model's vectors only).
            let started = Instant::now();
            match self.run.ing.add_multilingual_vectors(&mut batch) {
                Ok(n) => self.tally.multilingual += n as u64,
                Err(e) => {
                    self.run.fail_run(e);
                    return false;
                }
            }
            self.tally.busy += started.elapsed();
            if store.send(StoreItem::Points(batch)).is_err() {
                return false;
            }
            return self.send_completed(completed, store);
        }
        let completed = batcher.completed();
        self.send_completed(completed, store)
    }

    /// Hand on the files all of whose chunks went in a batch sent before.
    fn send_completed(
        &mut self,
        completed: Vec<(Waiting, usize)>,
        store: &Sender<StoreItem>,
    ) -> bool {
        for ((meta, content), n) in completed {
            self.checkpoints.done(&meta.hash);
            let chunks = u32::try_from(n).unwrap_or(u32::MAX);
            let stored = StoreItem::FileStored {
                meta,
                chunks,
                content,
            };
            if store.send(stored).is_err() {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{statuses, Bench};
    use super::super::Event;
    use super::*;
    use crate::embed::fake::FAKE_DIMENSIONS;
    use crate::lock;
    use crossbeam_channel::{bounded, unbounded};
    use std::collections::HashMap;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    /// Long enough for several chunks of the fake chunker.
    fn long_text(word: &str) -> String {
        (0..400)
            .map(|i| format!("Paragraph {i} tells of the {word} and its keeper.\n\n"))
            .collect()
    }

    fn chunks_of(item: &IndexItem) -> usize {
        match item {
            IndexItem::Content { chunks, .. } => chunks.len(),
            _ => 0,
        }
    }

    #[test]
    fn every_chunk_is_embedded_and_a_file_is_handed_on_after_its_last_chunk() {
        let b = Bench::new();
        let items = vec![
            b.content("long.md", &long_text("lighthouse")),
            b.content("a.md", "The otter sleeps by the weir.\n"),
            b.content("b.md", "The heron fishes at dawn.\n"),
        ];
        let want: Vec<usize> = items.iter().map(chunks_of).collect();
        assert!(want[0] > 16, "{want:?}: not a long file");
        let stop = AtomicBool::new(false);
        let (run, events) = b.run(&stop);
        let (item_tx, item_rx) = bounded(0);
        let (store_tx, store_rx) = unbounded();
        let mut stage = EmbedStage::new(&run);
        stage.batch_size = 8; // several batches, shared across files
        let tally = std::thread::scope(|s| {
            let stage = s.spawn(move || stage.run(item_rx, store_tx));
            for item in items {
                item_tx.send(item).unwrap();
            }
            item_tx
                .send(IndexItem::Removed {
                    locator: "gone.md".into(),
                })
                .unwrap();
            drop(item_tx);
            stage.join().unwrap()
        });
        // Per content hash: chunks seen in batches before the file was handed on.
        let mut embedded: HashMap<String, u32> = HashMap::new();
        let mut files = Vec::new();
        let mut removed = 0;
        for out in store_rx.try_iter() {
            match out {
                StoreItem::Points(batch) => {
                    assert!(batch.len() <= 8);
                    for c in batch {
                        assert_eq!(c.vector.len(), FAKE_DIMENSIONS);
                        *embedded.entry(c.content_hash).or_default() += 1;
                    }
                }
                StoreItem::FileStored { meta, chunks, .. } => {
                    assert_eq!(embedded.get(&meta.hash), Some(&chunks), "{}", meta.locator);
                    files.push((meta.locator, chunks as usize));
                }
                StoreItem::Other(IndexItem::Removed { locator }) => {
                    assert_eq!(locator, "gone.md");
                    removed += 1;
                }
                StoreItem::Other(_) => panic!("an item that was not sent"),
            }
        }
        assert_eq!(removed, 1);
        assert_eq!(files.len(), 3, "{files:?}");
        let total: usize = want.iter().sum();
        assert_eq!((tally.chunks + tally.reused) as usize, total);
        assert!(tally.tokens > 0);
        // Each file reached the embedding stage before its line.
        let stages = events
            .try_iter()
            .filter(|e| matches!(e, Event::Stage(_, FileStage::Embedding)))
            .count();
        assert_eq!(stages, 3);
        assert!(
            statuses(&events).is_empty(),
            "the embed stage sends no line"
        );
    }

    /// The fake model, counting the texts it is given.
    #[derive(Default)]
    struct CountingModel {
        inner: crate::embed::fake::FakeEmbedder,
        texts: std::sync::atomic::AtomicUsize,
    }

    impl crate::embed::Embedder for CountingModel {
        fn embed(&self, texts: &[&str]) -> crate::error::Result<Vec<Vec<f32>>> {
            self.texts
                .fetch_add(texts.len(), std::sync::atomic::Ordering::SeqCst);
            self.inner.embed(texts)
        }
        fn dimensions(&self) -> usize {
            self.inner.dimensions()
        }
        fn max_tokens(&self) -> usize {
            self.inner.max_tokens()
        }
    }

    #[test]
    fn a_text_that_comes_again_is_not_embedded_again_and_gets_the_same_vector() {
        let model = Arc::new(CountingModel::default());
        let b = Bench::with_embedder(model.clone());
        // A log whose pages repeat one notice, and a memo of its own: the notice's chunks
        // repeat within the file and across batches.
        let log: String = (0..400)
            .map(|_| "The keeper logs the weather at dawn and dusk without fail.\n\n")
            .collect();
        let items = vec![
            b.content("log.md", &log),
            b.content("memo.md", &long_text("lighthouse")),
        ];
        let mut texts: Vec<String> = Vec::new();
        for item in &items {
            if let IndexItem::Content { chunks, .. } = item {
                texts.extend(chunks.iter().map(|c| c.embedding_text().into_owned()));
            }
        }
        let distinct: std::collections::HashSet<&String> = texts.iter().collect();
        assert!(
            distinct.len() + 8 < texts.len(),
            "{} of {} texts distinct: the versions do not share enough",
            distinct.len(),
            texts.len()
        );
        let stop = AtomicBool::new(false);
        let (run, _events) = b.run(&stop);
        let (item_tx, item_rx) = bounded(0);
        let (store_tx, store_rx) = unbounded();
        let mut stage = EmbedStage::new(&run);
        stage.batch_size = 8; // repeats within a batch and across batches
        let tally = std::thread::scope(|s| {
            let stage = s.spawn(move || stage.run(item_rx, store_tx));
            for item in items {
                item_tx.send(item).unwrap();
            }
            drop(item_tx);
            stage.join().unwrap()
        });
        let embedded = model.texts.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(embedded, distinct.len(), "texts given to the model");
        assert_eq!(tally.chunks as usize, distinct.len());
        assert_eq!(tally.reused as usize, texts.len() - distinct.len());
        // Every chunk has its vector, the one the model gives its text.
        let mut points = 0;
        let expected = crate::embed::fake::FakeEmbedder::default();
        for out in store_rx.try_iter() {
            if let StoreItem::Points(batch) = out {
                for c in batch {
                    points += 1;
                    let text = c.chunk.embedding_text();
                    let want = crate::embed::Embedder::embed(&expected, &[text.as_ref()]).unwrap();
                    assert_eq!(Some(&c.vector), want.first(), "{text}");
                }
            }
        }
        assert_eq!(points, texts.len());
    }

    /// A model that cannot embed.
    struct BrokenModel;

    impl crate::embed::Embedder for BrokenModel {
        fn embed(&self, _texts: &[&str]) -> crate::error::Result<Vec<Vec<f32>>> {
            Err(crate::error::Error::Pipeline("the model is broken".into()))
        }
        fn dimensions(&self) -> usize {
            FAKE_DIMENSIONS
        }
        fn max_tokens(&self) -> usize {
            512
        }
    }

    /// A model that answers with one vector fewer than it was given texts.
    struct ShortModel(crate::embed::fake::FakeEmbedder);

    impl crate::embed::Embedder for ShortModel {
        fn embed(&self, texts: &[&str]) -> crate::error::Result<Vec<Vec<f32>>> {
            let mut vs = self.0.embed(texts)?;
            vs.pop();
            Ok(vs)
        }
        fn dimensions(&self) -> usize {
            self.0.dimensions()
        }
        fn max_tokens(&self) -> usize {
            self.0.max_tokens()
        }
    }

    /// Six notes through an embed stage with `model`: what it tallied, whether anything
    /// was handed on to the store, and the run's fatal error.
    fn embed_six_notes(
        model: Arc<dyn crate::embed::Embedder>,
    ) -> (EmbedTally, bool, Option<crate::error::Error>) {
        let b = Bench::with_embedder(model);
        let items: Vec<IndexItem> = (0..6)
            .map(|i| b.content(&format!("{i}.md"), &format!("Note {i} on the mill race.\n")))
            .collect();
        let stop = AtomicBool::new(false);
        let (run, _events) = b.run(&stop);
        let (item_tx, item_rx) = bounded(0);
        let (store_tx, store_rx) = unbounded();
        let stage = EmbedStage::new(&run);
        let tally = std::thread::scope(|s| {
            let stage = s.spawn(move || stage.run(item_rx, store_tx));
            // A rendezvous: a send returns once the stage took the item, or fails once it
            // ended; it never blocks for good.
            for item in items {
                let _ = item_tx.send(item);
            }
            drop(item_tx);
            stage.join().unwrap()
        });
        let handed_on = store_rx.try_iter().next().is_some();
        let fatal = lock(&run.fatal).take();
        (tally, handed_on, fatal)
    }

    #[test]
    fn a_failing_model_fails_the_run_and_no_sender_is_left_blocked() {
        let (tally, handed_on, fatal) = embed_six_notes(Arc::new(BrokenModel));
        assert_eq!(tally.chunks, 0);
        assert!(!handed_on, "nothing is handed on");
        let fatal = fatal.expect("the run failed");
        assert!(fatal.to_string().contains("broken"), "{fatal}");
    }

    #[test]
    fn a_model_that_returns_too_few_vectors_fails_the_run_and_stores_nothing() {
        let (tally, handed_on, fatal) = embed_six_notes(Arc::new(ShortModel(Default::default())));
        assert_eq!(tally.chunks, 0);
        assert!(!handed_on, "no chunk without its vector is handed on");
        let fatal = fatal.expect("the run failed");
        assert!(
            fatal.to_string().contains("vectors for"),
            "the error says what the model did: {fatal}"
        );
    }
}
