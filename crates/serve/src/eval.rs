//! Retrieval evaluation: questions whose answers are known to the file (and page), run
//! through search, scored as recall@k, page recall@k and MRR.
//!
//! A question set is a TSV file, one question per line: `question<TAB>expected[<TAB>tags]`.
//! `expected` is a file locator relative to the root the documents were ingested from
//! (`pdf/long/bash.pdf`, `archives/a.zip!/docs/x.md`), optionally with `#page=N` (the 1-based
//! physical page) or `#page=A-B` (any of those pages); alternatives are separated by ` | `.
//! A first line naming its columns (`question<TAB>expected…`) is skipped. `tags` are comma-separated labels
//! (`pdf`, `german`, `scanned`, …) that the report breaks the scores down by. Empty lines
//! and lines starting with `#` are skipped.
//!
//! `expected` may be `-`: the question is about what the documents do not hold, and the
//! right answer is none: a search that finds nothing relevant, or only hits of low
//! confidence ([`ingest_index::confidence`]), has *flagged* it; such *absent* questions are
//! counted apart and never in recall (eval/absent.tsv).
//!
//! A hit answers a question when its file (or a file holding identical bytes, `also_in`)
//! is an expected one: the same locator, or one that ends with `/` and the expected path.
//! It answers the page too when it lies on the expected page.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

use extractors::Scope;
use ingest::Ingestor;
use ingest_base::error::{Error, Result};
use ingest_index::{Hit, SearchFilter, SearchMode};

/// One question with its known answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Question {
    /// The question as a user would ask it.
    pub text: String,
    /// Where the answer is; any one of them counts.
    pub expected: Vec<Expected>,
    /// Labels to break the scores down by.
    pub tags: Vec<String>,
    /// The 1-based line of the question set.
    pub line: usize,
}

/// One acceptable answer: a file, and maybe its page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expected {
    /// File locator, relative to the ingested root or absolute.
    pub path: String,
    /// The 1-based physical page, for questions answered on a page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

impl Question {
    /// Whether the question is answered on a page (and counts towards page recall).
    pub fn has_page(&self) -> bool {
        self.expected.iter().any(|e| e.page.is_some())
    }

    /// Whether the question is about what the documents do not hold (`expected` is `-`).
    pub fn is_absent(&self) -> bool {
        self.expected.is_empty()
    }
}

/// Names a header line may give the expected column (such a first line is skipped).
const HEADER_NAMES: &[&str] = &[
    "expected",
    "locator",
    "expected_locator",
    "answer",
    "target",
];

/// The most pages one `#page=A-B` range may stand for.
const MAX_PAGE_RANGE: u32 = 50;

/// Read a question set (see the module's documentation for the format).
pub fn parse_questions(tsv: &str) -> Result<Vec<Question>> {
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in tsv.lines().enumerate() {
        let line_no = i + 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut cols = line.split('\t');
        let text = cols.next().unwrap_or_default().trim();
        let expected = cols.next().unwrap_or_default().trim();
        let tags = cols.next().unwrap_or_default();
        let header = first && HEADER_NAMES.contains(&expected.to_ascii_lowercase().as_str());
        first = false;
        if header {
            continue;
        }
        let bad = |why: &str| Error::Config(format!("question set line {line_no}: {why}"));
        if text.is_empty() || expected.is_empty() {
            return Err(bad("want `question<TAB>expected[<TAB>tags]`"));
        }
        let expected = if expected == "-" {
            Vec::new()
        } else {
            expected
                .split(" | ")
                .map(|e| parse_expected(e.trim()).map_err(|why| bad(&why)))
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect()
        };
        out.push(Question {
            text: text.to_string(),
            expected,
            tags: tags
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
            line: line_no,
        });
    }
    Ok(out)
}

