//! The data directory's records: the small files that say what its index *is*, read when an
//! index opens and written when it is made or moved, so that a run never extends an index
//! with another store, another model or other chunks than the ones it was made with:
//!
//! | file | says | written by |
//! |---|---|---|
//! | `store` | which store holds the points the catalog describes (`embedded` or a server's address) | the first open; `ingest import` |
//! | `node` | this data directory's name in a server's holder records | the first open against a server |
//! | `embedding-model` | the [`ModelVariant`] that embedded the vectors | the first open; `reindex` |
//! | `embedding-recipe.json` | the [`Recipe`]: how chunks were cut and what their vectors embed | the first run; `reindex` |
//!
//! Beside them: `run-in-progress` (a writing run's marker, [`crate::index::DirtyMarker`],
//! part of crash recovery), `catalog.sqlite` (the catalog), `content/` (content indexes and
//! object packs), `shard/` (the embedded store, with its `keyword-analysis` record),
//! `workflows.sqlite` and `workflows/` (the workflows' records and tool results).

use std::path::Path;

use crate::embed::recipe::Recipe;
use crate::embed::ModelVariant;
use crate::error::{Error, Result};
use crate::index::ServerConfig;
use crate::DataDir;

/// What a data directory records as its store: `embedded`, or the server's address.
pub(crate) fn store_name(server: Option<&ServerConfig>) -> String {
    server.map_or_else(|| "embedded".to_string(), ToString::to_string)
}

/// The store of the index in `data_dir`: the one it records (its catalog describes what that
/// store holds), else `configured` for a new index (an index from before the record, with
/// content, is embedded); recorded either way. Another store than the recorded one is
/// refused: the catalog would claim files the store does not hold. `ingest import` moves an
/// index and re-records it ([`record_store`]).
pub(crate) fn index_store(
    data_dir: &Path,
    configured: Option<ServerConfig>,
    has_content: bool,
) -> Result<Option<ServerConfig>> {
    let path = DataDir::at(data_dir).store_record();
    let recorded = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text.trim().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => has_content.then(|| store_name(None)),
        Err(e) => return Err(Error::io(path, e)),
    };
    let Some(recorded) = recorded else {
        record_store(data_dir, configured.as_ref())?;
        return Ok(configured);
    };
    match configured {
        Some(c) if c.to_string() != recorded => Err(Error::Config(format!(
            "{} indexes into {recorded}, not {c}: use that store (or no --store), another data dir, or move the index with `ingest export` and `ingest import`",
            data_dir.display()
        ))),
        Some(c) => {
            if !path.is_file() {
                record_store(data_dir, Some(&c))?;
            }
            Ok(Some(c))
        }
        None if recorded == store_name(None) => {
            if !path.is_file() {
                record_store(data_dir, None)?;
            }
            Ok(None)
        }
        None => recorded.parse().map(Some),
    }
}

/// Record that the catalog of `data_dir` describes `server` (`None`: the embedded shard).
pub(crate) fn record_store(data_dir: &Path, server: Option<&ServerConfig>) -> Result<()> {
    crate::perms::write_file(
        &DataDir::at(data_dir).store_record(),
        format!("{}\n", store_name(server)).as_bytes(),
    )
}

/// This data directory's node name in holder records: made once (host name and a random
/// suffix) and kept, so a restarted node is the same node.
pub(crate) fn node_name(data_dir: &Path) -> Result<String> {
    let path = DataDir::at(data_dir).node_record();
    match std::fs::read_to_string(&path) {
        Ok(name) if !name.trim().is_empty() => return Ok(name.trim().to_string()),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(path, e)),
        _ => {}
    }
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".into());
    let mut seed = blake3::Hasher::new();
    seed.update(data_dir.as_os_str().as_encoded_bytes());
    seed.update(&now_nanos().to_le_bytes());
    seed.update(&std::process::id().to_le_bytes());
    let suffix: String = seed.finalize().to_hex().chars().take(8).collect();
    let name = format!("{host}-{suffix}");
    crate::perms::write_file(&path, format!("{name}\n").as_bytes())?;
    Ok(name)
}

