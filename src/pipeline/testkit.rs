//! What the pipeline's unit tests share: an ingestor with the fake model and the embedded store
//! in a temporary folder ([`Bench`]), and the items one stage hands the next, made as that
//! stage makes them.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crossbeam_channel::{bounded, unbounded, Receiver};
use extractors::{Locator, Scope};

use super::extract::ExtractStage;
use super::run::Run;
use super::{Event, FileMeta, IndexItem, Work};
use crate::embed::fake::{fake_chunker, FakeEmbedder};
use crate::index::{IndexQuery, SearchFilter};
use crate::report::{FileReport, FileStatus};
use crate::{Config, IngestReport, Ingestor, Input};

/// Fields drop in order: the ingestor (which flushes the store) before its folder.
pub(super) struct Bench {
    pub(super) ing: Ingestor,
    pub(super) scope: Scope,
    pub(super) docs: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Bench {
    pub(super) fn new() -> Self {
        Self::with_embedder(Arc::new(FakeEmbedder::default()))
    }

    /// A bench whose model is `embedder` (and the fake chunker).
    pub(super) fn with_embedder(embedder: Arc<dyn crate::embed::Embedder>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let docs = dir.path().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        let mut config = Config::new(dir.path().join("data"));
        config.isolation.mode = crate::isolation::Isolation::InProcess;
        config.checkpoint_interval = std::time::Duration::ZERO;
        let models = crate::services::GivenModels {
            chunker: Some(fake_chunker(&config.chunking)),
            embedder: Some(embedder),
        };
        let ing = Ingestor::open_with_models(config, models).unwrap();
        Bench {
            ing,
            scope: Scope::user("u"),
            docs,
            _dir: dir,
        }
    }

    pub(super) fn write(&self, name: &str, text: &str) {
        std::fs::write(self.docs.join(name), text).unwrap();
    }

    pub(super) fn sync(&self) -> IngestReport {
        self.ing
            .ingest(vec![Input::Path(self.docs.clone())], &self.scope, &|_| {})
            .unwrap()
    }

    pub(super) fn status_of(report: &IngestReport, name: &str) -> FileStatus {
        report
            .files
            .iter()
            .find(|f| Path::new(&f.locator).ends_with(name))
            .map(|f| f.status)
            .unwrap_or_else(|| panic!("no line for {name}: {:#?}", report.files))
    }

    /// Points in the store, and the chunks the catalog says its contents hold (each content
    /// once however many files hold it) with the cards of its entries without content. They
    /// must agree.
    pub(super) fn points_and_catalog(&self) -> (usize, usize) {
        let points = self.ing.store().unwrap().count(Some(&self.scope)).unwrap();
        let mut contents = std::collections::HashMap::new();
        for e in self.ing.catalog().entries(&self.scope) {
            if let Some((key, chunks)) = e.points() {
                contents.insert(key, chunks as usize);
            }
        }
        let catalog = contents.values().sum();
        let stats = self.ing.catalog().stats(Some(&self.scope)).chunks;
        assert_eq!(stats, catalog as u64, "status counts what the entries hold");
        (points, catalog)
    }

    /// The text of the card of `locator`, found by keywords for `word`.
    pub(super) fn card_text(&self, word: &str, locator: &str) -> String {
        self.keyword_hits(word, 50)
            .into_iter()
            .find(|h| h.locator == locator && h.kind == crate::embed::ChunkKind::Card)
            .map(|h| h.text)
            .unwrap_or_else(|| panic!("no card of {locator} for {word:?}"))
    }

    /// The first `limit` keyword hits for `word`.
    pub(super) fn keyword_hits(&self, word: &str, limit: usize) -> Vec<crate::index::Hit> {
        let query = IndexQuery {
            vector: None,
            text: Some(word.into()),
            multilingual: None,
            name: false,
        };
        self.ing
            .store()
            .unwrap()
            .search(
                &self.scope,
                &query,
                limit,
                0,
                None,
                &SearchFilter::default(),
            )
            .unwrap()
    }

    /// The locators of the entry cards in the store (cards of entries without content).
    pub(super) fn entry_cards(&self) -> Vec<String> {
        let mut cards: Vec<String> = self
            .ing
            .store()
            .unwrap()
            .point_records()
            .unwrap()
            .into_iter()
            .filter(|p| p.content_hash.starts_with("entry-"))
            .flat_map(|p| p.locators)
            .collect();
        cards.sort();
        cards
    }

    /// Locators of the keyword hits for `word`.
    pub(super) fn found(&self, word: &str) -> Vec<String> {
        self.keyword_hits(word, 20)
            .into_iter()
            .map(|h| h.locator)
            .collect()
    }

    /// A run's shared state over this bench's ingestor, and the receiver of its events.
    pub(super) fn run<'a>(&'a self, stop: &'a AtomicBool) -> (Run<'a>, Receiver<Event>) {
        let (tx, rx) = unbounded();
        (Run::new(&self.ing, &self.scope, stop, tx), rx)
    }

