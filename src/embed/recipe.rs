//! [`Recipe`]: how an index's chunks were cut and what their vectors embed, beside the model
//! that embedded them ([`crate::ModelVariant`], recorded in its own file). A data directory
//! records its recipe; a run that would cut or embed differently is refused with the way
//! out (`ingest reindex`: re-chunk and re-embed from the stored texts), so two recipes'
//! vectors never mix in one index silently.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::ChunkingConfig;
use crate::error::{Error, Result};

/// The file in a data directory that records its [`Recipe`] (JSON).
pub(crate) const RECIPE_FILE: &str = "embedding-recipe.json";

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

/// The recipe `data_dir` records; for an index from before the record (`has_content`, no
/// file) [`Recipe::before_records`]; `None` for a new index.
pub(crate) fn recorded_recipe(data_dir: &Path, has_content: bool) -> Result<Option<Recipe>> {
    let path = data_dir.join(RECIPE_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok(has_content.then(Recipe::before_records))
        }
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Record `recipe` as `data_dir`'s.
pub(crate) fn record_recipe(data_dir: &Path, recipe: &Recipe) -> Result<()> {
    let json =
        serde_json::to_vec_pretty(recipe).map_err(|e| Error::Config(format!("recipe: {e}")))?;
    crate::perms::write_file(&data_dir.join(RECIPE_FILE), &json)
}

/// The recipe `data_dir` is written with, when it is `configured`: a new index records it;
/// an index with another recipe (or an unfinished reindex) is refused with the way out.
pub(crate) fn check_recipe(data_dir: &Path, configured: &Recipe, has_content: bool) -> Result<()> {
    match recorded_recipe(data_dir, has_content)? {
        None => record_recipe(data_dir, configured),
        Some(r) if r == *configured => Ok(()),
        Some(r) => Err(Error::Config(format!(
            "{dir} holds chunks made with {old}; this run makes {new}. Mixing them would rank \
             two kinds of vectors against each other: run `ingest reindex --data-dir {dir}` to \
             cut and embed every stored file again the new way (from the stored texts: no file \
             is read or parsed again), or use another data dir",
            dir = data_dir.display(),
            old = r.describe(),
            new = configured.describe(),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_index_records_its_recipe_and_another_is_refused_with_the_way_out() {
        let dir = tempfile::tempdir().unwrap();
        let ours = Recipe::of(&ChunkingConfig::default());
        check_recipe(dir.path(), &ours, false).unwrap();
        check_recipe(dir.path(), &ours, true).unwrap();
        let other = Recipe {
            contextual_headers: !ours.contextual_headers,
            ..ours.clone()
        };
        let refused = check_recipe(dir.path(), &other, true)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("ingest reindex"), "{refused}");
        // An index from before the record: the old recipe, refused for today's default.
        let old = tempfile::tempdir().unwrap();
        let refused = check_recipe(old.path(), &ours, true)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("no file cards"), "{refused}");
        check_recipe(old.path(), &Recipe::before_records(), true).unwrap();
        // An unfinished reindex is refused for every recipe until it is done.
        record_recipe(
            dir.path(),
            &Recipe {
                unfinished: true,
                ..ours.clone()
            },
        )
        .unwrap();
        let refused = check_recipe(dir.path(), &ours, true)
            .unwrap_err()
            .to_string();
        assert!(refused.contains("did not finish"), "{refused}");
    }
}
