//! Whether a hit answers the question: its confidence, judged from its evidence, and whether
//! it has any support at all.
//!
//! A fixed floor on the cosine similarity withheld answers: on questions put in other words
//! than the passage's (a paraphrase, a question where the text states, a number asked in
//! words) the right passage scores 0.16–0.37 with all-MiniLM-L6-v2, below the 0.4 that kept
//! the answers to questions about what the documents do not hold out. So nothing is left out
//! by a floor any more; each hit is marked instead:
//!
//! - **supported** (shown) when the meaning or the words tie it to the question at all: it
//!   holds one of the question's content words (stemmed, without stop words), or its cosine
//!   reaches [`SUPPORT_COSINE`] of the model's floor. A search whose candidates have no
//!   support answers "nothing relevant" (the one case it still does).
//! - **high** confidence when its cosine reaches the model's floor by [`CONFIDENT_COSINE`]
//!   or its BM25 score / 80 reaches the floor (what the questions about what the documents
//!   do not hold rarely reach), or when it holds most of the question's content words
//!   ([`COVERED`]) at a cosine not far below the floor ([`COVERED_COSINE`]): the two signals
//!   agree.
//! - **low** otherwise: the closest passages, shown and flagged, so that an agent can read
//!   them and decide, instead of being told the documents do not cover what they do.
//!
//! Measured on the development sets (docs/EVALUATION.md, "Answer, flag, never hide").

use std::sync::OnceLock;

use super::keywords::Keywords;

/// Whether a hit answers the question.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// Its relevance or its agreement of meaning and words says it does.
    #[default]
    High,
    /// The closest passage found, but weakly tied to the question: read it before relying
    /// on it.
    Low,
}

impl Confidence {
    /// The name answers give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Low => "low",
        }
    }
}

/// What a hit's relevance was made of.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Evidence {
    /// Its cosine similarity to the query on the index model's scale (a passage found by
    /// the multilingual model mapped onto it); `None` when the search did not rank by
    /// meaning.
    pub cosine: Option<f32>,
    /// Its BM25 score / [`super::fusion::BM25_PER_RELEVANCE`]; 0 when the words did not rank it.
    pub words: f32,
    /// The share of the question's content words (stemmed, no stop words) that its text,
    /// section path or file name holds, 0..1 ([`Asked::coverage`]).
    pub coverage: f32,
}

/// The share of `floor` that a cosine must reach to tie a hit holding none of the question's
/// words to the question at all.
pub const SUPPORT_COSINE: f32 = 0.5;

/// How far above the floor a cosine alone must be for high confidence: the absent questions'
/// best cosines crowd between the floor and it (their median 0.38, 90th percentile 0.55 on
/// the development corpus; the answers' median 0.64).
pub const CONFIDENT_COSINE: f32 = 0.15;

/// The share of the question's content words that makes a hit's words agree with its
/// meaning ([`judge`]).
pub const COVERED: f32 = 0.75;

/// How far below the floor the cosine of a hit holding [`COVERED`] of the question's words
/// may be for it to count as an answer.
pub const COVERED_COSINE: f32 = 0.05;

/// The confidence of a hit with `evidence`, for an index whose model's relevance floor is
/// `floor` (`None`: a model without a measured floor; the words alone decide): high when its
/// cosine reaches the floor by [`CONFIDENT_COSINE`], its words' relevance (BM25 / 80) reaches
/// the floor, or it holds [`COVERED`] of the question's content words at a cosine at most
/// [`COVERED_COSINE`] below the floor (meaning and words agree).
pub fn judge(evidence: &Evidence, floor: Option<f32>) -> Confidence {
    let high = match floor {
        Some(floor) => {
            evidence
                .cosine
                .is_some_and(|c| c >= floor + CONFIDENT_COSINE)
                || evidence.words >= floor
                || (evidence.coverage >= COVERED
                    && evidence.cosine.is_none_or(|c| c >= floor - COVERED_COSINE))
        }
        None => evidence.words >= 0.4 || evidence.coverage >= COVERED,
    };
    match high {
        true => Confidence::High,
        false => Confidence::Low,
    }
}

/// Whether a hit with `evidence` is tied to the question at all: it holds one of its content
/// words, or its meaning is close enough ([`SUPPORT_COSINE`] of `floor`).
pub fn supported(evidence: &Evidence, floor: Option<f32>) -> bool {
    evidence.coverage > 0.0
        || evidence.words > 0.0
        || match (evidence.cosine, floor) {
            (Some(c), Some(floor)) => c >= floor * SUPPORT_COSINE,
            (Some(_), None) => true,
            (None, _) => false,
        }
}

/// The keyword analysers, built once (stop words and stemmers of every language the keyword
/// side knows).
fn keywords() -> Option<&'static Keywords> {
    static KEYWORDS: OnceLock<Option<Keywords>> = OnceLock::new();
    KEYWORDS.get_or_init(|| Keywords::new().ok()).as_ref()
}

/// A query's content words (its BM25 terms: stemmed, stop words left out, in the
/// question's language and English), taken once for all the hits of its answer.
pub struct Asked(Vec<u32>);

impl Asked {
    /// The content words of `query`.
    pub fn of(query: &str) -> Asked {
        Asked(
            keywords()
                .map(|k| k.query(query).indices)
                .unwrap_or_default(),
        )
    }

    /// The share of these words that `text` holds, 0..1; 0 for a query without content
    /// words.
    pub fn coverage(&self, text: &str) -> f32 {
        let Some(k) = keywords().filter(|_| !self.0.is_empty()) else {
            return 0.0;
        };
        let held: std::collections::HashSet<u32> = k.document(text).indices.into_iter().collect();
        let found = self.0.iter().filter(|t| held.contains(t)).count();
        found as f32 / self.0.len() as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn coverage(query: &str, text: &str) -> f32 {
        Asked::of(query).coverage(text)
    }

    fn evidence(cosine: f32, words: f32, coverage: f32) -> Evidence {
        Evidence {
            cosine: Some(cosine),
            words,
            coverage,
        }
    }

    #[test]
    fn coverage_counts_the_questions_stemmed_content_words() {
        let text = "The board approved the purchase of twelve electric trucks.";
        assert_eq!(coverage("electric trucks", text), 1.0);
        let half = coverage("which trucks did the board buy", text);
        assert!(half > 0.4 && half < 0.8, "{half}");
        assert_eq!(coverage("banana bread recipe", text), 0.0);
        assert_eq!(coverage("the of and", text), 0.0);
    }

    #[test]
    fn relevance_or_agreement_makes_high_confidence_and_anything_tied_is_shown() {
        let floor = Some(0.4);
        assert_eq!(judge(&evidence(0.55, 0.0, 0.0), floor), Confidence::High);
        assert_eq!(judge(&evidence(0.5, 0.0, 0.0), floor), Confidence::Low);
        assert_eq!(judge(&evidence(0.1, 0.5, 0.2), floor), Confidence::High);
        assert_eq!(judge(&evidence(0.36, 0.1, 0.75), floor), Confidence::High);
        assert_eq!(judge(&evidence(0.36, 0.1, 0.6), floor), Confidence::Low);
        assert_eq!(judge(&evidence(0.3, 0.1, 1.0), floor), Confidence::Low);
        assert!(supported(&evidence(0.1, 0.0, 0.25), floor));
        assert!(supported(&evidence(0.25, 0.0, 0.0), floor));
        assert!(!supported(&evidence(0.1, 0.0, 0.0), floor));
    }
}
