//! Hybrid ranking: the meaning ranking (dense vectors) and the word ranking (BM25) of the same
//! question, fused into one list by reciprocal rank, page by page.
//!
//! Both stores answer a hybrid query here, from their two single rankings, so that the
//! embedded shard and a Qdrant server rank alike. What it does beyond plain RRF over chunks:
//!
//! - **Pages are the unit.** One chunk of page 12 ranked first by meaning and another chunk
//!   of page 12 ranked first by words are one answer found twice, not two answers found
//!   once each: a page's fused score sums, over the rankings, the reciprocal rank of its best
//!   chunk in each. Chunk-level RRF gave both chunks half a score and let a neighbour chunk
//!   ranked fairly by both win, so a page that one ranking found was often lost in the
//!   fusion.
//! - **One hit per page first.** The page's best chunk stands for it; its other chunks follow
//!   every page's first chunk (still in the list, so a cursor reaches them), so five chunks
//!   of one page cannot fill the first five places.
//!
//! Content without pages (text files, sheets, slides) is ranked chunk by chunk, as before.

use std::collections::{HashMap, HashSet};

use extractors::Scope;

use super::{Hit, IndexQuery, IndexRead, SearchFilter, MAX_SEARCH_HITS};
use crate::error::Result;

/// The reciprocal-rank-fusion constant: a ranking's share of a score is `1 / (RRF_K + rank)`,
/// ranks counted from 0. 2 is Qdrant's own default (`DEFAULT_RRF_K`), so the top of each
/// ranking weighs most. On eval/dev.tsv, k = 1, 2 and 3 gave recall@5 0.956/0.956/0.941,
/// page recall@5 0.902 each and MRR 0.90; the RRF paper's 60 gave 0.912, 0.829 and 0.876 (it
/// lets a chunk ranked fairly by both beat one ranked first by one).
pub(super) const RRF_K: f32 = 2.0;

/// Candidates each ranking contributes to a fused search, at least.
pub(super) const FUSION_CANDIDATES: usize = 100;

/// A hybrid search on `store` when `query` has both a vector and a text (else `None`: the
/// store answers the single ranking itself): its meaning ranking and its word ranking, each
/// of the best [`FUSION_CANDIDATES`] (or `offset + limit`, if more) points `scope` may read
/// and `filter` lets through, fused by [`fuse`]; the `limit` after the `offset` best
/// (`paging` is `(limit, offset, min_score)`). With `min_score`, only points whose cosine
/// passes it are ranked (the words only reorder those). When the words rank nothing (no
/// point holds any of them), the meaning ranking is the answer, with its cosine scores.
pub(super) fn hybrid(
    store: &dyn IndexRead,
    scope: &Scope,
    query: &IndexQuery,
    paging: (usize, usize, Option<f32>),
    filter: &SearchFilter,
) -> Option<Result<Vec<Hit>>> {
    let (Some(vector), Some(text)) = (&query.vector, &query.text) else {
        return None;
    };
    Some(fused_search(store, scope, vector, text, paging, filter))
}

fn fused_search(
    store: &dyn IndexRead,
    scope: &Scope,
    vector: &[f32],
    text: &str,
    (limit, offset, min_score): (usize, usize, Option<f32>),
    filter: &SearchFilter,
) -> Result<Vec<Hit>> {
    let end = offset.saturating_add(limit).min(MAX_SEARCH_HITS);
    if offset >= end {
        return Ok(Vec::new());
    }
    let candidates = end.clamp(FUSION_CANDIDATES, MAX_SEARCH_HITS);
    // With a floor, every point above it may be reordered by the words: all of them (up to
    // the hit cap) are fetched, the first `candidates` rank.
    let wide = if min_score.is_some() {
        MAX_SEARCH_HITS
    } else {
        candidates
    };
    let meaning = IndexQuery {
        vector: Some(vector.to_vec()),
        text: None,
    };
    let mut dense = store.search(scope, &meaning, wide, 0, min_score, filter)?;
    let words = IndexQuery {
        vector: None,
        text: Some(text.to_string()),
    };
    let mut keyword = store.search(scope, &words, wide, 0, None, filter)?;
    if min_score.is_some() {
        let passing: HashSet<(String, u64)> =
            dense.iter().map(|h| (h.owner.key(), h.chunk_id)).collect();
        keyword.retain(|h| passing.contains(&(h.owner.key(), h.chunk_id)));
    }
    dense.truncate(candidates);
    keyword.truncate(candidates);
    let ranked = if keyword.is_empty() {
        dense
    } else {
        fuse(dense, keyword)
    };
    Ok(ranked.into_iter().take(end).skip(offset).collect())
}

/// What a hit is an answer about: its page (of one owner's copy of one content), or, without
/// pages, the chunk itself.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Unit {
    Page(String, String, u32),
    Chunk(String, u64),
}

fn unit(hit: &Hit) -> Unit {
    let owner = hit.owner.key();
    match hit.page {
        Some(page) => Unit::Page(owner, hit.content_hash.clone(), page),
        None => Unit::Chunk(owner, hit.chunk_id),
    }
}