/// Nanoseconds since the epoch, to seed a node name.
fn now_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// The variant to embed and search `data_dir` with: the one it records; for an index from
/// before the record existed (`has_content`, no record) [`ModelVariant::Int8Weights`], the
/// only model then; for a new index `configured`, else the default. A `configured` variant
/// that differs from the index's is refused: its vectors would not be comparable.
pub(crate) fn index_variant(
    data_dir: &Path,
    configured: Option<ModelVariant>,
    has_content: bool,
) -> Result<ModelVariant> {
    let path = DataDir::at(data_dir).model_record();
    let recorded = match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            text.trim()
                .parse::<ModelVariant>()
                .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            has_content.then_some(ModelVariant::Int8Weights)
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let variant = match (recorded, configured) {
        (Some(r), Some(c)) if r != c => {
            return Err(Error::Config(format!(
                "{} was embedded with model variant {r}; searching or adding to it with {c} would mix two models' vectors (use {r}, or another data dir)",
                data_dir.display()
            )))
        }
        (Some(r), _) => r,
        (None, c) => c.unwrap_or_default(),
    };
    if !path.is_file() {
        record_variant(data_dir, variant)?;
    }
    Ok(variant)
}

/// Record `variant` as the model `data_dir`'s vectors come from.
pub(crate) fn record_variant(data_dir: &Path, variant: ModelVariant) -> Result<()> {
    crate::perms::write_file(
        &DataDir::at(data_dir).model_record(),
        format!("{}\n", variant.name()).as_bytes(),
    )
}

/// The recipe `data_dir` records; for an index from before the record (`has_content`, no
/// file) [`Recipe::before_records`]; `None` for a new index.
pub(crate) fn recorded_recipe(data_dir: &Path, has_content: bool) -> Result<Option<Recipe>> {
    let path = DataDir::at(data_dir).recipe_record();
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
    crate::perms::write_file(&DataDir::at(data_dir).recipe_record(), &json)
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

/// On a shared catalog, which every node's data dir joins with records of its own: `mine`
/// (this node's store, model or recipe, named `what`) must be what the catalog records —
/// the first node's — or the run is refused: nodes of one catalog write one index.
pub(crate) fn agree_with_catalog(
    catalog: &dyn crate::index::Catalog,
    what: &str,
    mine: &str,
) -> Result<()> {
    let recorded = catalog.record_once(what, mine)?;
    if recorded == mine {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the shared catalog's index was made with {what} {recorded}, this node has {mine}: give every node of one catalog the same {what}"
    )))
}

/// [`agree_with_catalog`] for the recipe, compared as recipes (and described, not as JSON).
pub(crate) fn agree_on_recipe(
    catalog: &dyn crate::index::Catalog,
    configured: &Recipe,
) -> Result<()> {
    let json =
        serde_json::to_string(configured).map_err(|e| Error::Config(format!("recipe: {e}")))?;
    let recorded = catalog.record_once("recipe", &json)?;
    let recorded: Recipe = serde_json::from_str(&recorded)
        .map_err(|e| Error::Config(format!("the shared catalog's recipe: {e}")))?;
    if recorded == *configured {
        return Ok(());
    }
    Err(Error::Config(format!(
        "the shared catalog's index holds chunks made with {}; this node makes {}: give every node of one catalog the same recipe",
        recorded.describe(),
        configured.describe()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ChunkingConfig;

    #[test]
    fn an_index_keeps_the_variant_that_embedded_it() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        // A new index: the configured variant, else the default; recorded either way.
        assert_eq!(
            index_variant(data, Some(ModelVariant::DynamicInt8), false).unwrap(),
            ModelVariant::DynamicInt8
        );
        assert_eq!(
            std::fs::read_to_string(DataDir::at(data).model_record()).unwrap(),
            "dynamic-int8\n"
        );
        // Later calls follow the record, and refuse the other variant by name.
        assert_eq!(
            index_variant(data, None, true).unwrap(),
            ModelVariant::DynamicInt8
        );
        let refused = index_variant(data, Some(ModelVariant::Int8Weights), true).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("embedded with model variant dynamic-int8"),
            "{refused}"
        );
        // An index from before the record holds int8-weights vectors.
        let old = tempfile::tempdir().unwrap();
        assert_eq!(
            index_variant(old.path(), None, true).unwrap(),
            ModelVariant::Int8Weights
        );
        assert!(index_variant(old.path(), Some(ModelVariant::DynamicInt8), true).is_err());
        // Without a choice, a new index gets the default.
        let chosen = tempfile::tempdir().unwrap();
        assert_eq!(
            index_variant(chosen.path(), None, false).unwrap(),
            ModelVariant::Bf16
        );
        assert_eq!(
            std::fs::read_to_string(DataDir::at(chosen.path()).model_record()).unwrap(),
            "bf16\n"
        );
        for variant in ModelVariant::ALL {
            assert_eq!(variant.name().parse(), Ok(variant));
        }
        assert!("fp16".parse::<ModelVariant>().is_err());
    }

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