    /// The locator of `name` in the bench's folder.
    pub(super) fn locator(&self, name: &str) -> Locator {
        Locator::root(self.docs.join(name).to_string_lossy())
    }

    /// File `name` holding `bytes` as the walk stage hands it to extraction (the file need
    /// not exist), its permit taken from `run`'s byte gate.
    pub(super) fn work(&self, run: &Run<'_>, name: &str, bytes: &[u8]) -> Work {
        run.expect_line(&self.locator(name).to_string());
        run.handoff.handed();
        Work {
            locator: self.locator(name),
            bytes: bytes.to_vec(),
            detected: extractors::detect(bytes, name),
            parent: None,
            size: bytes.len() as u64,
            mtime_ns: 1,
            permit: run.gate.acquire(bytes.len() as u64),
            tags: Vec::new(),
        }
    }

    /// What the extract stage hands on for new file `name` holding `text`: its chunks and
    /// content record (made by the extract stage of a run of its own).
    pub(super) fn content(&self, name: &str, text: &str) -> IndexItem {
        let stop = AtomicBool::new(false);
        let (run, _events) = self.run(&stop);
        let (leaf_tx, leaf_rx) = bounded(1);
        let (item_tx, item_rx) = unbounded();
        leaf_tx
            .send(self.work(&run, name, text.as_bytes()))
            .unwrap();
        drop(leaf_tx);
        ExtractStage::new(&run).run(leaf_rx, item_tx);
        let (item, _permit) = item_rx.recv().expect("an item");
        assert!(
            matches!(item, IndexItem::Content { .. }),
            "{name} was not extracted"
        );
        item
    }

    /// The facts of file `name` holding `bytes`, new to the catalog.
    pub(super) fn meta(&self, name: &str, bytes: &[u8]) -> FileMeta {
        FileMeta {
            locator: self.locator(name).to_string(),
            parent: None,
            hash: blake3::hash(bytes).to_hex().to_string(),
            size: bytes.len() as u64,
            mtime_ns: 1,
            mime: Some("text/plain".into()),
            previous: None,
            tags: Vec::new(),
        }
    }

    /// The catalog status of `name`, if it has an entry.
    pub(super) fn entry_status(&self, name: &str) -> Option<crate::index::EntryStatus> {
        self.ing
            .catalog()
            .get(&self.scope, &self.locator(name).to_string())
            .map(|e| e.status)
    }

    /// Points of the bench's scope in the store.
    pub(super) fn points(&self) -> usize {
        self.ing.store().unwrap().count(Some(&self.scope)).unwrap()
    }
}

/// The ledger lines sent so far, by file name, in the order they came.
pub(super) fn lines(events: &Receiver<Event>) -> Vec<(String, FileStatus, FileReport)> {
    events
        .try_iter()
        .filter_map(|e| match e {
            Event::File(r) => Some((
                extractors::file_name_part(&r.locator).to_string(),
                r.status,
                r,
            )),
            _ => None,
        })
        .collect()
}

/// The names and statuses of [`lines`].
pub(super) fn statuses(events: &Receiver<Event>) -> Vec<(String, FileStatus)> {
    lines(events).into_iter().map(|(n, s, _)| (n, s)).collect()
}