/// Fuses `dense` and `keyword` (each best first) into one list, best first, scores rescaled
/// so that first in both rankings is 1. Ties go by chunk id, so the same search always pages
/// the same way.
pub(super) fn fuse(dense: Vec<Hit>, keyword: Vec<Hit>) -> Vec<Hit> {
    // Per chunk: its own reciprocal-rank sum; per unit: the sum over rankings of its best
    // chunk's share in each.
    let mut chunks: HashMap<(String, u64), (f32, Hit)> = HashMap::new();
    let mut units: HashMap<Unit, f32> = HashMap::new();
    for ranking in [dense, keyword] {
        let mut seen_units: HashSet<Unit> = HashSet::new();
        for (rank, hit) in ranking.into_iter().enumerate() {
            let share = 1.0 / (RRF_K + rank as f32);
            let u = unit(&hit);
            if seen_units.insert(u.clone()) {
                *units.entry(u).or_default() += share;
            }
            let key = (hit.owner.key(), hit.chunk_id);
            match chunks.get_mut(&key) {
                Some((score, _)) => *score += share,
                None => {
                    chunks.insert(key, (share, hit));
                }
            }
        }
    }
    // Each unit's best chunk stands for it, with the unit's score; the others follow.
    let order = |a: &(f32, Hit), b: &(f32, Hit)| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.chunk_id.cmp(&b.1.chunk_id))
    };
    let mut all: Vec<(f32, Hit)> = chunks.into_values().collect();
    all.sort_by(order);
    let mut first = Vec::new();
    let mut rest = Vec::new();
    let mut placed: HashSet<Unit> = HashSet::new();
    for (score, hit) in all {
        let u = unit(&hit);
        if placed.insert(u.clone()) {
            let unit_score = units.get(&u).copied().unwrap_or(score);
            first.push((unit_score, hit));
        } else {
            rest.push((score, hit));
        }
    }
    first.sort_by(order);
    rest.sort_by(order);
    let scale = RRF_K / 2.0;
    first
        .into_iter()
        .chain(rest)
        .map(|(score, mut hit)| {
            hit.score = score * scale;
            hit
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use extractors::Scope;

    fn hit(id: u64, hash: &str, page: Option<u32>) -> Hit {
        Hit {
            locator: format!("{hash}.pdf"),
            score: 0.0,
            text: String::new(),
            section: None,
            label: None,
            also_in: Vec::new(),
            tags: Vec::new(),
            content_hash: hash.into(),
            content_type: "text".into(),
            kind: crate::embed::ChunkKind::Passage,
            page,
            sheet: None,
            slide: None,
            chunk_index: 0,
            chunk_id: id,
            owner: Scope::user("u"),
        }
    }

    fn ids(hits: &[Hit]) -> Vec<u64> {
        hits.iter().map(|h| h.chunk_id).collect()
    }

    #[test]
    fn a_page_found_by_each_ranking_through_different_chunks_is_found_twice() {
        // Page 12 of a: chunk 1 first by meaning, chunk 2 first by words. Chunk 3 (page 40)
        // second in both, which plain RRF ranks first (2 × 1/3 > 1/2).
        let dense = vec![
            hit(1, "a", Some(12)),
            hit(3, "a", Some(40)),
            hit(4, "b", None),
        ];
        let keyword = vec![
            hit(2, "a", Some(12)),
            hit(3, "a", Some(40)),
            hit(5, "c", None),
        ];
        let fused = fuse(dense, keyword);
        assert_eq!(fused.first().map(|h| h.page), Some(Some(12)));
        assert_eq!(
            fused.first().map(|h| h.score),
            Some(1.0),
            "first in both is 1"
        );
        // Page 40 next, then the chunks without pages, then page 12's other chunk.
        assert_eq!(ids(&fused), vec![1, 3, 4, 5, 2]);
    }

    #[test]
    fn chunks_without_pages_fuse_as_plain_rrf_and_ties_go_by_id() {
        let dense = vec![hit(7, "a", None), hit(8, "b", None)];
        let keyword = vec![hit(8, "b", None), hit(7, "a", None)];
        let fused = fuse(dense, keyword);
        assert_eq!(ids(&fused), vec![7, 8]);
        assert!((fused[0].score - fused[1].score).abs() < f32::EPSILON);
        assert!(fuse(Vec::new(), Vec::new()).is_empty());
    }

    #[test]
    fn the_same_page_of_two_owners_is_two_answers() {
        // Were the two copies one page, the second would follow page 9 of b.
        let mut theirs = hit(2, "a", Some(1));
        theirs.owner = Scope::user("v");
        let dense = vec![hit(1, "a", Some(1)), theirs, hit(3, "b", Some(9))];
        let fused = fuse(dense, vec![hit(5, "c", None)]);
        assert_eq!(ids(&fused), vec![1, 5, 2, 3]);
    }
}
