//! `ingest migrate`: move a single machine's index into a shared catalog, so that its data
//! directory becomes the first node of many (docs/OPERATIONS.md, "A shared catalog").
//!
//! What moves: every catalog entry of every scope, content indexes and object packs, the
//! last run, how the index was made (store, model, recipe: recorded in the shared catalog
//! as its first node's), the workflows' records and tool results' texts. The points stay
//! where they are (a Qdrant server collection: an index in an embedded shard is refused,
//! its points are this machine's alone); their holder records are re-keyed from this data
//! dir's name to the shared catalog's, so a file any node removes later is released for
//! all. Upload jobs are not moved: stop the service first (jobs not ended are refused).

use std::collections::BTreeSet;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::index::objects::ContentRecord;
use crate::index::{
    CatalogContents, CatalogEntries, CatalogRecords, CatalogUrl, EntryStatus, Holders, PgCatalog,
};
use crate::{Config, Ingestor};

/// What a migration moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MigrateReport {
    /// The shared catalog, as shown (without its password).
    pub catalog: String,
    /// Scopes whose entries moved.
    pub scopes: usize,
    /// Catalog entries (files, archives, members).
    pub entries: usize,
    /// Content indexes with their object packs.
    pub contents: usize,
    /// Holder records re-keyed in the store (one per scope and content).
    pub holder_records: usize,
    /// Workflows.
    pub workflows: usize,
    /// Their items (tool results, entities, summaries).
    pub workflow_items: usize,
    /// Whether this run finished an earlier `migrate` of the same data dir (one that failed
    /// or was stopped half way): everything is copied again, nothing is doubled.
    pub resumed: bool,
}

/// The catalog record naming the data dir (its node name) a migrate started from.
const MIGRATED_FROM: &str = "migrated_from";

/// Move the index of `config`'s data directory (its embedded catalog; `config.catalog` is
/// ignored) into the empty shared catalog at `url`. Refused ([`Error::Config`]) when the
/// index is an embedded shard, when the shared catalog holds entries already (but those of
/// an earlier `migrate` of this same data dir: that one is finished), or when upload jobs
/// are not ended.
pub fn migrate(config: Config, url: &CatalogUrl) -> Result<MigrateReport> {
    let source = Ingestor::open(Config {
        catalog: None,
        ..config
    })?;
    let Some(server) = source.config().server.clone() else {
        return Err(Error::Config(
            "this data dir's index is an embedded shard, which only this machine reads: move \
             its points to a Qdrant server first (`ingest export FILE`, then `ingest --store \
             qdrant://HOST:6334/COLLECTION import FILE`), then migrate"
                .into(),
        ));
    };
    let open_jobs = crate::uploads::open_job_records(source.data())?;
    if open_jobs > 0 {
        return Err(Error::Config(format!(
            "{open_jobs} upload jobs of this data dir have not ended: let `ingest serve` finish \
             them (start it, wait, stop it), then migrate"
        )));
    }
    let data_dir = source.data_dir().to_path_buf();
    let target = PgCatalog::open(url, &data_dir)?;
    // Which data dir a migrate into this catalog started from: a second run of the same
    // data dir finishes what the first began (every copy below is a replace).
    let me = crate::records::node_name(&data_dir)?;
    let resumed = !target.is_empty();
    if resumed && target.recorded(MIGRATED_FROM)?.as_deref() != Some(me.as_str()) {
        return Err(Error::Config(format!(
            "the shared catalog {url} holds entries already: migrate moves one data dir into \
             an empty catalog (its other nodes join it with --catalog)"
        )));
    }
    target.record_once(MIGRATED_FROM, &me)?;
    // How the index was made: the shared catalog's records are this data dir's.
    let store = format!("qdrant collection {}", server.collection);
    crate::records::agree_with_catalog(&target, "store", &store)?;
    crate::records::agree_with_catalog(&target, "model", source.model_variant().name())?;
    if let Some(recipe) = crate::records::recorded_recipe(&data_dir, true)? {
        crate::records::agree_on_recipe(&target, &recipe)?;
    }
    let catalog = source.catalog();
    let mut report = MigrateReport {
        catalog: url.to_string(),
        resumed,
        ..MigrateReport::default()
    };
    let mut copied: BTreeSet<String> = BTreeSet::new();
    let mut held: Vec<(extractors::Scope, String)> = Vec::new();
    let packs = crate::DataDir::at(&data_dir).contents();
    for scope in catalog.scopes() {
        report.scopes += 1;
        let mut hashes = BTreeSet::new();
        for entry in catalog.entries(&scope) {
            report.entries += 1;
            let content = match (&entry.hash, entry.status) {
                (Some(hash), EntryStatus::Indexed) => {
                    hashes.insert(hash.clone());
                    Some(hash.clone())
                }
                _ => None,
            };
            let index = match &content {
                Some(hash) if !copied.contains(hash) => catalog.content_index(hash)?,
                _ => None,
            };
            match (content, index) {
                (Some(hash), Some(index)) => {
                    let pack_path = packs.join(format!("{hash}.pack"));
                    // A content without its pack would be broken on every node: refused.
                    let pack = std::fs::read(&pack_path).map_err(|e| Error::io(&pack_path, e))?;
                    target.write_content_and_put(
                        &scope,
                        &hash,
                        &ContentRecord { index, pack },
                        entry,
                    )?;
                    copied.insert(hash);
                    report.contents += 1;
                }
                _ => target.put(&scope, entry),
            }
        }
        held.extend(hashes.into_iter().map(|h| (scope.clone(), h)));
    }
    if let Some(run) = catalog.last_run() {
        target.set_last_run(run);
    }
    target.save()?;
    // The holder records: the shared catalog's name first, then this data dir's gone (the
    // points stay held throughout).
    let shared =
        crate::index::ServerIndex::open(&server, &crate::index::shared_holder_name(&target)?)?;
    let own = crate::index::ServerIndex::open(&server, &crate::records::node_name(&data_dir)?)?;
    for (scope, hash) in &held {
        let holders = catalog.holders(scope, hash);
        crate::index::IndexWrite::set_holders(&shared, scope, hash, &holders)?;
        crate::index::IndexWrite::set_holders(&own, scope, hash, &Holders::default())?;
        report.holder_records += 1;
    }
    let (workflows, items) = source.workflows().copy_into(url)?;
    report.workflows = workflows;
    report.workflow_items = items;
    Ok(report)
}
