//! [`Recipe`]: how an index's chunks were cut and what their vectors embed, beside the model
//! that embedded them ([`crate::ModelVariant`]). A data directory records its recipe
//! (`ingest`'s records); a run that would cut or embed differently is refused with the way
//! out (`ingest reindex`: re-chunk and re-embed from the stored texts), so two recipes'
//! vectors never mix in one index silently.

use serde::{Deserialize, Serialize};

use crate::ChunkingConfig;

/// What decides an index's chunks and the text their vectors embed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recipe {
    /// Chunk length in model tokens.
    pub max_tokens: usize,
    /// Tokens shared by consecutive chunks.
    pub overlap_tokens: usize,
    /// Body tokens per table chunk.
    pub table_rows_tokens: usize,
    /// Every file has a card chunk.
    pub file_cards: bool,
    /// Dot leaders, page numbers, running headers and footers are left out.
    pub drop_junk: bool,
    /// Passages are embedded behind `title › section`.
    pub contextual_headers: bool,
    /// A `reindex` to this recipe started and has not finished: some contents still have
    /// the old recipe's chunks.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unfinished: bool,
}

impl Recipe {
    /// The recipe `chunking` makes.
    pub fn of(chunking: &ChunkingConfig) -> Self {
        Recipe {
            max_tokens: chunking.max_tokens,
            overlap_tokens: chunking.overlap_tokens,
            table_rows_tokens: chunking.table_rows_tokens,
            file_cards: chunking.file_cards,
            drop_junk: chunking.drop_junk,
            contextual_headers: chunking.contextual_headers,
            unfinished: false,
        }
    }

    /// The recipe of an index from before recipes were recorded: the chunk sizes of then,
    /// no cards, junk embedded, no headers.
    pub fn before_records() -> Self {
        Recipe {
            max_tokens: 250,
            overlap_tokens: 32,
            table_rows_tokens: 48,
            file_cards: false,
            drop_junk: false,
            contextual_headers: false,
            unfinished: false,
        }
    }

    /// One line for messages: `250-token chunks (overlap 32, table rows 48), file cards, …`.
    pub fn describe(&self) -> String {
        let on_off = |on: bool, what: &str| {
            if on {
                what.to_string()
            } else {
                format!("no {what}")
            }
        };
        format!(
            "{}-token chunks (overlap {}, table rows {}), {}, {}, {}{}",
            self.max_tokens,
            self.overlap_tokens,
            self.table_rows_tokens,
            on_off(self.file_cards, "file cards"),
            if self.drop_junk {
                "junk lines left out"
            } else {
                "junk lines embedded"
            },
            on_off(self.contextual_headers, "contextual headers"),
            if self.unfinished {
                " (a reindex to it did not finish)"
            } else {
                ""
            }
        )
    }
}
