//! Hybrid ranking: the meaning ranking (dense vectors) and the word ranking (BM25) of the same
//! question, fused into one list by their scores (distribution-based score fusion), page by
//! page.
//!
//! Every search of every backend goes through [`search`] (the provided
//! [`IndexRead::search`]): the backends only rank ([`IndexRead::rank`]), and a hybrid query is
//! fused here from their two single rankings, so that the embedded shard and a Qdrant server
//! rank alike. What it does beyond plain DBSF over chunks:
//!
//! - **Pages are the unit.** One chunk of page 12 ranked first by meaning and another chunk
//!   of page 12 ranked first by words are one answer found twice, not two answers found
//!   once each: a page's fused score sums, over the rankings, the normalised score of its
//!   best chunk in each. Chunk-level fusion gave both chunks half a score and let a neighbour
//!   chunk ranked fairly by both win, so a page that one ranking found was often lost in the
//!   fusion.
//! - **One hit per page first.** The page's best chunk stands for it; its other chunks follow
//!   every page's first chunk (still in the list, so a cursor reaches them), so five chunks
//!   of one page cannot fill the first five places.
//!
//! - **Neighbours agree.** A page gains a little of its better neighbour's score
//!   ([`with_neighbours`]): the section an answer belongs to runs over the pages around it.
//!
//! Content without pages (text files, sheets, slides) is ranked chunk by chunk.
//!
//! The fused scores order the hits and are their `score`; each hit also carries an absolute
//! relevance (its cosine similarity, or its BM25 score / 80, see [`fused`]) and what it was
//! made of, from which its confidence is judged (`super::confidence`).
//!
//! Why scores, not ranks: reciprocal-rank fusion (RRF, k = 2) sees only positions, so a page the words rank first by a wide margin and one they rank
//! second by a hair weigh 1/2 and 1/3 whatever the margin, and the embedding (whose cosines
//! crowd within a few hundredths on manuals) decides between pages as loudly as BM25 does.
//! On eval/dev.tsv + eval/heldout.tsv (131 questions, 104 on pages, same index and lists)
//! RRF gave page recall@5 0.846, recall@5 0.962, MRR 0.880; DBSF 0.913, 0.939, 0.880 (see
//! docs/EVALUATION.md).

use std::collections::{HashMap, HashSet};

use extractors::Scope;

use super::filter::{Condition, Filter};
use super::{payload, Hit, IndexQuery, IndexRead, Ranking, SearchFilter, MAX_SEARCH_HITS};
use crate::error::Result;

/// Candidates each ranking contributes to a fused search, at least.
pub const FUSION_CANDIDATES: usize = 100;

/// [`IndexRead::search`] on `store`: `filter` and `scope`'s access rule made one typed
/// filter, each ranking asked of the backend, ties settled by point id, a hybrid query (both
/// a vector and a text) fused, the `limit` after the `offset` best kept (`paging` is
/// `(limit, offset, min_score)`).
pub(super) fn search<S: IndexRead + ?Sized>(
    store: &S,
    scope: &Scope,
    query: &IndexQuery,
    (limit, offset, min_score): (usize, usize, Option<f32>),
    filter: &SearchFilter,
) -> Result<Vec<Hit>> {
    let end = offset.saturating_add(limit).min(MAX_SEARCH_HITS);
    if offset >= end {
        return Ok(Vec::new());
    }
    let filter = payload::search_filter(scope, filter);
    let multilingual = query
        .multilingual
        .as_deref()
        .filter(|_| store.multilingual_space());
    let hits = match (&query.vector, &query.text) {
        (Some(vector), Some(text)) => {
            fused(store, (vector, multilingual), text, end, min_score, &filter)?
        }
        (Some(vector), None) => {
            let mut hits = by_meaning(store, (vector, multilingual), end, min_score, &filter)?;
            for h in &mut hits {
                h.relevance = h.score;
                h.evidence.cosine = Some(h.score);
            }
            hits
        }
        (None, Some(text)) => {
            let ranking = match query.name {
                true => Ranking::Name(text),
                false => Ranking::Words(text),
            };
            let mut hits = ranked(store, ranking, end, min_score, &filter)?;
            for h in &mut hits {
                h.relevance = h.score / BM25_PER_RELEVANCE;
                h.evidence.words = h.relevance;
            }
            hits
        }
        (None, None) => Vec::new(),
    };
    Ok(hits.into_iter().take(end).skip(offset).collect())
}

/// Hits past the end a ranking asks for, so that ties at the end are settled by point id
/// here rather than by the engine.
const TIE_ROOM: usize = 16;

/// The best `end` points of one ranking, best first. The engine reserves room for what it is
/// asked: hence the cap. Equal scores are common (chunks repeating a text, equal BM25 sums)
/// and an engine orders them differently from call to call: ties go by point id, so that
/// the same search always pages the same way.
fn ranked<S: IndexRead + ?Sized>(
    store: &S,
    ranking: Ranking<'_>,
    end: usize,
    min_score: Option<f32>,
    filter: &Filter,
) -> Result<Vec<Hit>> {
    let want = end.saturating_add(TIE_ROOM).min(MAX_SEARCH_HITS);
    let mut hits = store.rank(ranking, want, min_score, filter)?;
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
    hits.truncate(end);
    Ok(hits)
}