/// One expected locator: a file, or a file's page (`#page=N`), or each page of a range
/// (`#page=A-B`).
fn parse_expected(e: &str) -> std::result::Result<Vec<Expected>, String> {
    let (path, fragment) = match extractors::split_fragment(e) {
        (p, "") => (p, None),
        (p, f) => (p, Some(f)),
    };
    if path.is_empty() {
        return Err(format!("empty locator in {e:?}"));
    }
    let at = |page| Expected {
        path: path.to_string(),
        page,
    };
    let Some(f) = fragment else {
        return Ok(vec![at(None)]);
    };
    let unknown =
        || format!("fragment {f:?}: only #page=N or #page=A-B (pages from 1) is understood");
    let range = f.strip_prefix("page=").ok_or_else(unknown)?;
    let (a, b) = ingest::tools::parse_range("page", range).map_err(|_| unknown())?;
    let (Ok(a), Ok(b)) = (u32::try_from(a), u32::try_from(b)) else {
        return Err(unknown());
    };
    if b - a >= MAX_PAGE_RANGE {
        return Err(unknown());
    }
    Ok((a..=b).map(|p| at(Some(p))).collect())
}

/// Whether the file locator `file` is the expected `path`.
fn same_file(file: &str, path: &str) -> bool {
    file == path
        || file
            .strip_suffix(path)
            .is_some_and(|head| head.ends_with('/'))
}

/// The 1-based rank of the first hit in the right file, and of the first on the right page.
pub fn judge(question: &Question, hits: &[Hit]) -> (Option<usize>, Option<usize>) {
    judge_parts(
        question,
        hits.iter()
            .map(|h| (h.locator.as_str(), h.page, h.also_in.as_slice())),
    )
}

/// [`judge`] over hits given as (locator, page, other files holding the same content).
fn judge_parts<'a>(
    question: &Question,
    hits: impl Iterator<Item = (&'a str, Option<u32>, &'a [String])>,
) -> (Option<usize>, Option<usize>) {
    let mut file_rank = None;
    let mut page_rank = None;
    for (i, (locator, page, also_in)) in hits.enumerate() {
        let file = extractors::file_part(locator);
        let files = std::iter::once(file).chain(also_in.iter().map(String::as_str));
        let mut file_ok = false;
        let mut page_ok = false;
        for f in files {
            for e in &question.expected {
                if same_file(f, &e.path) {
                    file_ok = true;
                    page_ok |= e.page.is_some() && page == e.page;
                }
            }
        }
        if file_ok && file_rank.is_none() {
            file_rank = Some(i + 1);
        }
        if page_ok && page_rank.is_none() {
            page_rank = Some(i + 1);
        }
    }
    (file_rank, page_rank)
}

/// How one question fared.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// The question's line in the set.
    pub line: usize,
    /// The question.
    pub question: String,
    /// Rank of the first hit in an expected file (1-based), if any was returned.
    pub file_rank: Option<usize>,
    /// Rank of the first hit on an expected page, for page questions.
    pub page_rank: Option<usize>,
    /// Whether the question is answered on a page.
    pub has_page: bool,
    /// Whether the question is about what the documents do not hold.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
    /// Hits the search returned.
    pub hits: usize,
    /// Whether no hit among the first `k` has high confidence (or there is none): the
    /// search flagged the question as not covered.
    pub flagged: bool,
    /// Whether the first hit in an expected file among the first `k` has high confidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer_confident: Option<bool>,
    /// The first `k` hits' evidence, for calibrating the confidence.
    pub evidence: Vec<HitEvidence>,
    /// The first hit's relevance, if any.
    pub best_score: Option<f32>,
    /// The relevance of the first hit in an expected file, if any.
    pub answer_score: Option<f32>,
    /// Milliseconds the search took.
    pub millis: f64,
    /// The locators of the first hits, for reading misses.
    pub top: Vec<String>,
}

/// What one hit's confidence was judged from.
#[derive(Debug, Clone, Serialize)]
pub struct HitEvidence {
    /// Its cosine similarity (on the index model's scale), if ranked by meaning.
    pub cosine: Option<f32>,
    /// Its BM25 score / 80.
    pub words: f32,
    /// The share of the question's content words it holds.
    pub coverage: f32,
    /// Its confidence.
    pub confidence: ingest_index::Confidence,
    /// Whether it is in an expected file.
    pub expected: bool,
}

