//! The keyword side of search: a BM25 sparse vector per chunk beside its dense embedding.
//!
//! Qdrant Edge's `EdgeBm25` turns text into token ids and term weights with the same
//! tokenizer, stop words and stemmer as a Qdrant server's BM25, so a server collection gets
//! the same vectors. The document side carries term frequencies only; the inverse document
//! frequency is the sparse vector's `Idf` modifier, computed by the engine at query time
//! from what the index holds, so adding documents never rewrites old vectors.
//!
//! What a chunk is matched on is more than its text: the file's name and the chunk's
//! section path come first ([`keyword_text`]), so a question naming a document or a heading
//! finds it even when the passage itself never repeats those words.

use std::collections::BTreeMap;

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::SparseVector;
use whatlang::{Detector, Lang};

use crate::embed::ChunkKind;
use crate::error::{Error, Result};
use extractors::MEMBER_SEPARATOR;

/// The name of the sparse vector in the index.
pub const SPARSE_VECTOR: &str = "bm25";

/// The languages besides English whose stemmer and stop words the keyword side applies:
/// those Qdrant's BM25 has both for, by the language detector's name and Qdrant's code.
const OTHER_LANGUAGES: [(Lang, &str); 16] = [
    (Lang::Deu, "de"),
    (Lang::Fra, "fr"),
    (Lang::Spa, "es"),
    (Lang::Ita, "it"),
    (Lang::Nld, "nl"),
    (Lang::Por, "pt"),
    (Lang::Swe, "sv"),
    (Lang::Dan, "da"),
    (Lang::Nob, "no"),
    (Lang::Fin, "fi"),
    (Lang::Hun, "hu"),
    (Lang::Ron, "ro"),
    (Lang::Tur, "tr"),
    (Lang::Rus, "ru"),
    (Lang::Ell, "el"),
    (Lang::Ara, "ar"),
];

/// How sure the detector must be that a stored text is in another language (0..1; its own
/// "reliable" mark is 0.9) before the stop-word vote ([`Keywords::language`]) is asked.
const DOCUMENT_CONFIDENCE: f64 = 0.5;

/// The same for a question: shorter, so the detector's confidence says little (an English
/// question scored 1.0 as Portuguese); the stop-word vote decides.
const QUERY_CONFIDENCE: f64 = 0.0;

/// Bytes of a text the detector looks at (a chunk is about 1 000; a card's text can be
/// longer, and a few kilobytes tell a language as well as the whole).
const DETECT_BYTES: usize = 4096;

/// One language's analysers.
struct Analysers {
    code: &'static str,
    /// English's stemmer and its stop words: the vote on whether a text is in it (against
    /// English's analyser, the two counts differ by stop words only).
    vote: EdgeBm25,
    /// English's stemmer, the stop words of both: what a text in it shares with English.
    english: EdgeBm25,
    /// Its stemmer, the stop words of both.
    native: EdgeBm25,
}

/// The BM25 model: stateless after construction, shared by writes and searches.
///
/// A text is analysed as English (Qdrant's defaults: English stop words and stemmer) unless
/// it is in one of [`OTHER_LANGUAGES`]: then its vector holds the terms of both stemmers
/// (the larger weight where they agree), without the stop words of either language. A
/// question likewise. So a German question finds "Batterie" in a German text that says
/// "Batterien", an English question finds the names and terms the two languages share, and
/// an English text or question gets the vector of Qdrant's default English BM25.
///
/// Which language: the detector's guess (allow-listed to English and
/// [`OTHER_LANGUAGES`]), confirmed only if the text holds more of that language's stop
/// words than of English's (its terms without them are fewer) — the detector alone calls
/// short English questions Portuguese or German.
pub struct Keywords {
    english: EdgeBm25,
    others: Vec<Analysers>,
    detector: Detector,
}

impl std::fmt::Debug for Keywords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keywords").finish_non_exhaustive()
    }
}

/// BM25 with Qdrant's defaults (k1 1.2, b 0.75) and an average chunk length of 200 tokens
/// (chunks are cut at 256 model tokens), with `stemmer`'s stemmer and the stop words of
/// `stopwords` (Qdrant's language codes).
fn bm25(stemmer: &str, stopwords: &[&str]) -> Result<EdgeBm25> {
    // Built from its JSON form, which is also how a Qdrant server takes it.
    let config = serde_json::json!({
        "avg_len": 200.0,
        "language": stemmer,
        "stopwords": { "languages": stopwords },
    });
    let config: EdgeBm25Config = serde_json::from_value(config)
        .map_err(|e| Error::Keywords(format!("config for {stemmer}: {e}")))?;
    EdgeBm25::new(config).map_err(|e| Error::Keywords(format!("{stemmer}: {e}")))
}

