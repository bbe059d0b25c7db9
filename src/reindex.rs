//! `reindex`: cut and embed every stored content again with this build's [`Recipe`], from
//! the texts the index keeps (the object packs): no file is read or parsed again. The way
//! from an index made with another recipe (no cards, junk embedded, no contextual headers,
//! other chunk sizes) to one made with this one.
//!
//! Contents are re-chunked one by one and embedded in batches across contents; each
//! content's old points are replaced by its new ones and every file holding it gets its new
//! chunk count. The data directory records the new recipe as unfinished first and as done
//! last, and the run holds the dirty marker: an interrupted reindex is repaired on the next
//! open and refused for ingest until `reindex` runs again (it starts over; every step is
//! idempotent).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use extractors::Scope;

use crate::embed::recipe::Recipe;
use crate::embed::Chunk;
use crate::error::{Error, Result};
use crate::index::{DirtyMarker, StoredChunk};
use crate::ingestor::Ingestor;
use crate::records::record_recipe;

/// Chunks embedded per call (the embedder sorts them by length and runs its own batches).
const EMBED_CHUNKS: usize = 128;

/// Where a reindex stands, for progress lines.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReindexProgress {
    /// Contents done so far.
    pub contents_done: u64,
    /// Contents to do.
    pub contents: u64,
    /// Chunks embedded so far.
    pub chunks: u64,
}

/// What a reindex did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ReindexReport {
    /// The recipe the index had.
    pub from: String,
    /// The recipe it has now.
    pub to: String,
    /// Contents (distinct stored bytes per scope) cut and embedded again.
    pub contents: u64,
    /// Contents without their stored texts (left as they were; `ingest --retry` on their
    /// files reads them again).
    pub contents_missing: u64,
    /// Chunks before.
    pub chunks_before: u64,
    /// Chunks after.
    pub chunks_after: u64,
    /// Model tokens embedded.
    pub tokens: u64,
    /// Cards of failed, skipped and archive entries embedded again.
    pub entry_cards: u64,
    /// Time spent embedding.
    pub embed_seconds: f64,
    /// Time spent in all.
    pub seconds: f64,
}

/// What `reindex --multilingual` did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct MultilingualReport {
    /// Points read.
    pub points: u64,
    /// Points in another language than English that lacked a multilingual vector and got
    /// one.
    pub embedded: u64,
    /// Time spent embedding.
    pub embed_seconds: f64,
    /// Time spent in all.
    pub seconds: f64,
}