/// Scores over a set of questions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scores {
    /// Questions asked (absent questions not counted).
    pub questions: usize,
    /// Absent questions asked (about what the documents do not hold).
    pub absent_questions: usize,
    /// Share of absent questions answered with no hit: "nothing relevant".
    pub absent_nothing: f64,
    /// Share of absent questions flagged: no hit, or none of high confidence in the first `k`.
    pub absent_flagged: f64,
    /// Share of (answerable) questions answered with no hit at all: withheld.
    pub withheld: f64,
    /// Share of questions whose expected file is among the first `k` at high confidence.
    pub confident_recall: f64,
    /// Share of questions with a hit in an expected file among the first `k`.
    pub recall: f64,
    /// Page questions asked.
    pub page_questions: usize,
    /// Share of page questions with a hit on an expected page among the first `k`.
    pub page_recall: f64,
    /// Mean reciprocal rank of the first hit in an expected file, over all hits returned.
    pub mrr: f64,
}

impl Scores {
    fn of<'a>(outcomes: impl Iterator<Item = &'a Outcome>, k: usize) -> Scores {
        let (mut n, mut found, mut pages, mut page_found, mut rr) = (0, 0, 0, 0, 0.0);
        let (mut absent, mut nothing, mut flagged, mut withheld, mut confident) = (0, 0, 0, 0, 0);
        for o in outcomes {
            if o.absent {
                absent += 1;
                nothing += usize::from(o.hits == 0);
                flagged += usize::from(o.flagged);
                continue;
            }
            n += 1;
            withheld += usize::from(o.hits == 0);
            confident += usize::from(o.answer_confident == Some(true));
            found += usize::from(o.file_rank.is_some_and(|r| r <= k));
            rr += o.file_rank.map_or(0.0, |r| 1.0 / r as f64);
            if o.has_page {
                pages += 1;
                page_found += usize::from(o.page_rank.is_some_and(|r| r <= k));
            }
        }
        let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        Scores {
            questions: n,
            absent_questions: absent,
            absent_nothing: share(nothing, absent),
            absent_flagged: share(flagged, absent),
            withheld: share(withheld, n),
            confident_recall: share(confident, n),
            recall: share(found, n),
            page_questions: pages,
            page_recall: share(page_found, pages),
            mrr: if n == 0 { 0.0 } else { rr / n as f64 },
        }
    }
}

/// What one mode scored on a question set.
#[derive(Debug, Clone, Serialize)]
pub struct ModeReport {
    /// How hits were ranked.
    pub mode: SearchMode,
    /// What ranked them: the mode's name, or the name of the pipeline whose ranked lists
    /// were read ([`evaluate_ranked`]).
    pub label: String,
    /// Cut-off of the recall figures.
    pub k: usize,
    /// The scores over every question.
    pub all: Scores,
    /// The scores per tag.
    pub by_tag: BTreeMap<String, Scores>,
    /// Median search time, milliseconds (model loaded, query embedded, index searched).
    pub p50_ms: f64,
    /// 95th percentile search time, milliseconds.
    pub p95_ms: f64,
    /// Every question's outcome, in set order.
    pub outcomes: Vec<Outcome>,
}

/// How to run an evaluation.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Recall cut-off (recall@k).
    pub k: usize,
    /// Hits asked for per question (MRR is computed over them); at least `k`.
    pub limit: usize,
    /// Hits below this relevance are left out; `None`: none, as the tools and the CLI
    /// search by default (weak hits shown with low confidence).
    pub min_score: Option<f32>,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            k: 5,
            limit: 10,
            min_score: None,
        }
    }
}