/// The multilingual model's cosine (`multilingual-e5-small`, "query: " against "passage: ")
/// that counts as the index model's relevance floor (0.4, [`MULTILINGUAL_FLOOR_RELEVANCE`]):
/// E5's cosines crowd between 0.75 and 0.9 for any text. Measured on English questions
/// against German, Dutch, French, Spanish and Portuguese passages: the passage that answers
/// scores 0.78–0.87, the best passage of unrelated English questions 0.80–0.89 (p50 0.85)
/// — so a multilingual hit must also win against the index model's own hits, which its
/// relevance scale ([`MULTILINGUAL_SLOPE`]) sets (docs/EVALUATION.md, "Every language by
/// default").
pub const MULTILINGUAL_FLOOR_COSINE: f32 = 0.80;

/// The index model's relevance that [`MULTILINGUAL_FLOOR_COSINE`] maps to.
const MULTILINGUAL_FLOOR_RELEVANCE: f32 = 0.4;

/// How much relevance one point of the multilingual model's cosine is worth above
/// [`MULTILINGUAL_FLOOR_COSINE`]: E5's cosines spread over a third of MiniLM's range.
pub const MULTILINGUAL_SLOPE: f32 = 3.0;

/// A multilingual cosine on the index model's relevance scale, `floor` being the cosine
/// that maps to the relevance floor ([`multilingual_floor`]).
pub fn multilingual_relevance(cosine: f32, floor: f32) -> f32 {
    MULTILINGUAL_FLOOR_RELEVANCE + (cosine - floor) * MULTILINGUAL_SLOPE
}

/// Multilingual candidates from which the query's own floor is measured.
const MULTILINGUAL_STATS_MIN: usize = 20;

/// The multilingual cosine that counts as the relevance floor for this query: at least
/// [`MULTILINGUAL_FLOOR_COSINE`], and, over enough candidates, their mean plus
/// [`MULTILINGUAL_STANDOUT`] standard deviations — E5 finds some passage at 0.85 for any
/// question in a large corpus in other languages, so only one that stands out of the
/// query's own crowd is an answer.
fn multilingual_floor(other: &[Hit]) -> f32 {
    if other.len() < MULTILINGUAL_STATS_MIN {
        return MULTILINGUAL_FLOOR_COSINE;
    }
    let n = other.len() as f32;
    let mean = other.iter().map(|h| h.score).sum::<f32>() / n;
    let sd = (other.iter().map(|h| (h.score - mean).powi(2)).sum::<f32>() / n).sqrt();
    MULTILINGUAL_FLOOR_COSINE.max(mean + MULTILINGUAL_STANDOUT * sd)
}

/// Standard deviations above the query's crowd of multilingual cosines that a passage
/// must reach to be shown as relevant ([`multilingual_floor`]). Measured on the development
/// corpus (2 562 passages in other languages): at 3 or 4, 22 or 11 of the 50 questions
/// about what it does not hold got a hit just above the floor (45 without multilingual
/// vectors); at 5, 44. Ranking is not changed by it: only what is shown and floored.
const MULTILINGUAL_STANDOUT: f32 = 5.0;

/// The meaning ranking of a query: the index model's cosines, and, when the query has a
/// multilingual vector, the points in other languages the multilingual model ranks, on the
/// same scale ([`multilingual_relevance`]; a point both rank keeps the higher). Best first,
/// at least `min_score`, the `end` best.
fn by_meaning<S: IndexRead + ?Sized>(
    store: &S,
    vectors: (&[f32], Option<&[f32]>),
    end: usize,
    min_score: Option<f32>,
    filter: &Filter,
) -> Result<Vec<Hit>> {
    let (mut hits, by_other, shift) = by_meanings(store, vectors, end, min_score, filter, None)?;
    if by_other.is_empty() {
        return Ok(hits);
    }
    // Shown and floored by the relevance that stands out of the query's own crowd.
    for h in hits.iter_mut().filter(|h| by_other.contains(&point_of(h))) {
        h.score -= shift;
    }
    hits.retain(|h| min_score.is_none_or(|s| h.score >= s));
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
    Ok(hits)
}

/// [`by_meaning`], and the points whose relevance the multilingual model gave.
fn by_meanings<S: IndexRead + ?Sized>(
    store: &S,
    (vector, multilingual): (&[f32], Option<&[f32]>),
    end: usize,
    min_score: Option<f32>,
    filter: &Filter,
    shift: Option<f32>,
) -> Result<(Vec<Hit>, HashSet<PointKey>, f32)> {
    let dense = ranked(store, Ranking::Meaning(vector), end, min_score, filter)?;
    let Some(m) = multilingual else {
        return Ok((dense, HashSet::new(), 0.0));
    };
    // The query's own floor comes from its whole crowd of candidates (unless given: a
    // lookup of a few ids keeps the search's).
    let want = match shift {
        Some(_) => end,
        None => end.max(FUSION_CANDIDATES),
    };
    let other = ranked(store, Ranking::Multilingual(m), want, None, filter)?;
    let shift = shift.unwrap_or_else(|| {
        (multilingual_floor(&other) - MULTILINGUAL_FLOOR_COSINE) * MULTILINGUAL_SLOPE
    });
    let (mut merged, by_other) = merge_multilingual(dense, other, MULTILINGUAL_FLOOR_COSINE);
    merged.truncate(end);
    Ok((merged, by_other, shift))
}

/// `dense` (index-model cosines) with the hits of the multilingual ranking `other` merged
/// in at their [`multilingual_relevance`]; best first, ties by chunk id. Also the points
/// whose relevance the multilingual model gave (higher than their index-model cosine).
fn merge_multilingual(
    dense: Vec<Hit>,
    other: Vec<Hit>,
    floor: f32,
) -> (Vec<Hit>, HashSet<PointKey>) {
    let mut by_other = HashSet::new();
    let mut at: HashMap<(String, u64), usize> = dense
        .iter()
        .enumerate()
        .map(|(i, h)| (point_of(h), i))
        .collect();
    let mut out = dense;
    for mut hit in other {
        let relevance = multilingual_relevance(hit.score, floor);
        match at.get(&point_of(&hit)) {
            Some(&i) => {
                if let Some(h) = out.get_mut(i).filter(|h| relevance > h.score) {
                    h.score = relevance;
                    by_other.insert(point_of(h));
                }
            }
            None => {
                hit.score = relevance;
                at.insert(point_of(&hit), out.len());
                by_other.insert(point_of(&hit));
                out.push(hit);
            }
        }
    }
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.chunk_id.cmp(&b.chunk_id))
    });
    (out, by_other)
}