impl Keywords {
    pub fn new() -> Result<Self> {
        let others = OTHER_LANGUAGES
            .iter()
            .map(|&(_, code)| {
                Ok(Analysers {
                    code,
                    vote: bm25("en", &[code])?,
                    english: bm25("en", &[code, "en"])?,
                    native: bm25(code, &[code, "en"])?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut allowed: Vec<Lang> = OTHER_LANGUAGES.iter().map(|&(l, _)| l).collect();
        allowed.push(Lang::Eng);
        Ok(Keywords {
            english: bm25("en", &["en"])?,
            others,
            detector: Detector::with_allowlist(allowed),
        })
    }

    /// The analysers of the language `text` is in, if it is one of [`OTHER_LANGUAGES`]:
    /// the detector is at least `confidence` sure, and the stop words agree.
    fn language(&self, text: &str, confidence: f64) -> Option<&Analysers> {
        let mut end = text.len().min(DETECT_BYTES);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let head = text.get(..end)?;
        let info = self.detector.detect(head)?;
        if info.confidence() < confidence {
            return None;
        }
        let code = OTHER_LANGUAGES
            .iter()
            .find(|&&(l, _)| l == info.lang())
            .map(|&(_, code)| code)?;
        let other = self.others.iter().find(|a| a.code == code)?;
        let terms = |bm25: &EdgeBm25| bm25.embed_query(head).indices.len();
        (terms(&other.vote) < terms(&self.english)).then_some(other)
    }

    /// The sparse vector of a stored chunk's [`keyword_text`]. Empty for text without words.
    pub fn document(&self, text: &str) -> SparseVector {
        match self.language(text, DOCUMENT_CONFIDENCE) {
            Some(other) => union(
                other.english.embed_document(text),
                other.native.embed_document(text),
            ),
            None => self.english.embed_document(text),
        }
    }

    /// The sparse vector a keyword ranking searches by: of a query ([`Keywords::query`]),
    /// or, for a `name`'s words, English's analyser alone (no language guessed: a name's
    /// few words are no sentence, and a guess drops language codes such as `de` as stop
    /// words).
    pub fn ranking(&self, text: &str, name: bool) -> SparseVector {
        match name {
            true => self.english.embed_query(text),
            false => self.query(text),
        }
    }

    /// The sparse vector of a query: each distinct term once.
    pub fn query(&self, text: &str) -> SparseVector {
        match self.language(text, QUERY_CONFIDENCE) {
            Some(other) => union(
                other.english.embed_query(text),
                other.native.embed_query(text),
            ),
            None => self.english.embed_query(text),
        }
    }
}

/// The terms of both vectors, each once with the larger of its weights, in index order.
fn union(a: SparseVector, b: SparseVector) -> SparseVector {
    let mut terms: BTreeMap<u32, f32> = BTreeMap::new();
    for (i, v) in a
        .indices
        .into_iter()
        .zip(a.values)
        .chain(b.indices.into_iter().zip(b.values))
    {
        let w = terms.entry(i).or_insert(v);
        *w = w.max(v);
    }
    SparseVector {
        indices: terms.keys().copied().collect(),
        values: terms.into_values().collect(),
    }
}

/// What a chunk is matched on by keywords: the name of the file holding it, its section
/// path, then its text. A card is matched on every holding file's name, the words in it and
/// the folders above it ([`crate::embed::card::card_keywords`]), then its text.
pub fn keyword_text(
    text: &str,
    section: Option<&str>,
    locators: &[String],
    kind: ChunkKind,
) -> String {
    if kind == ChunkKind::Card {
        return format!("{}\n{text}", crate::embed::card::card_keywords(locators));
    }
    let name = locators.first().map(|l| file_name(l)).unwrap_or_default();
    let section = section.unwrap_or_default();
    let mut out = String::with_capacity(name.len() + section.len() + text.len() + 2);
    for part in [name, section, text] {
        if !part.is_empty() {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(part);
        }
    }
    out
}

/// The last segment of a file locator: `/d/a.zip!/docs/x.md` gives `x.md`.
fn file_name(locator: &str) -> &str {
    let tail = locator.rsplit(MEMBER_SEPARATOR).next().unwrap_or(locator);
    tail.rsplit('/').next().unwrap_or(tail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_text_puts_file_name_and_section_first() {
        let loc = vec!["/d/shelf.zip!/docs/pump-manual.pdf".to_string()];
        assert_eq!(
            keyword_text(
                "Prime the pump.",
                Some("3 Setup › 3.1 Priming"),
                &loc,
                ChunkKind::Passage
            ),
            "pump-manual.pdf\n3 Setup › 3.1 Priming\nPrime the pump."
        );
        assert_eq!(keyword_text("t", None, &[], ChunkKind::Passage), "t");
        assert_eq!(
            keyword_text("PDF document", None, &loc, ChunkKind::Card),
            "pump-manual.pdf\npump manual pdf\nd shelf.zip docs\nPDF document"
        );
        assert_eq!(file_name("notes.md"), "notes.md");
    }

    #[test]
    fn a_rare_term_weighs_in_both_sides() {
        let k = Keywords::new().unwrap();
        let doc = k.document("The Swiss franc has the currency code CHF.");
        let query = k.query("what is the code of the swiss franc");
        assert!(!doc.indices.is_empty());
        let shared = query
            .indices
            .iter()
            .filter(|i| doc.indices.contains(i))
            .count();
        // "code", "swiss", "franc" (stemmed the same on both sides); "what", "is", "the" are
        // stop words.
        assert_eq!(shared, 3, "{query:?} {doc:?}");
        assert!(k.document("   ").indices.is_empty());
    }

    /// The terms `query` and `doc` share.
    fn shared(k: &Keywords, query: &str, doc: &str) -> usize {
        let doc = k.document(doc);
        k.query(query)
            .indices
            .iter()
            .filter(|i| doc.indices.contains(i))
            .count()
    }

    #[test]
    fn english_texts_and_questions_get_qdrants_default_english_vectors() {
        let k = Keywords::new().unwrap();
        let config: EdgeBm25Config =
            serde_json::from_value(serde_json::json!({ "avg_len": 200.0 })).unwrap();
        let english = EdgeBm25::new(config).unwrap();
        for text in [
            "The Swiss franc has the currency code CHF.",
            "Prime the pump before the first start; the valve must be open.",
            "invoice.pdf",
            // No stop words at all: names and a table row stay English.
            "Hamburg Bremen Kiel Rostock Lübeck 1970 2.03 Germany Korea",
            "",
        ] {
            assert_eq!(k.document(text), english.embed_document(text), "{text}");
            assert_eq!(k.query(text), english.embed_query(text), "{text}");
        }
    }

    #[test]
    fn a_german_question_meets_a_german_text_in_other_word_forms() {
        let k = Keywords::new().unwrap();
        let text = "Gebrauchte Batterien gehören nicht in den Hausmüll. Sie werden in der \
                    Sammelbox neben dem Eingang der Feldstation gesammelt und einmal im Monat \
                    zum Wertstoffhof gebracht.";
        let question = "Wohin kommt eine gebrauchte Batterie der Feldstation?";
        // English stemming leaves "batterien"/"batterie" and "gebrauchte"/"gebrauchten"
        // apart; German stemming joins them.
        let english = bm25("en", &["en"]).unwrap();
        let english_only = {
            let doc = english.embed_document(text);
            english
                .embed_query(question)
                .indices
                .iter()
                .filter(|i| doc.indices.contains(i))
                .count()
        };
        let both = shared(&k, question, text);
        assert!(both > english_only, "{both} vs {english_only}");
        assert!(both >= 3, "{both}");
        // German stop words of a question ("eine", "der", "die", "in") are no terms.
        assert_eq!(
            k.query(question),
            k.query("Wohin kommt die gebrauchte Batterie in der Feldstation?")
        );
    }

    #[test]
    fn a_text_in_another_language_drops_its_stop_words_and_englishs() {
        let k = Keywords::new().unwrap();
        // Without languages told apart, "the" and "what" quoted in a German text are no
        // terms but "und", "die" are; with them, neither: an English question's "what" never
        // meets the German stemmer's "what", a German question's "die" never the German text.
        let text = "Der Vortrag über das Internet beginnt um neun Uhr im großen Hörsaal, \
                    danach folgt eine Diskussion mit den Studierenden der Fakultät.";
        let quoting = "Der Vortrag „What the Internet knows“ über das Internet beginnt um neun \
                       Uhr im großen Hörsaal, und danach folgt die eine Diskussion mit den \
                       Studierenden der Fakultät.";
        let plain = k.document(text);
        let quoted = k.document(quoting);
        let extra: Vec<_> = quoted
            .indices
            .iter()
            .filter(|i| !plain.indices.contains(i))
            .collect();
        // "knows" is the one word more: "know" by the English stemmer, "knows" by the German.
        assert_eq!(extra.len(), 2, "{extra:?}");
    }

    #[test]
    fn union_keeps_each_term_once_with_its_larger_weight() {
        let u = union(
            SparseVector {
                indices: vec![5, 1],
                values: vec![0.5, 1.0],
            },
            SparseVector {
                indices: vec![5, 9],
                values: vec![0.7, 0.2],
            },
        );
        assert_eq!(u.indices, vec![1, 5, 9]);
        assert_eq!(u.values, vec![1.0, 0.7, 0.2]);
    }
}