/// Ask every question in `mode` within `scope` and score the hits.
pub fn evaluate(
    ingestor: &Ingestor,
    scope: &Scope,
    questions: &[Question],
    mode: SearchMode,
    options: &EvalOptions,
) -> Result<ModeReport> {
    let limit = options.limit.max(options.k);
    let filter = SearchFilter::default();
    let min_score = options.min_score;
    // Load the model (and warm the index) before timing.
    if let Some(q) = questions.first() {
        ingestor.search_filtered(&q.text, scope, 1, min_score, &filter, mode)?;
    }
    let mut outcomes = Vec::with_capacity(questions.len());
    for q in questions {
        let started = Instant::now();
        let hits = ingestor.search_filtered(&q.text, scope, limit, min_score, &filter, mode)?;
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        let (file_rank, page_rank) = judge(q, &hits);
        let evidence: Vec<HitEvidence> = hits
            .iter()
            .take(options.k)
            .map(|h| HitEvidence {
                cosine: h.evidence.cosine,
                words: h.evidence.words,
                coverage: h.evidence.coverage,
                confidence: h.confidence,
                expected: judge(q, std::slice::from_ref(h)).0.is_some(),
            })
            .collect();
        let high = |h: &Hit| h.confidence == ingest_index::Confidence::High;
        outcomes.push(Outcome {
            flagged: !hits.iter().take(options.k).any(high),
            answer_confident: file_rank
                .filter(|&r| r <= options.k)
                .and_then(|r| hits.get(r - 1))
                .map(high),
            evidence,
            line: q.line,
            question: q.text.clone(),
            file_rank,
            page_rank,
            has_page: q.has_page(),
            absent: q.is_absent(),
            hits: hits.len(),
            best_score: hits.first().map(|h| h.relevance),
            answer_score: file_rank
                .and_then(|r| hits.get(r.saturating_sub(1)))
                .map(|h| h.relevance),
            millis,
            top: hits
                .iter()
                .take(options.k)
                .map(|h| h.locator.clone())
                .collect(),
        });
    }
    Ok(report(
        mode,
        mode.as_str().to_string(),
        questions,
        outcomes,
        options.k,
    ))
}

/// The scores of `outcomes` (one per question, in order): over all, and per tag.
fn report(
    mode: SearchMode,
    label: String,
    questions: &[Question],
    outcomes: Vec<Outcome>,
    k: usize,
) -> ModeReport {
    let mut by_tag: BTreeMap<String, Vec<&Outcome>> = BTreeMap::new();
    for (q, o) in questions.iter().zip(&outcomes) {
        for t in &q.tags {
            by_tag.entry(t.clone()).or_default().push(o);
        }
    }
    let mut times: Vec<f64> = outcomes.iter().map(|o| o.millis).collect();
    times.sort_by(f64::total_cmp);
    ModeReport {
        mode,
        label,
        k,
        all: Scores::of(outcomes.iter(), k),
        by_tag: by_tag
            .into_iter()
            .map(|(t, os)| (t, Scores::of(os.into_iter(), k)))
            .collect(),
        p50_ms: percentile(&times, 0.50),
        p95_ms: percentile(&times, 0.95),
        outcomes,
    }
}

/// Ranked lists from another pipeline (a peer such as `scripts/peer/`), to be scored by
/// the same rules: a JSON-lines file, an optional first line
/// `{"source": NAME, "read": [FILE, …]}` (the pipeline's name and the files it could read,
/// paths as the question set writes them), then one line per question
/// `{"question": TEXT, "hits": [LOCATOR, …]}`, best first (`path#page=N` for a page).
#[derive(Debug, Clone, Default)]
pub struct RankedLists {
    /// Whose lists they are.
    pub source: String,
    /// The files the pipeline could read, when it says.
    pub read: Option<std::collections::BTreeSet<String>>,
    /// Question text → its hits' locators, best first.
    pub hits: std::collections::HashMap<String, Vec<String>>,
}

/// The most bytes of a ranked-lists file read.
pub const MAX_RANKED_BYTES: usize = 64 * 1024 * 1024;

impl RankedLists {
    /// Read the lists of `text` (see [`RankedLists`]); `source` names them when the file does
    /// not.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        if text.len() > MAX_RANKED_BYTES {
            return Err(Error::Request(format!(
                "ranked lists of {} bytes: at most {MAX_RANKED_BYTES} are read",
                text.len()
            )));
        }
        let mut out = RankedLists {
            source: source.to_string(),
            ..RankedLists::default()
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| Error::Request(format!("ranked lists, line {}: {e}", n + 1)))?;
            if let Some(name) = v.get("source").and_then(|s| s.as_str()) {
                out.source = name.to_string();
                out.read = v.get("read").and_then(|r| r.as_array()).map(|files| {
                    files
                        .iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                });
                continue;
            }
            let question = v.get("question").and_then(|q| q.as_str()).ok_or_else(|| {
                Error::Request(format!("ranked lists, line {}: no \"question\"", n + 1))
            })?;
            let hits = v
                .get("hits")
                .and_then(|h| h.as_array())
                .map(|h| {
                    h.iter()
                        .filter_map(|l| l.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            out.hits.insert(question.to_string(), hits);
        }
        Ok(out)
    }

    /// Whether the pipeline could read an expected file of `question` (true when it does
    /// not say what it read).
    pub fn can_read(&self, question: &Question) -> bool {
        self.read.as_ref().is_none_or(|read| {
            question
                .expected
                .iter()
                .any(|e| read.iter().any(|f| same_file(f, &e.path)))
        })
    }
}