/// How far a passage in another language must be more relevant than every hit in the
/// question's own language for its meaning to stand for its words ([`unjudged_by_words`]).
const ACROSS_MARGIN: f32 = 0.1;

/// Below this relevance, the best hit in the question's own language is a weak answer: a
/// passage in another language more relevant than it stands for its words too.
const ACROSS_WEAK: f32 = 0.45;

/// Which of the points the multilingual model gave their relevance (`by_other`: passages in
/// another language) the question's words cannot judge, so that their meaning share stands
/// for their word share in the fusion ([`fuse_across`]): for a question in English (or too
/// short to tell), those clearly the most relevant answer — more relevant by
/// [`ACROSS_MARGIN`] than any hit in the question's language (its cosine, or its BM25 score
/// / [`BM25_PER_RELEVANCE`]), or more relevant when that best is weak ([`ACROSS_WEAK`]).
/// Giving it to every such passage cost English questions their English answers on the
/// development corpus (a translation of the same manual outranked the original):
/// docs/EVALUATION.md, "Every language by default".
fn unjudged_by_words(
    text: &str,
    dense: &[Hit],
    keyword: &[Hit],
    by_other: &HashSet<PointKey>,
) -> HashSet<PointKey> {
    if by_other.is_empty() || crate::embed::language::in_other_language(text) {
        return HashSet::new();
    }
    let words = keyword
        .first()
        .map_or(0.0, |h| h.score / BM25_PER_RELEVANCE);
    let own = dense
        .iter()
        .filter(|h| !by_other.contains(&point_of(h)))
        .map(|h| h.score)
        .fold(words, f32::max);
    dense
        .iter()
        .filter(|h| by_other.contains(&point_of(h)))
        .filter(|h| h.score >= own + ACROSS_MARGIN || (own < ACROSS_WEAK && h.score > own))
        .map(point_of)
        .collect()
}

/// The BM25 score that counts as much as a cosine of 1 in a hybrid hit's relevance. Set on
/// the development corpus (35 231 points): the BM25 score of the best hit of the 50
/// questions about what it does not hold reaches 34.5 (median 16), the answers of the 131
/// real questions whose cosine is low (a part number, German questions) score 34–78; so
/// 80 puts a keyword-only answer above the relevance floor where the absent questions stay
/// below it (docs/EVALUATION.md, "Nothing relevant"). BM25 grows with the log of the corpus
/// size: on a much smaller index the words count a little less.
pub const BM25_PER_RELEVANCE: f32 = 80.0;

/// A point: its owner's scope key and its id.
type PointKey = (String, u64);

/// Which point a hit is: its owner's scope and its id.
fn point_of(hit: &Hit) -> PointKey {
    (hit.owner.key(), hit.chunk_id)
}

