//! The search policy of a handle: what a query is embedded as (the index model, and the
//! multilingual model where the index holds such points), the rankings it asks the index
//! for, the cards a query names placed first, each hit judged (its confidence and whether
//! anything supports it), and a locator filter that finds every copy of a shared content.
//! The faces check the query and the scope before they come here (`tools::search_hits`).

use extractors::Scope;

use super::{QueryVectors, Services};
use crate::embed::ChunkKind;
use crate::error::{Error, Result};
use crate::index::{HeldUnder, Hit, IndexQuery, SearchFilter, SearchMode, VectorIndex};

impl Services {
    /// Search the chunks `scope` may read. Blocks while the model loads on first use.
    pub fn search(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
    ) -> Result<Vec<Hit>> {
        self.search_filtered(
            query,
            scope,
            limit,
            min_score,
            &SearchFilter::default(),
            SearchMode::default(),
        )
    }

    /// Search the chunks `scope` may read that `filter` lets through (under a locator, of a
    /// type, on pages, in a section, sheet or slide), best first, ranked as `mode` says, each
    /// locator once. A hit's `score` orders the answer (the cosine similarity in `dense`,
    /// the BM25 score in `keyword`, the fused score in `hybrid`), its `relevance` is
    /// absolute (the cosine, or the BM25 score / 80 when higher) and `min_score` leaves out
    /// hits below that; without one every hit tied to the query is kept, each with its
    /// `confidence` ([`crate::index::confidence`]). Blocks while the model loads on first
    /// use (keyword searches never load it).
    pub fn search_filtered(
        &self,
        query: &str,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        if !worth_searching(query, scope, limit)? {
            return Ok(Vec::new());
        }
        let vector = self.query_vector(query, mode)?;
        self.search_embedded(query, vector, scope, limit, min_score, filter, mode)
    }

    /// The query's embedding when `mode` ranks by meaning (loading the model on first use); a
    /// query longer than [`crate::MAX_QUERY_BYTES`] is refused, an empty one has none.
    pub(crate) fn query_vector(
        &self,
        query: &str,
        mode: SearchMode,
    ) -> Result<Option<QueryVectors>> {
        if query.len() > crate::MAX_QUERY_BYTES {
            return Err(Error::Request(format!(
                "the query is {} bytes; at most {} are searched (the model reads 256 tokens)",
                query.len(),
                crate::MAX_QUERY_BYTES
            )));
        }
        if !mode.uses_embedding() || query.trim().is_empty() {
            return Ok(None);
        }
        let vector = self.embedder()?.embed_query(query)?;
        let multilingual = match self.multilingual_on() {
            true if self.index_has_multilingual(&*self.store()?)? => self
                .multilingual_embedder()?
                .map(|m| m.embed_query(query))
                .transpose()?,
            _ => None,
        };
        Ok(Some(QueryVectors {
            vector,
            multilingual,
        }))
    }