/// Score `lists` on `questions` by the rules [`evaluate`] applies (a question the lists do
/// not answer counts as answered with no hit), the first `k` hits counting for recall.
pub fn evaluate_ranked(questions: &[Question], lists: &RankedLists, k: usize) -> ModeReport {
    let outcomes = questions
        .iter()
        .map(|q| {
            let hits = lists.hits.get(&q.text).map(Vec::as_slice).unwrap_or(&[]);
            let parts = hits.iter().map(|l| (l.as_str(), page_of(l), &[][..]));
            let (file_rank, page_rank) = judge_parts(q, parts);
            Outcome {
                line: q.line,
                question: q.text.clone(),
                file_rank,
                page_rank,
                has_page: q.has_page(),
                absent: q.is_absent(),
                hits: hits.len(),
                // A list without confidences flags only what it leaves empty.
                flagged: hits.is_empty(),
                answer_confident: None,
                evidence: Vec::new(),
                best_score: None,
                answer_score: None,
                millis: 0.0,
                top: hits.iter().take(k).cloned().collect(),
            }
        })
        .collect();
    report(
        SearchMode::Hybrid,
        lists.source.clone(),
        questions,
        outcomes,
        k,
    )
}

/// The page a locator's `#page=N` fragment names.
fn page_of(locator: &str) -> Option<u32> {
    let (_, fragment) = locator.rsplit_once('#')?;
    fragment
        .split('&')
        .find_map(|kv| kv.strip_prefix("page="))
        .and_then(|p| p.parse().ok())
}

/// Whether every indexed file is found by its name: one search per file with its file name
/// as the query, and one with its name's words (`pump manual v 2` for
/// `pump-manual_v2.pdf`, as a user would type them).
#[derive(Debug, Clone, Serialize)]
pub struct NamesReport {
    /// How hits were ranked.
    pub mode: SearchMode,
    /// A file counts when it is among the first `k` hits (as the hit's file or one of its
    /// identical copies).
    pub k: usize,
    /// Files and archives searched for: every entry with a point (an indexed file's passages
    /// and card, or the card of a failed, skipped or archive entry).
    pub files: usize,
    /// Files found.
    pub found: usize,
    /// The files not found, by locator.
    pub missed: Vec<String>,
    /// Files found by their name's words (the name split into words, without its
    /// extension).
    pub found_by_words: usize,
    /// The files not found by their name's words, by locator.
    pub missed_by_words: Vec<String>,
    /// Of those, the files no name query can tell apart: the first `k` hits are all files
    /// whose names have exactly the same words (`live-manual.en.*` in six formats for a top
    /// 5). Still counted as missed.
    pub ambiguous_by_words: Vec<String>,
    /// Entries of the scope that have no point to be found by (an empty file; a failed,
    /// skipped or archive entry whose card is not written yet, or an index without file
    /// cards). Not searched for.
    pub without_points: Vec<Unsearchable>,
}

/// A catalog entry search cannot find by itself (see [`NamesReport::without_points`]).
#[derive(Debug, Clone, Serialize)]
pub struct Unsearchable {
    /// Its locator.
    pub locator: String,
    /// Its catalog status: `failed`, `skipped`, `container`, or `indexed` (with no chunks).
    pub status: String,
    /// Why, as the ledger said.
    pub reason: Option<String>,
}