/// A hybrid search: its meaning ranking and its word ranking, each of the best
/// [`FUSION_CANDIDATES`] (or `end`, if more) points `filter` lets through, fused by [`fuse`];
/// the `end` best.
///
/// The fused scores order the hits (their `score`, 1 for the best). Each hit also comes back
/// with an absolute relevance as its `relevance`, comparable between searches so that a threshold can use it: its cosine
/// similarity to the query, or its BM25 score divided by [`BM25_PER_RELEVANCE`] when that is
/// higher (a passage holding the question's rare words is relevant whatever the embedding
/// says: a part number, a German question to an English model). A hit the words found
/// outside the meaning ranking's candidates has its cosine looked up by id. With
/// `min_score`, hits below it are left out after the fusion (so the others keep their
/// order). When the words rank nothing (no point holds any of them), the meaning ranking is
/// the answer.
fn fused<S: IndexRead + ?Sized>(
    store: &S,
    (vector, multilingual): (&[f32], Option<&[f32]>),
    text: &str,
    end: usize,
    min_score: Option<f32>,
    filter: &Filter,
) -> Result<Vec<Hit>> {
    let candidates = end.clamp(FUSION_CANDIDATES, MAX_SEARCH_HITS);
    let (dense, mut by_other, shift) = by_meanings(
        store,
        (vector, multilingual),
        candidates,
        None,
        filter,
        None,
    )?;
    let keyword = ranked(store, Ranking::Words(text), candidates, None, filter)?;
    let across = unjudged_by_words(text, &dense, &keyword, &by_other);
    let asked = in_named_language(text, &dense, &keyword);
    let mut cosine: HashMap<(String, u64), f32> =
        dense.iter().map(|h| (point_of(h), h.score)).collect();
    let bm25: HashMap<(String, u64), f32> =
        keyword.iter().map(|h| (point_of(h), h.score)).collect();
    let fused = if keyword.is_empty() {
        dense
    } else {
        fuse_across(dense, keyword, &across, &asked, lookup(text))
    };
    let missing: Vec<u64> = fused
        .iter()
        .filter(|h| !cosine.contains_key(&point_of(h)))
        .map(|h| h.chunk_id)
        .collect();
    if !missing.is_empty() {
        let mut these = filter.clone();
        these.must.push(Condition::HasId(missing.clone()));
        let vectors = (vector, multilingual);
        let (found, also_other, _) =
            by_meanings(store, vectors, missing.len(), None, &these, Some(shift))?;
        by_other.extend(also_other);
        for hit in found {
            cosine.insert(point_of(&hit), hit.score);
        }
    }
    Ok(fused
        .into_iter()
        .filter_map(|mut hit| {
            // A point gone between the two searches has no cosine: it is not an answer.
            let point = point_of(&hit);
            let words = bm25.get(&point).map_or(0.0, |s| s / BM25_PER_RELEVANCE);
            // A passage the multilingual model found is shown (and floored) by how far it
            // stands out of the query's own crowd of such passages.
            // Unless the question asks for its language: then it is no crowd's artefact.
            let lower = if by_other.contains(&point) && !asked.contains(&point) {
                shift
            } else {
                0.0
            };
            let meaning = cosine.get(&point)? - lower;
            hit.relevance = meaning.max(words);
            hit.evidence.cosine = Some(meaning);
            hit.evidence.words = words;
            min_score.is_none_or(|m| hit.relevance >= m).then_some(hit)
        })
        .take(end)
        .collect())
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

/// How much of the better of its two neighbouring pages' fused scores a page gains
/// ([`with_neighbours`]).
const NEIGHBOUR_AGREEMENT: f32 = 0.2;

/// Each page's fused score plus [`NEIGHBOUR_AGREEMENT`] times the better of its neighbours'
/// (the pages before and after it in the same copy of the same content, when they are
/// candidates at all): an answer rarely stands alone on its page — the section it belongs to
/// runs over the pages around it, which the question's words and meaning find too, while a
/// page that matches by accident (an index, a table of contents, another chapter's
/// example) has neighbours that do not. Chunks without pages are left as they are.
///
/// Measured on the development corpus (258 page questions of eval/dev.tsv, heldout.tsv and
/// large.tsv, hybrid): page recall@5 223 → 226, first place 157 → 158; at 0.3, 227 and 157,
/// at 0.5, 224 and 154 (and file recall fell); the mean of both neighbours instead of the
/// better one, 224 and 156. Scoring a page's words over its whole text (each question term's
/// best chunk on the page, summed) gave 224 and 151, and was left out (docs/EVALUATION.md,
/// "The right page").
fn with_neighbours(units: HashMap<Unit, f32>) -> HashMap<Unit, f32> {
    let score = |u: &Unit| units.get(u).copied().unwrap_or(0.0);
    units
        .iter()
        .map(|(u, &s)| {
            let agreement = match u {
                Unit::Page(owner, hash, page) => {
                    let at = |p: u32| Unit::Page(owner.clone(), hash.clone(), p);
                    let before = page.checked_sub(1).map_or(0.0, |p| score(&at(p)));
                    let after = page.checked_add(1).map_or(0.0, |p| score(&at(p)));
                    before.max(after)
                }
                Unit::Chunk(..) => 0.0,
            };
            (u.clone(), s + NEIGHBOUR_AGREEMENT * agreement)
        })
        .collect()
}

/// Each score of `ranking` mapped so that the mean − 3σ of its first [`FUSION_CANDIDATES`]
/// scores is 0 and their mean + 3σ is 1 (distribution-based score fusion, Qdrant's DBSF): a
/// standout keeps its lead, a crowd of near-equal scores stays near-equal. Below 0 counts as
/// 0. All equal (or one hit): each 0.5. The statistics come from a fixed number of hits, so
/// a longer list (a later page) maps the same scores the same way.
///
/// With `absent_is_zero` (the keyword ranking of a [`lookup`] query, which lists every
/// passage holding one of its words), a list shorter than [`FUSION_CANDIDATES`] is all the
/// index holds of those words: the missing places count as scores of 0, so the few passages
/// holding a rare word (a sender's name, a part number) stand out as far as they do instead
/// of being a flat crowd of one or two.
fn normalized(ranking: &[Hit], absent_is_zero: bool) -> Vec<f32> {
    let mut head: Vec<f64> = ranking
        .get(..FUSION_CANDIDATES)
        .unwrap_or(ranking)
        .iter()
        .map(|h| f64::from(h.score))
        .filter(|s| s.is_finite())
        .collect();
    if absent_is_zero && !head.is_empty() {
        head.resize(FUSION_CANDIDATES, 0.0);
    }
    let n = head.len().max(1) as f64;
    let mean = head.iter().sum::<f64>() / n;
    let variance = head.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n;
    let spread = 6.0 * variance.sqrt();
    let flat = spread <= f64::EPSILON * mean.abs().max(1.0);
    ranking
        .iter()
        .map(|h| {
            if !h.score.is_finite() {
                0.0
            } else if flat {
                0.5
            } else {
                ((f64::from(h.score) - mean) / spread + 0.5).max(0.0) as f32
            }
        })
        .collect()
}

/// Fuses `dense` and `keyword` (each best first) into one list, best first: each ranking's
/// scores [`normalized`], a unit's score the sum over the rankings of its best chunk's, then
/// every score divided by the best one (1 is the best hit of this search). Ties go by chunk
/// id, so the same search always pages the same way.
#[cfg(test)]
pub(super) fn fuse(dense: Vec<Hit>, keyword: Vec<Hit>) -> Vec<Hit> {
    fuse_across(dense, keyword, &HashSet::new(), &HashSet::new(), false)
}

/// Words of a query, at most, that make it a lookup: a name, a sender, an identifier, whose
/// words decide (a question's meaning is spread over many passages; a lookup's rare words are
/// in few). Its keyword ranking is [`normalized`] with absent places as 0.
const LOOKUP_WORDS: usize = 4;

/// Whether `text` is a lookup ([`LOOKUP_WORDS`]).
fn lookup(text: &str) -> bool {
    text.split_whitespace().count() <= LOOKUP_WORDS
}

/// How much a page (or chunk) in the language a question names gains in the fusion, on its
/// scale (each ranking's best share is about 1). Measured on the questions of the
/// development sets that name a language (30; docs/EVALUATION.md, "A language asked for"): at
/// 0 (only shown without the crowd's shift) `large.tsv` 0.918 / 0.870 / 0.878, at 0.5
/// 0.928 / 0.870 / 0.887, at 1 0.941 / 0.870 / 0.895, at 1.5 0.948 / 0.870 / 0.904 with one
/// answer page less in first place, at 2.5 page recall fell.
const NAMED_LANGUAGE_GAIN: f32 = 1.0;

/// The candidates written in the one language other than English that `text` names
/// ([`crate::embed::language::named_language`]: `according to the Polish edition…`): what
/// it asks for is in that language, where the edition in the question's own language would
/// otherwise win on every word. Empty when it names none.
fn in_named_language(text: &str, dense: &[Hit], keyword: &[Hit]) -> HashSet<PointKey> {
    use crate::embed::language::{named_language, other_language};
    let Some(lang) = named_language(text) else {
        return HashSet::new();
    };
    let mut seen = HashSet::new();
    dense
        .iter()
        .chain(keyword)
        .filter(|h| seen.insert(point_of(h)) && other_language(&h.text) == Some(lang))
        .map(point_of)
        .collect()
}

/// How many places of each ranking (each locator once) a file must be found in, by both,
/// for [`FILE_AGREEMENT`].
const AGREEMENT_DEPTH: usize = 30;

/// What a file found by both rankings gains on its best hit, as a share of the best hit's
/// fused score ([`with_file_agreement`]).
///
/// Measured on the development index (203 questions of eval/paraphrase.tsv, dev.tsv and
/// heldout.tsv, docs/EVALUATION.md "Siblings apart: a file both rankings find"): at 0.2
/// paraphrase recall@5 0.903 → 0.958 with no file or page lost on dev and held-out; on every
/// hit of the file instead of its best, nothing gained and dev files lost (the file crowding
/// the list rises whole); below 0.13 fewer gains, from 0.25 held-out answer pages lost.
const FILE_AGREEMENT: f32 = 0.2;

/// A file's identity in a ranking: its owner and its locator without the fragment (an
/// archive member is a file of its own).
type FileKey = (String, String);

fn file_of(hit: &Hit) -> FileKey {
    (
        hit.owner.key(),
        extractors::file_part(&hit.locator).to_string(),
    )
}

/// The files among the first [`AGREEMENT_DEPTH`] locators of both `dense` and `keyword`
/// (each best first). When the question names a language (`asked`, its points in that
/// language), only the files holding one of them: the question asks for that edition, and
/// its siblings in other languages are what both rankings find best.
fn files_found_by_both(
    dense: &[Hit],
    keyword: &[Hit],
    asked: &HashSet<PointKey>,
) -> HashSet<FileKey> {
    let first_files = |ranking: &[Hit]| {
        let mut locators = HashSet::new();
        let mut files = HashSet::new();
        for hit in ranking {
            if locators.len() >= AGREEMENT_DEPTH {
                break;
            }
            if locators.insert((hit.owner.key(), hit.locator.as_str())) {
                files.insert(file_of(hit));
            }
        }
        files
    };
    let by_meaning = first_files(dense);
    let in_language: HashSet<FileKey> = dense
        .iter()
        .chain(keyword)
        .filter(|h| asked.contains(&point_of(h)))
        .map(file_of)
        .collect();
    first_files(keyword)
        .into_iter()
        .filter(|f| by_meaning.contains(f) && (asked.is_empty() || in_language.contains(f)))
        .collect()
}

/// File-level evidence: the best hit (in `ranked`, best first) of each file that both
/// rankings found among their first places gains [`FILE_AGREEMENT`] of the best score.
/// Siblings share a vocabulary (a project's manual, FAQ and reference; the issues of one
/// newsletter): the one whose words and whose meaning both point at it is the one asked
/// about, even when another's single passage scores higher by one of them. Only the best
/// hit gains: lifting all of a file's hits would lift the file that already crowds the list.
fn with_file_agreement(ranked: &mut [(f32, Hit)], agreeing: &HashSet<FileKey>) {
    // Among the hits of one file (a search under its locator) there is nothing to tell
    // apart: its best hit is first already, and a lift would only say less of the others.
    let first_file = ranked.first().map(|(_, h)| file_of(h));
    if agreeing.is_empty() || ranked.iter().all(|(_, h)| Some(file_of(h)) == first_file) {
        return;
    }
    let gain = FILE_AGREEMENT * ranked.first().map_or(0.0, |(s, _)| s.max(0.0));
    let mut lifted = HashSet::new();
    for (score, hit) in ranked.iter_mut() {
        let file = file_of(hit);
        if agreeing.contains(&file) && lifted.insert(file) {
            *score += gain;
        }
    }
}

/// [`fuse`], where the points of `dense` in `across` are passages in another language than
/// the question's that the multilingual model found: words cannot judge them (the question's
/// words are not theirs), so their meaning share stands for their word share too, unless
/// the words gave them more; and a unit holding a point of `asked` (in the language the
/// question names) gains [`NAMED_LANGUAGE_GAIN`].
fn fuse_across(
    dense: Vec<Hit>,
    keyword: Vec<Hit>,
    across: &HashSet<PointKey>,
    asked: &HashSet<PointKey>,
    lookup: bool,
) -> Vec<Hit> {
    let agreeing = files_found_by_both(&dense, &keyword, asked);
    // Per chunk: its meaning share and its word share; per unit: its best chunk's in each.
    let mut chunks: HashMap<(String, u64), ([f32; 2], Hit)> = HashMap::new();
    let mut units: HashMap<Unit, [f32; 2]> = HashMap::new();
    let mut in_asked_language: HashSet<Unit> = HashSet::new();
    for (side, ranking) in [dense, keyword].into_iter().enumerate() {
        let shares = normalized(&ranking, lookup && side == 1);
        for (hit, share) in ranking.into_iter().zip(shares) {
            let key = (hit.owner.key(), hit.chunk_id);
            // Meaning standing for words, for a passage the words cannot judge.
            let standing_in = side == 0 && across.contains(&key);
            let u = unit(&hit);
            if asked.contains(&key) {
                in_asked_language.insert(u.clone());
            }
            let slot = units.entry(u).or_insert([f32::MIN; 2]);
            for s in 0..2 {
                if s == side || (standing_in && s == 1) {
                    if let Some(v) = slot.get_mut(s) {
                        *v = v.max(share);
                    }
                }
            }
            let entry = chunks.entry(key).or_insert(([0.0; 2], hit));
            for s in 0..2 {
                if s == side || (standing_in && s == 1) {
                    if let Some(v) = entry.0.get_mut(s) {
                        *v = v.max(share);
                    }
                }
            }
        }
    }
    let units = with_neighbours(
        units
            .into_iter()
            .map(|(u, [m, w])| {
                let gain = match in_asked_language.contains(&u) {
                    true => NAMED_LANGUAGE_GAIN,
                    false => 0.0,
                };
                (u, m.max(0.0) + w.max(0.0) + gain)
            })
            .collect(),
    );
    let chunks: HashMap<(String, u64), (f32, Hit)> = chunks
        .into_iter()
        .map(|(k, ([m, w], hit))| (k, (m + w, hit)))
        .collect();
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
    with_file_agreement(&mut first, &agreeing);
    first.sort_by(order);
    rest.sort_by(order);
    let top = first
        .first()
        .map_or(1.0, |(s, _)| *s)
        .max(f32::MIN_POSITIVE);
    first
        .into_iter()
        .chain(rest)
        .map(|(score, mut hit)| {
            hit.score = score / top;
            hit
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use extractors::Scope;

    fn hit(id: u64, hash: &str, page: Option<u32>, score: f32) -> Hit {
        Hit {
            locator: format!("{hash}.pdf"),
            score,
            relevance: score,
            confidence: Default::default(),
            evidence: Default::default(),
            text: String::new(),
            section: None,
            label: None,
            also_in: Vec::new(),
            also_in_more: 0,
            tags_more: 0,
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
    fn multilingual_hits_join_the_meaning_ranking_on_its_scale() {
        // Chunk 2 (German) has index-model cosine 0.1 and multilingual cosine 0.85; chunk 9
        // only the multilingual model ranks. Chunk 1 (English) has no multilingual vector.
        let dense = vec![hit(1, "en", None, 0.5), hit(2, "de", None, 0.1)];
        let other = vec![hit(2, "de", None, 0.85), hit(9, "nl", None, 0.79)];
        let (merged, by_other) = merge_multilingual(dense, other, MULTILINGUAL_FLOOR_COSINE);
        assert_eq!(ids(&merged), vec![2, 1, 9]);
        let relevance = |c: f32| {
            MULTILINGUAL_FLOOR_RELEVANCE + (c - MULTILINGUAL_FLOOR_COSINE) * MULTILINGUAL_SLOPE
        };
        assert!((merged[0].score - relevance(0.85)).abs() < 1e-6);
        assert!(
            merged[2].score < MULTILINGUAL_FLOOR_RELEVANCE,
            "below the floor's cosine"
        );
        let key = |id: u64| (Scope::user("u").key(), id);
        assert!(by_other.contains(&key(2)) && by_other.contains(&key(9)));
        assert!(!by_other.contains(&key(1)));
    }

    #[test]
    fn a_passage_in_another_language_is_not_judged_by_the_questions_words() {
        // Meaning ranks the Dutch letter (7) first; the words know only English chunks.
        let dense = vec![
            hit(7, "nl", None, 0.47),
            hit(1, "a", None, 0.43),
            hit(2, "b", None, 0.42),
            hit(3, "c", None, 0.40),
        ];
        let keyword = vec![
            hit(1, "a", None, 9.0),
            hit(2, "b", None, 7.0),
            hit(3, "c", None, 2.0),
        ];
        // Words judging it: the English chunks the words found win.
        assert_ne!(ids(&fuse(dense.clone(), keyword.clone()))[0], 7);
        // Not judged by words: its meaning share stands for both.
        let across = HashSet::from([(Scope::user("u").key(), 7)]);
        assert_eq!(
            ids(&fuse_across(
                dense,
                keyword,
                &across,
                &HashSet::new(),
                false
            ))[0],
            7
        );
    }

    #[test]
    fn only_a_clearly_better_passage_in_another_language_escapes_the_words() {
        let key = |id: u64| (Scope::user("u").key(), id);
        let other = HashSet::from([key(7)]);
        let english = "When is the car park at the harbour resurfaced?";
        // The best English hit is weak (0.43): the letter, more relevant, escapes.
        let dense = vec![hit(7, "nl", None, 0.47), hit(1, "a", None, 0.43)];
        assert_eq!(unjudged_by_words(english, &dense, &[], &other), other);
        // A strong English hit (0.6): the letter needs a lead of ACROSS_MARGIN.
        let dense = vec![hit(7, "nl", None, 0.65), hit(1, "a", None, 0.6)];
        assert!(unjudged_by_words(english, &dense, &[], &other).is_empty());
        let dense = vec![hit(7, "nl", None, 0.71), hit(1, "a", None, 0.6)];
        assert_eq!(unjudged_by_words(english, &dense, &[], &other), other);
        // The words' best counts as an English hit (BM25 80 = relevance 1).
        let words = vec![hit(2, "b", None, 80.0)];
        assert!(unjudged_by_words(english, &dense, &words, &other).is_empty());
        // A question in another language than English is judged by its words.
        let japanese = "港の駐車場はいつ舗装し直されますか、その間どこに駐車できますか？";
        let dense = vec![hit(7, "nl", None, 0.47), hit(1, "a", None, 0.2)];
        assert!(unjudged_by_words(japanese, &dense, &[], &other).is_empty());
    }

    #[test]
    fn a_page_found_by_each_ranking_through_different_chunks_is_found_twice() {
        // Page 12 of a: chunk 1 first by meaning, chunk 2 first by words. Chunk 3 (page 40)
        // second in both, which chunk-level fusion ranks first (two fair shares beat one
        // top share).
        let dense = vec![
            hit(1, "a", Some(12), 0.9),
            hit(3, "a", Some(40), 0.8),
            hit(4, "b", None, 0.1),
        ];
        let keyword = vec![
            hit(2, "a", Some(12), 9.0),
            hit(3, "a", Some(40), 8.0),
            hit(5, "c", None, 1.0),
        ];
        let fused = fuse(dense, keyword);
        assert_eq!(fused.first().map(|h| h.page), Some(Some(12)));
        assert_eq!(fused.first().map(|h| h.score), Some(1.0), "the best is 1");
        // Page 40 next, then the chunks without pages, then page 12's other chunk.
        assert_eq!(ids(&fused), vec![1, 3, 4, 5, 2]);
        // Every page's first chunk in score order (the other chunks follow).
        assert!(fused.windows(2).take(3).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn of_two_equal_pages_the_one_whose_neighbour_is_found_too_comes_first() {
        // Pages 9 and 5 of one file score alike (and page 9's chunk id would put it first);
        // page 4 is found too, so page 5 is within a section that answers.
        let ranking = || {
            vec![
                hit(1, "a", Some(9), 0.8),
                hit(2, "a", Some(5), 0.8),
                hit(3, "a", Some(4), 0.6),
                hit(4, "b", Some(8), 0.1),
                hit(5, "b", Some(1), 0.1),
            ]
        };
        let fused = fuse(ranking(), ranking());
        assert_eq!(fused.first().map(|h| h.page), Some(Some(5)));
        // Page 4, next to the best, passes the lone page 9 by less than page 5 does.
        assert_eq!(ids(&fused)[..3], [2, 3, 1]);
        // Another file's page 8 is no neighbour of page 9.
        let alone = fuse(ranking()[..2].to_vec(), ranking()[..2].to_vec());
        assert_eq!(ids(&alone), vec![1, 2], "without a neighbour: a tie, by id");
    }

    #[test]
    fn a_page_in_the_language_the_question_names_gains() {
        // The English edition leads both rankings; the Polish edition's page follows.
        let dense = vec![
            hit(1, "en", Some(3), 0.8),
            hit(2, "pl", Some(3), 0.6),
            hit(3, "x", Some(1), 0.2),
        ];
        let keyword = vec![
            hit(1, "en", Some(3), 20.0),
            hit(2, "pl", Some(3), 12.0),
            hit(3, "x", Some(1), 2.0),
        ];
        assert_eq!(ids(&fuse(dense.clone(), keyword.clone()))[0], 1);
        let asked: HashSet<PointKey> = [point_of(&dense[1])].into();
        let fused = fuse_across(dense, keyword, &HashSet::new(), &asked, false);
        assert_eq!(ids(&fused), vec![2, 1, 3]);
    }

    #[test]
    fn a_wide_lead_in_one_ranking_outweighs_a_narrow_one_in_the_other() {
        // x is far ahead by meaning, y a hair ahead by words: ranks alone would call it a
        // tie (and chunk ids would put y first); the scores do not.
        let dense = vec![
            hit(2, "x", None, 0.90),
            hit(1, "y", None, 0.50),
            hit(3, "z", None, 0.49),
            hit(4, "w", None, 0.48),
        ];
        let keyword = vec![
            hit(1, "y", None, 10.0),
            hit(2, "x", None, 9.9),
            hit(3, "z", None, 1.0),
            hit(4, "w", None, 0.9),
        ];
        assert_eq!(ids(&fuse(dense, keyword)), vec![2, 1, 3, 4]);
    }

    #[test]
    fn a_file_both_rankings_find_gains_on_its_best_hit_only() {
        // Siblings: the manual's passages rank first by meaning alone; the FAQ is found by
        // meaning and by words, the reference by words alone.
        let dense = vec![
            hit(1, "manual", None, 0.80),
            hit(2, "manual", None, 0.79),
            hit(3, "faq", None, 0.70),
            hit(4, "faq", None, 0.60),
        ];
        let keyword = vec![hit(5, "reference", None, 9.0), hit(4, "faq", None, 3.0)];
        let none = HashSet::new();
        let agreeing = files_found_by_both(&dense, &keyword, &none);
        let faq = (Scope::user("u").key(), "faq.pdf".to_string());
        assert_eq!(agreeing, HashSet::from([faq.clone()]));
        // Found beyond the first places of one ranking: no agreement.
        let far: Vec<Hit> = (0..AGREEMENT_DEPTH as u64)
            .map(|i| hit(100 + i, &format!("f{i}"), None, 1.0))
            .chain([hit(4, "faq", None, 0.5)])
            .collect();
        assert!(files_found_by_both(&far, &keyword, &none).is_empty());
        // A question naming a language: only the files written in it (the manual's chunk 2).
        let asked = HashSet::from([(Scope::user("u").key(), 2)]);
        let both = vec![hit(2, "manual", None, 2.0), hit(4, "faq", None, 1.0)];
        let manual = (Scope::user("u").key(), "manual.pdf".to_string());
        assert_eq!(
            files_found_by_both(&dense, &both, &asked),
            HashSet::from([manual])
        );

        let mut ranked: Vec<(f32, Hit)> = [
            (1, "manual", 1.0),
            (2, "manual", 0.95),
            (3, "faq", 0.9),
            (4, "faq", 0.85),
        ]
        .into_iter()
        .map(|(id, f, s)| (s, hit(id, f, None, s)))
        .collect();
        with_file_agreement(&mut ranked, &agreeing);
        let scores: Vec<f32> = ranked.iter().map(|(s, _)| *s).collect();
        // The FAQ's best hit gains a fifth of the best score; its other hit, nothing.
        assert_eq!(scores, vec![1.0, 0.95, 0.9 + FILE_AGREEMENT, 0.85]);
        // The hits of one file alone keep their scores.
        let mut one_file = vec![
            (1.0, hit(3, "faq", None, 1.0)),
            (0.9, hit(4, "faq", None, 0.9)),
        ];
        with_file_agreement(&mut one_file, &agreeing);
        assert_eq!(
            one_file.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            vec![1.0, 0.9]
        );

        // In the fusion, the FAQ's best hit now leads the manual's.
        let fused = fuse(dense, keyword);
        let first_of = |file: &str| fused.iter().position(|h| h.content_hash == file);
        assert!(first_of("faq") < first_of("manual"), "{:?}", ids(&fused));
    }

    #[test]
    fn chunks_without_pages_fuse_chunk_by_chunk_and_ties_go_by_id() {
        let dense = vec![hit(7, "a", None, 0.9), hit(8, "b", None, 0.5)];
        let keyword = vec![hit(8, "b", None, 5.0), hit(7, "a", None, 1.0)];
        let fused = fuse(dense, keyword);
        assert_eq!(ids(&fused), vec![7, 8]);
        assert!((fused[0].score - fused[1].score).abs() < 1e-6);
        assert!(fuse(Vec::new(), Vec::new()).is_empty());
        // One hit in a ranking (no spread) counts as middling, not as nothing.
        let fused = fuse(vec![hit(7, "a", None, 0.3)], vec![hit(8, "b", None, 2.0)]);
        assert_eq!(ids(&fused), vec![7, 8]);
        assert!(fused.iter().all(|h| (h.score - 1.0).abs() < 1e-6));
    }

    #[test]
    fn a_lookups_rare_word_held_by_one_passage_outweighs_a_crowd_by_meaning() {
        // A sender's name: by meaning a crowd of near-equal passages, by words one or two.
        let dense: Vec<Hit> = (0..FUSION_CANDIDATES as u64)
            .map(|i| hit(i, "crowd", None, 0.24 - i as f32 / 10_000.0))
            .collect();
        let none = HashSet::new();
        let one = vec![hit(500, "mail", None, 21.4)];
        let two = vec![hit(500, "mail", None, 21.4), hit(501, "card", None, 20.9)];
        assert_eq!(
            ids(&fuse_across(dense.clone(), one.clone(), &none, &none, true))[0],
            500
        );
        let fused = fuse_across(dense.clone(), two.clone(), &none, &none, true);
        assert_eq!(ids(&fused).get(..2), Some(&[500, 501][..]));
        // A question's (not a lookup's) short list is a crowd of its own, as before.
        assert_ne!(
            ids(&fuse_across(dense.clone(), one, &none, &none, false))[0],
            500
        );
        assert!(!lookup("Where do used batteries have to go?"));
        assert!(lookup("Ottoline Quarrington"));
    }

    #[test]
    fn a_longer_list_maps_the_first_scores_alike() {
        // A later page asks for more candidates: the first ones keep their scores.
        let ranking = |n: u64| -> Vec<Hit> {
            (0..n)
                .map(|i| hit(i, "a", None, 1.0 - i as f32 / 1000.0))
                .collect()
        };
        let short = normalized(&ranking(FUSION_CANDIDATES as u64), false);
        let long = normalized(&ranking(3 * FUSION_CANDIDATES as u64), false);
        assert_eq!(short.as_slice(), long.get(..short.len()).unwrap());
        assert!(long.iter().all(|s| *s >= 0.0), "none below 0");
        // A score that is not a number counts as nothing and spoils no other.
        let mut odd = ranking(3);
        odd[1].score = f32::NAN;
        let mapped = normalized(&odd, false);
        assert_eq!(mapped[1], 0.0);
        assert!(mapped[0] > 0.5 && mapped[2] < 0.5, "{mapped:?}");
    }

    #[test]
    fn the_same_page_of_two_owners_is_two_answers() {
        // Were the two copies one page, the second would follow page 9 of b.
        let mut theirs = hit(2, "a", Some(1), 0.75);
        theirs.owner = Scope::user("v");
        let dense = vec![hit(1, "a", Some(1), 0.9), theirs, hit(3, "b", Some(9), 0.7)];
        let fused = fuse(dense, vec![hit(5, "c", None, 3.0)]);
        assert_eq!(ids(&fused), vec![1, 5, 2, 3]);
    }
}
