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

use qdrant_edge::bm25_embed::{EdgeBm25, EdgeBm25Config};
use qdrant_edge::SparseVector;

use crate::embed::ChunkKind;
use crate::error::{Error, Result};
use extractors::MEMBER_SEPARATOR;

/// The name of the sparse vector in the index.
pub(crate) const SPARSE_VECTOR: &str = "bm25";

/// The BM25 model: stateless after construction, shared by writes and searches.
pub(crate) struct Keywords {
    bm25: EdgeBm25,
}

impl std::fmt::Debug for Keywords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keywords").finish_non_exhaustive()
    }
}

impl Keywords {
    /// BM25 with Qdrant's defaults (k1 1.2, b 0.75, English stop words and stemmer), and an
    /// average chunk length of 200 tokens (chunks are cut at 256 model tokens).
    pub(crate) fn new() -> Result<Self> {
        // Built from its JSON form, which is also how a Qdrant server takes it.
        let config: EdgeBm25Config =
            serde_json::from_value(serde_json::json!({ "avg_len": 200.0 }))
                .map_err(|e| Error::Keywords(format!("config: {e}")))?;
        let bm25 = EdgeBm25::new(config).map_err(|e| Error::Keywords(e.to_string()))?;
        Ok(Keywords { bm25 })
    }

    /// The sparse vector of a stored chunk's [`keyword_text`]. Empty for text without words.
    pub(crate) fn document(&self, text: &str) -> SparseVector {
        self.bm25.embed_document(text)
    }

    /// The sparse vector of a query: each distinct term once.
    pub(crate) fn query(&self, text: &str) -> SparseVector {
        self.bm25.embed_query(text)
    }
}

/// What a chunk is matched on by keywords: the name of the file holding it, its section
/// path, then its text. A card is matched on every holding file's name, the words in it and
/// the folders above it ([`crate::embed::card::card_keywords`]), then its text.
pub(crate) fn keyword_text(
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
}