/// Search for every file and archive of `scope` that has points by its name in `mode`:
/// [`NamesReport`].
pub fn evaluate_names(
    ingestor: &Ingestor,
    scope: &Scope,
    mode: SearchMode,
    k: usize,
) -> Result<NamesReport> {
    let (searchable, without): (Vec<_>, Vec<_>) = ingestor
        .entries_of(scope)
        .into_iter()
        .partition(|e| e.points().is_some_and(|(_, chunks)| chunks > 0));
    let files: Vec<String> = searchable.into_iter().map(|e| e.locator).collect();
    let without_points = without
        .into_iter()
        .map(|e| Unsearchable {
            status: e.status.as_str().to_string(),
            locator: e.locator,
            reason: e.reason,
        })
        .collect();
    let filter = SearchFilter::default();
    let (mut missed, mut missed_by_words, mut ambiguous_by_words) =
        (Vec::new(), Vec::new(), Vec::new());
    let search = |query: &str| ingestor.search_filtered(query, scope, k, None, &filter, mode);
    let found = |hits: &[Hit], locator: &str| {
        hits.iter().take(k).any(|h| {
            extractors::file_part(&h.locator) == locator || h.also_in.iter().any(|l| l == locator)
        })
    };
    // Which words of a file's name a name query compares (`name_match`).
    let named =
        |locator: &str| ingest_index::name_match::words(ingest_index::name_match::stem(locator));
    for locator in &files {
        let name = locator
            .rsplit(['/', '!'])
            .find(|s| !s.is_empty())
            .unwrap_or(locator);
        if !found(&search(name)?, locator) {
            missed.push(locator.clone());
        }
        let words = ingest_embed::card::name_words(ingest_index::name_match::stem(locator));
        if words.trim().is_empty() {
            continue;
        }
        let hits = search(&words)?;
        if !found(&hits, locator) {
            missed_by_words.push(locator.clone());
            let twins = hits.iter().take(k).filter(|h| {
                let file = extractors::file_part(&h.locator);
                file != locator && named(file) == named(locator)
            });
            if twins.count() >= k {
                ambiguous_by_words.push(locator.clone());
            }
        }
    }
    Ok(NamesReport {
        mode,
        k,
        files: files.len(),
        found: files.len() - missed.len(),
        missed,
        found_by_words: files.len() - missed_by_words.len(),
        missed_by_words,
        ambiguous_by_words,
        without_points,
    })
}