    /// [`Services::search_filtered`] with the query already embedded ([`Services::query_vector`]):
    /// several searches of one query embed it once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_embedded(
        &self,
        query: &str,
        vectors: Option<QueryVectors>,
        scope: &Scope,
        limit: usize,
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        if !worth_searching(query, scope, limit)? {
            return Ok(Vec::new());
        }
        let (vector, multilingual) = match vectors {
            Some(q) => (Some(q.vector), q.multilingual),
            None => (None, None),
        };
        let index_query = IndexQuery {
            vector,
            text: (mode != SearchMode::Dense).then(|| query.to_string()),
            multilingual,
            name: false,
        };
        let store = self.store()?;
        // Under a locator, the contents held there by more files than their points name are
        // let through by the catalog's word, and each hit names its file there.
        let held = filter
            .locator_prefix
            .as_deref()
            .map(|prefix| self.held_under(scope, filter, prefix));
        let extended;
        let filter = match &held {
            Some(h) if !h.unnamed.is_empty() => {
                extended = SearchFilter {
                    unnamed_under: h.unnamed.clone(),
                    ..filter.clone()
                };
                &extended
            }
            _ => filter,
        };
        // A page's other chunks share its locator: fetched beyond `limit` so that, each
        // locator once, `limit` hits are still there.
        let mut wanted = limit.saturating_mul(2).max(limit.saturating_add(10));
        if mode == SearchMode::Hybrid
            && min_score.is_none()
            && self.model_variant.relevance_floor().is_some()
        {
            // The whole fused list: those reaching the floor are ranked first ([`Self::judge`])
            // from all of it, as when the floor left the others out (in `dense` and `keyword`
            // the relevance follows the ranking: nothing moves).
            wanted = wanted.max(crate::index::FUSION_CANDIDATES);
        }
        let mut hits = store.search(scope, &index_query, wanted, 0, min_score, filter)?;
        // The cards a query names, placed first (by their name, whatever their relevance).
        let mut named = std::collections::HashSet::new();
        if filter.kind != Some(ChunkKind::Passage) {
            // A query that names a file (or its title) finds that file's card first, however
            // common the words of the name are elsewhere: by its exact file name, else by
            // its name's words.
            let first = match file_name_in(query) {
                Some(name) => {
                    let named = SearchFilter {
                        kind: Some(ChunkKind::Card),
                        file_name: Some(name.to_string()),
                        ..filter.clone()
                    };
                    store.search(scope, &index_query, limit, 0, min_score, &named)?
                }
                None => self.named_cards(&*store, query, scope, &hits, min_score, filter, mode)?,
            };
            if !first.is_empty() {
                hits.retain(|h| !first.iter().any(|f| f.chunk_id == h.chunk_id));
                named.extend(first.iter().map(|c| (c.owner.key(), c.chunk_id)));
                // Placed first by its name: ranked as the best of the others, at least.
                let top = hits.first().map_or(0.0, |h| h.score);
                let first = first.into_iter().map(|mut card| {
                    card.score = card.score.max(top);
                    card
                });
                hits.splice(0..0, first);
            }
        }
        if let Some(held) = &held {
            hits.iter_mut().for_each(|h| held.repoint(h));
        }
        // No locator twice in one answer: the first (best) hit of each stands for it.
        let mut seen = std::collections::HashSet::new();
        hits.retain(|h| seen.insert((h.owner.key(), h.locator.clone())));
        self.judge(query, &mut hits, &named, min_score.is_none());
        hits.truncate(limit);
        Ok(hits)
    }

    /// Each hit's confidence ([`crate::index::confidence`]), judged from its evidence and
    /// the share of the query's content words it holds; with `drop_unsupported` (no
    /// `min_score` given) the hits tied to the query by nothing are left out, so that a
    /// search whose candidates have no support answers nothing ("nothing relevant"). The
    /// cards the query names (`named`, placed first by their name) and the hits whose
    /// relevance reaches the model's floor come first, then the others, each in the
    /// ranking's order (a page's other chunks after every page's best); then each hit's `score` is made never to rise down the list, so that the score
    /// printed beside a hit says where it stands.
    fn judge(
        &self,
        query: &str,
        hits: &mut Vec<Hit>,
        named: &std::collections::HashSet<(String, u64)>,
        drop_unsupported: bool,
    ) {
        use crate::index::confidence;
        let floor = self.model_variant.relevance_floor();
        let is_named = |h: &Hit| named.contains(&(h.owner.key(), h.chunk_id));
        let asked = confidence::Asked::of(query);
        for h in hits.iter_mut() {
            let file = extractors::file_name_part(&h.locator);
            let section = h.section.as_deref().unwrap_or_default();
            let matched = format!("{file}\n{section}\n{}", h.text);
            h.evidence.coverage = asked.coverage(&matched);
            h.confidence = match is_named(h) {
                // The query names the file: it is what was asked for.
                true => confidence::Confidence::High,
                false => confidence::judge(&h.evidence, floor),
            };
        }
        if drop_unsupported {
            hits.retain(|h| confidence::supported(&h.evidence, floor));
        }
        // The hits reaching the model's floor first, each part in the ranking's order: a hit
        // below it never takes a place above one that reaches it (the order the fixed floor
        // gave by leaving them out, so recall is never lower than with it).
        if let Some(floor) = floor {
            hits.sort_by_key(|h| !is_named(h) && h.relevance < floor);
        }
        let mut ceiling = f32::INFINITY;
        for h in hits.iter_mut() {
            h.score = h.score.min(ceiling);
            ceiling = h.score;
        }
    }

    /// What the catalog holds under the locator `prefix` of a search by `scope` narrowed by
    /// `filter` ([`HeldUnder`]): of every owner whose files `scope` may read and the filter
    /// keeps.
    fn held_under(&self, scope: &Scope, filter: &SearchFilter, prefix: &str) -> HeldUnder {
        let catalog = self.catalog();
        let mut owners = crate::access::readable_owners(catalog.scopes(), scope, None);
        owners.retain(|o| {
            filter.owner_key.as_ref().is_none_or(|k| *k == o.key())
                && filter.shared.is_none_or(|s| s == o.is_shared)
        });
        HeldUnder::find(catalog, &owners, prefix)
    }

    /// The cards of the files `query` names by their name's (or title's) words
    /// ([`crate::index::name_match`]), best named first, at most
    /// [`crate::index::name_match::MAX_NAMED`]: found among the cards of files whose names
    /// hold every word of the query and the cards a keyword search ranks first, each
    /// with the relevance it has among `hits` when it is there, else its word score (BM25,
    /// and for a search by meaning, the share of the query's words its name holds).
    #[allow(clippy::too_many_arguments)]
    fn named_cards(
        &self,
        store: &dyn VectorIndex,
        query: &str,
        scope: &Scope,
        hits: &[Hit],
        min_score: Option<f32>,
        filter: &SearchFilter,
        mode: SearchMode,
    ) -> Result<Vec<Hit>> {
        use crate::index::name_match::{name_match, query_words, MAX_NAMED, NAMED_CANDIDATES};
        let Some(words) = query_words(query) else {
            return Ok(Vec::new());
        };
        let cards = SearchFilter {
            kind: Some(ChunkKind::Card),
            ..filter.clone()
        };
        // Candidates: the cards of files whose names hold every word of the query (however
        // many other cards hold them in their folders or text), then the cards the query's
        // words rank first (names that hold most of them, titles, subjects).
        let wholly = SearchFilter {
            name_words: words.iter().cloned().collect(),
            ..cards.clone()
        };
        let by_name = IndexQuery::name(query);
        let mut candidates = store.search(scope, &by_name, NAMED_CANDIDATES, 0, None, &wholly)?;
        let by_words = IndexQuery::keyword(query);
        for card in store.search(scope, &by_words, NAMED_CANDIDATES, 0, None, &cards)? {
            if !candidates.iter().any(|c| c.chunk_id == card.chunk_id) {
                candidates.push(card);
            }
        }
        let mut named: Vec<((f32, f32), Hit)> = candidates
            .into_iter()
            .filter_map(|mut card| {
                let share = name_match(&words, &card.locator, &card.text)?;
                if let Some(found) = hits.iter().find(|h| h.chunk_id == card.chunk_id) {
                    card.score = found.score;
                    card.relevance = found.relevance;
                    card.evidence = found.evidence;
                }
                // Named by the query: as relevant as the share of its name's words asked.
                if mode != SearchMode::Keyword && share.0 > card.relevance {
                    card.relevance = share.0;
                    card.evidence.words = card.relevance;
                    card.score = card.relevance;
                }
                Some((share, card))
            })
            .filter(|(_, card)| min_score.is_none_or(|m| card.relevance >= m))
            .collect();
        // The best named first; of equal names, the better word score (a stable order).
        named.sort_by(|((a, a2), x), ((b, b2), y)| {
            b.total_cmp(a)
                .then(b2.total_cmp(a2))
                .then(y.score.total_cmp(&x.score))
        });
        named.truncate(MAX_NAMED);
        Ok(named.into_iter().map(|(_, card)| card).collect())
    }
}

/// The file name a query is, if it looks like one: ending in an extension of one to five
/// letters or digits (`path.json`, `IMG_2043.JPG`, `Übersicht Griechisch.pdf`), without a
/// path. A question that merely ends in a name matches no file by it and changes nothing.
fn file_name_in(query: &str) -> Option<&str> {
    let q = query.trim();
    let (stem, ext) = q.rsplit_once('.')?;
    let is_name = !stem.trim().is_empty()
        && (1..=5).contains(&ext.len())
        && ext.chars().all(|c| c.is_ascii_alphanumeric())
        && !q.contains(['/', '!', '#', '?']);
    is_name.then_some(q)
}

/// The checks every search makes before any work: a valid scope (else an error); an empty
/// query or a limit of 0 finds nothing (`false`).
fn worth_searching(query: &str, scope: &Scope, limit: usize) -> Result<bool> {
    crate::access::check_scope(scope).map_err(Error::Scope)?;
    Ok(!query.trim().is_empty() && limit > 0)
}