/// Which content of which scope an exported point belongs to (its payload's fields).
fn content_of(p: &crate::ExportedPoint) -> (String, String) {
    let field = |k: &str| {
        p.payload
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    (field("scope_key"), field("content_hash"))
}

/// One content waiting for its vectors.
struct Pending {
    scope: Scope,
    hash: String,
    chunks: Vec<Chunk>,
}

impl Ingestor {
    /// Give every stored chunk in another language than English that lacks one its
    /// multilingual vector (an index made before multilingual vectors, or with
    /// `--no-multilingual`), from the text the index keeps; nothing else changes. Blocks
    /// while an ingest runs. `progress` is called with (points read, points embedded).
    pub fn reindex_multilingual(
        &self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<MultilingualReport> {
        let started = Instant::now();
        if !self.multilingual_on() {
            return Err(Error::Config(
                "multilingual vectors are off (--no-multilingual, or the index model is multilingual itself)".into(),
            ));
        }
        let _whole_index = self.runs().exclusive();
        let store = self.store()?;
        if !store.multilingual_space() {
            return Err(Error::Config(
                "the index has no multilingual vector space (its Qdrant server could not add one)"
                    .into(),
            ));
        }
        let mut report = MultilingualReport::default();
        // Only the points in another language are kept (their payloads and vectors), with
        // every content's count of points, then the contents that are documents in another
        // language (`other_language_chunks`) embedded and written back a batch at a time.
        let mut flagged = Vec::new();
        let mut per_content: std::collections::HashMap<(String, String), (usize, usize)> =
            std::collections::HashMap::new();
        store.export_points(&mut |p| {
            report.points += 1;
            let counts = per_content.entry(content_of(&p)).or_default();
            counts.1 += 1;
            let text = p.payload.get("text").and_then(|t| t.as_str()).unwrap_or("");
            if crate::embed::language::in_other_language(text) {
                counts.0 += 1;
                if p.multilingual.is_none() {
                    flagged.push(p);
                }
            }
        })?;
        let mut wanting: Vec<_> = flagged
            .into_iter()
            .filter(|p| {
                per_content
                    .get(&content_of(p))
                    .is_some_and(|&(other, all)| {
                        crate::embed::language::is_document_share(other, all)
                    })
            })
            .collect();
        progress(report.points, 0);
        let mut embed_time = Duration::ZERO;
        for batch in wanting.chunks_mut(EMBED_CHUNKS) {
            let began = Instant::now();
            let texts: Vec<Option<&str>> = batch
                .iter()
                .map(|p| p.payload.get("text").and_then(|t| t.as_str()))
                .collect();
            let vectors = self.multilingual_vectors(&texts)?;
            embed_time += began.elapsed();
            for (p, v) in batch.iter_mut().zip(vectors) {
                p.multilingual = v;
            }
            store.import_points(batch)?;
            report.embedded += batch.len() as u64;
            progress(report.points, report.embedded);
        }
        store.flush();
        store.optimize()?;
        report.embed_seconds = embed_time.as_secs_f64();
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Cut and embed every stored content again with this build's recipe (see the module
    /// doc). Blocks while an ingest runs, and ingests wait for it. `progress` is called after
    /// each batch.
    pub fn reindex(&self, progress: &mut dyn FnMut(&ReindexProgress)) -> Result<ReindexReport> {
        let started = Instant::now();
        if self.config().catalog.is_some() {
            return Err(Error::Config(
                "reindex works on an embedded catalog only: the nodes of a shared catalog would have to change model and recipe together (not supported yet)".into(),
            ));
        }
        let _whole_index = self.runs().exclusive();
        let data_dir = self.data_dir().to_path_buf();
        let target = Recipe::of(&self.config().chunking);
        let has_content = self.records_may_predate_content();
        let from = crate::records::recorded_recipe(&data_dir, has_content)?
            .map_or_else(|| "nothing (a new index)".to_string(), |r| r.describe());
        // Every (scope, content) and the chunks its files record.
        let contents: Vec<(Scope, String, u32)> = {
            let catalog = self.catalog();
            let mut seen = BTreeMap::new();
            for scope in catalog.scopes() {
                for entry in catalog.entries(&scope) {
                    if let Some((hash, chunks)) = entry.content() {
                        seen.entry((scope.key(), hash))
                            .or_insert((scope.clone(), chunks));
                    }
                }
            }
            seen.into_iter()
                .map(|((_, hash), (scope, chunks))| (scope, hash, chunks))
                .collect()
        };
        let mut report = ReindexReport {
            from,
            to: target.describe(),
            chunks_before: contents.iter().map(|(_, _, n)| u64::from(*n)).sum(),
            ..ReindexReport::default()
        };
        let dirty = DirtyMarker::set(&data_dir)?;
        // From here on the index is the new model's (and refuses ingest until the recipe
        // is recorded as finished).
        crate::records::record_variant(&data_dir, self.model_variant())?;
        record_recipe(
            &data_dir,
            &Recipe {
                unfinished: true,
                ..target.clone()
            },
        )?;
        let chunker = self.chunker()?;
        let mut state = ReindexProgress {
            contents: contents.len() as u64,
            ..ReindexProgress::default()
        };
        let mut pending: Vec<Pending> = Vec::new();
        let mut embed_time = Duration::ZERO;
        for (scope, hash, _) in contents {
            let (index, pack, locator) = {
                let catalog = self.catalog();
                let locator = catalog
                    .locators_with_hash(&scope, &hash)
                    .into_iter()
                    .next()
                    .unwrap_or_default();
                (catalog.content_index(&hash), catalog.pack(&hash), locator)
            };
            let objects = match (index, pack) {
                (Ok(Some(index)), Ok(Some(mut pack))) => pack
                    .content_objects(&hash, &locator)
                    .map(|objects| (index, objects)),
                (Err(e), _) | (_, Err(e)) => Err(e),
                (Ok(None), _) => Err(Error::Pipeline(format!("no content index for {hash}"))),
                (_, Ok(None)) => Err(Error::Pipeline(format!("no object pack for {hash}"))),
            };
            let (index, objects) = match objects {
                Ok(found) => found,
                Err(e) => {
                    tracing::warn!("reindex: {locator} keeps its chunks: {e}");
                    report.contents_missing += 1;
                    state.contents_done += 1;
                    continue;
                }
            };
            // It was accepted under the file limit once: no limit now.
            let chunks = chunker
                .chunk_file(&locator, &index, &objects, usize::MAX)
                .unwrap_or_default();
            pending.push(Pending {
                scope,
                hash,
                chunks,
            });
            if pending.iter().map(|p| p.chunks.len()).sum::<usize>() >= EMBED_CHUNKS {
                self.store_pending(&mut pending, &mut report, &mut state, &mut embed_time)?;
                progress(&state);
            }
        }
        self.store_pending(&mut pending, &mut report, &mut state, &mut embed_time)?;
        progress(&state);
        let scopes = self.catalog().scopes();
        for scope in &scopes {
            report.entry_cards += crate::pipeline::rewrite_entry_cards(self, scope)?;
        }
        self.catalog().save()?;
        self.store()?.flush();
        record_recipe(&data_dir, &target)?;
        dirty.clear()?;
        report.embed_seconds = embed_time.as_secs_f64();
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// Embed the chunks of `pending`, then replace each content's points and record its new
    /// chunk count on every file holding it.
    fn store_pending(
        &self,
        pending: &mut Vec<Pending>,
        report: &mut ReindexReport,
        state: &mut ReindexProgress,
        embed_time: &mut Duration,
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let texts: Vec<_> = pending
            .iter()
            .flat_map(|p| p.chunks.iter().map(Chunk::embedding_text))
            .collect();
        let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
        let began = Instant::now();
        let mut vectors = if refs.is_empty() {
            Vec::new()
        } else {
            self.embedder()?.embed(&refs)?
        }
        .into_iter();
        *embed_time += began.elapsed();
        let store = self.store()?;
        for p in pending.drain(..) {
            let holders = self.catalog().holders(&p.scope, &p.hash);
            let n = u32::try_from(p.chunks.len()).unwrap_or(u32::MAX);
            report.tokens += p.chunks.iter().map(|c| c.tokens as u64).sum::<u64>();
            let mut stored: Vec<StoredChunk> = p
                .chunks
                .into_iter()
                .map(|chunk| StoredChunk {
                    chunk,
                    vector: vectors.next().unwrap_or_default(),
                    multilingual: None,
                    other_language: false,
                    content_hash: p.hash.clone(),
                    locators: holders.locators.clone(),
                    tags: holders.tags.clone(),
                })
                .collect();
            let texts: Vec<&str> = stored.iter().map(|c| c.chunk.text.as_str()).collect();
            let flags = crate::embed::language::other_language_chunks(&texts);
            for (c, other) in stored.iter_mut().zip(flags) {
                c.other_language = other;
            }
            self.add_multilingual_vectors(&mut stored)?;
            store.delete_content(&p.scope, &p.hash)?;
            if !stored.is_empty() {
                store.upsert(&p.scope, &stored)?;
            }
            let catalog = self.catalog();
            for locator in &holders.locators {
                if let Some(mut entry) = catalog.get(&p.scope, locator) {
                    entry.chunks = n;
                    catalog.put(&p.scope, entry);
                }
            }
            report.contents += 1;
            report.chunks_after += u64::from(n);
            state.contents_done += 1;
            state.chunks += u64::from(n);
        }
        Ok(())
    }
}