/// The `q` quantile of sorted `values` (nearest rank); 0 for none.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted.get(rank - 1).copied().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(locator: &str, page: Option<u32>) -> Hit {
        Hit {
            locator: locator.into(),
            score: 0.5,
            relevance: 0.5,
            confidence: Default::default(),
            evidence: Default::default(),
            text: String::new(),
            kind: ingest_embed::ChunkKind::Passage,
            section: None,
            label: None,
            also_in: Vec::new(),
            also_in_more: 0,
            tags_more: 0,
            tags: Vec::new(),
            content_hash: "h".into(),
            content_type: "text".into(),
            page,
            sheet: None,
            slide: None,
            chunk_index: 0,
            chunk_id: 0,
            owner: extractors::Scope::default(),
        }
    }

    #[test]
    fn parses_questions_alternatives_pages_and_tags() {
        let qs = parse_questions(
            "# comment\n\nWhere?\tpdf/a.pdf#page=3 | pdf/a.pdf#page=4\tpdf, page\nWho?\tz.zip!/b.md\n",
        )
        .unwrap();
        assert_eq!(qs.len(), 2);
        assert_eq!(qs[0].line, 3);
        assert_eq!(qs[0].tags, ["pdf", "page"]);
        assert_eq!(qs[0].expected[1].page, Some(4));
        assert!(qs[0].has_page());
        assert!(!qs[1].has_page());
        assert_eq!(qs[1].expected[0].path, "z.zip!/b.md");
        let err = parse_questions("a\tb.pdf#line=3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1") && err.contains("#page=N"), "{err}");
        assert!(parse_questions("only a question\n").is_err());
        // A header line is skipped; a page range stands for each of its pages.
        let qs = parse_questions("question\texpected\tags\nQ\ta.pdf#page=3-5\n").unwrap();
        assert_eq!(qs.len(), 1);
        let pages: Vec<_> = qs[0].expected.iter().map(|e| e.page).collect();
        assert_eq!(pages, [Some(3), Some(4), Some(5)]);
        assert!(parse_questions("Q\ta.pdf#page=5-3\n").is_err());
    }

    #[test]
    fn judges_file_and_page_ranks_on_whole_path_segments() {
        let q = &parse_questions("q\tdocs/a.pdf#page=2\n").unwrap()[0];
        let hits = [
            hit("/c/xdocs/a.pdf#page=2", Some(2)),
            hit("/c/docs/a.pdf#page=1", Some(1)),
            hit("/c/docs/a.pdf#page=2", Some(2)),
        ];
        assert_eq!(judge(q, &hits), (Some(2), Some(3)));
        let mut dup = hit("/c/other.pdf#page=2", Some(2));
        dup.also_in = vec!["/c/docs/a.pdf".into()];
        assert_eq!(judge(q, &[dup]), (Some(1), Some(1)));
        assert_eq!(judge(q, &[]), (None, None));
    }

    #[test]
    fn another_pipelines_ranked_lists_are_scored_by_the_same_rules() {
        let questions = parse_questions(
            "Where is page 12?\tdocs/manual.pdf#page=12\tpdf,page\n\
             Which archive member?\tdata/a.zip!/notes.md\tarchive\n\
             Not read by the peer?\tdocs/slides.odp\todp\n\
             Nothing here?\t-\tabsent\n",
        )
        .unwrap();
        let lists = RankedLists::parse(
            "{\"source\": \"peer\", \"read\": [\"docs/manual.pdf\", \"data/a.zip!/notes.md\"]}\n\
             {\"question\": \"Where is page 12?\", \"hits\": [\"docs/manual.pdf#page=11\", \"docs/manual.pdf#page=12\"]}\n\
             {\"question\": \"Which archive member?\", \"hits\": [\"x.txt\", \"y.txt\", \"data/a.zip!/notes.md\"]}\n\
             {\"question\": \"Nothing here?\", \"hits\": []}\n",
            "file-name",
        )
        .unwrap();
        assert_eq!(lists.source, "peer");
        assert!(lists.can_read(&questions[0]) && !lists.can_read(&questions[2]));
        let r = evaluate_ranked(&questions, &lists, 2);
        assert_eq!(r.label, "peer");
        let ranks: Vec<_> = r
            .outcomes
            .iter()
            .map(|o| (o.file_rank, o.page_rank))
            .collect();
        assert_eq!(
            ranks,
            [
                (Some(1), Some(2)),
                (Some(3), None),
                (None, None),
                (None, None)
            ]
        );
        // At k = 2: one of three files, the one page; MRR (1 + 1/3 + 0) / 3.
        assert!((r.all.recall - 1.0 / 3.0).abs() < 1e-9);
        assert!((r.all.page_recall - 1.0).abs() < 1e-9);
        assert!((r.all.mrr - 4.0 / 9.0).abs() < 1e-9);
        assert_eq!(r.all.absent_nothing, 1.0);
        assert!(RankedLists::parse("{\"hits\": []}", "x").is_err());
    }

    #[test]
    fn scores_count_only_the_first_k() {
        let o = |file_rank, page_rank, has_page| Outcome {
            line: 1,
            question: String::new(),
            file_rank,
            page_rank,
            has_page,
            absent: false,
            hits: 5,
            flagged: false,
            answer_confident: None,
            evidence: Vec::new(),
            best_score: None,
            answer_score: None,
            millis: 1.0,
            top: Vec::new(),
        };
        let os = [
            o(Some(1), Some(1), true),
            o(Some(6), None, true),
            o(None, None, false),
            o(Some(2), None, false),
        ];
        let s = Scores::of(os.iter(), 5);
        assert_eq!(s.questions, 4);
        assert!((s.recall - 0.5).abs() < 1e-9);
        assert_eq!(s.page_questions, 2);
        assert!((s.page_recall - 0.5).abs() < 1e-9);
        assert!((s.mrr - (1.0 + 1.0 / 6.0 + 0.5) / 4.0).abs() < 1e-9);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
        // Absent questions count apart: answered with no hit, or not; never in recall.
        let absent = |hits| Outcome {
            absent: true,
            hits,
            flagged: hits == 0,
            ..o(None, None, false)
        };
        let os = [o(Some(1), None, false), absent(0), absent(0), absent(3)];
        let s = Scores::of(os.iter(), 5);
        assert_eq!((s.questions, s.absent_questions), (1, 3));
        assert!((s.recall - 1.0).abs() < 1e-9);
        assert!((s.absent_nothing - 2.0 / 3.0).abs() < 1e-9);
        assert!((s.absent_flagged - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.withheld, 0.0);
        let qs = parse_questions("What is banana bread?\t-\tabsent\n").unwrap();
        assert!(qs[0].is_absent() && qs[0].tags == ["absent"]);
    }
}
