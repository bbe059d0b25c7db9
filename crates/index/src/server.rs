//! [`ServerIndex`]: the vector index as a collection of a Qdrant server or cluster, reached
//! through the official `qdrant-client` (gRPC). Several ingest nodes may write one collection.
//!
//! The points are exactly the embedded shard's: same ids ([`point_id`]), same payload
//! ([`payload`]), same dense and BM25 vectors, same payload indexes and the same queries, so
//! a search answers the same on either backend. One field is added: `stored_at`, the
//! microsecond a node wrote the point (see below); [`IndexRead::export_points`] leaves it out.
//!
//! # Several nodes, one collection
//! Each node keeps its own catalog (what it has seen, for skipping unchanged files), so what
//! must be shared is only who holds which content. That lives beside the points, in the
//! companion collection `COLLECTION_holders`: one vectorless record per (scope, content,
//! node) listing the files of that node holding the content. A node only ever writes its own
//! records, so records never race; everything else follows from them:
//! - **Locators.** A content's `locators` payload is the sorted union of every node's record,
//!   which is what one node holding all those files would write. A node writes its record
//!   before the points, and after every write of a content's points or payload it reads the
//!   records again and rewrites the payload until the two agree, so the last writer always
//!   leaves the union (two nodes racing both end on it).
//! - **Deletes.** A node that stops holding a content deletes its record, then the points only
//!   if no record is left, and then only points stored before it looked (`stored_at` below the
//!   time of the check, less [`ServerConfig::clock_skew`]): a node that registered the content
//!   after the check wrote its points after it, so they survive. Points the guard spares are
//!   deleted once the skew has passed (the call waits for it) or by the next repair.
//! - **Crashes.** A record is written before its content's points, so no point is ever unheld
//!   by design; a node killed between two writes leaves a record with missing points (its next
//!   sync writes them again: its catalog never recorded the file) or, in a delete, points
//!   without a record (deleted by the next repair of any node, which deletes contents no
//!   record holds).
//!
//! Calls block the caller (the traits are synchronous) on a small runtime of this index's
//! own, also from inside another async runtime. Every operation is idempotent, so a failure
//! the server may recover from (a node of a cluster going away, a timeout) is retried with
//! backoff for up to [`ServerConfig::retry_for`].

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use qdrant_client::qdrant::{
    self, point_id::PointIdOptions, Condition, CountPointsBuilder, CreateCollectionBuilder,
    CreateFieldIndexCollectionBuilder, DeletePointsBuilder, Distance, FieldType, Filter,
    KeywordIndexParamsBuilder, Modifier, NamedVectors, PointId, PointStruct, Query,
    QueryPointsBuilder, Range, ScrollPointsBuilder, SearchParamsBuilder, SetPayloadPointsBuilder,
    SparseVectorParamsBuilder, SparseVectorsConfigBuilder, UpdatePointVectorsBuilder,
    UpsertPointsBuilder, Vector, VectorInput, VectorParamsBuilder, WriteOrdering,
    WriteOrderingType,
};
use qdrant_client::{Payload, Qdrant, QdrantError};
use serde_json::{json, Map, Value};

use super::filter::{Condition as TypedCondition, Filter as TypedFilter, Value as TypedValue};
use super::keywords::{keyword_text, Keywords, SPARSE_VECTOR};
use super::{
    payload, point_id, ExportedPoint, Hit, Holders, IndexRead, IndexWrite, PointRecord, Ranking,
    StoredChunk, MULTILINGUAL_VECTOR,
};
use crate::embed::DIMENSIONS;
use crate::error::{Error, Result};
use crate::lock;
use extractors::Scope;

/// The payload field holding when a node wrote a point (microseconds since the Unix epoch).
const STORED_AT: &str = "stored_at";

/// Points written per upsert request when importing.
const IMPORT_BATCH: usize = 256;

/// Where the index lives on a Qdrant server, and how to talk to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The server's gRPC endpoint, `http://HOST:PORT` (6334 by default).
    pub url: String,
    /// The collection holding the points (created on first use). Its holder records live in
    /// `COLLECTION_holders`.
    pub collection: String,
    /// API key sent with every call (`QDRANT_API_KEY` by default).
    pub api_key: Option<String>,
    /// Shards of a collection this index creates (a cluster spreads them over its peers).
    pub shards: u32,
    /// Copies of each shard in a collection this index creates (2 survives one peer down).
    pub replication: u32,
    /// How far apart the clocks of the ingest nodes may be: a delete spares points written
    /// this close to its check (see the module docs).
    pub clock_skew: Duration,
    /// How long a failing call is retried when the server may recover (a peer restarting,
    /// a timeout) before the operation fails.
    pub retry_for: Duration,
    /// Calls wait this long for an answer.
    pub timeout: Duration,
}

impl ServerConfig {
    /// A collection on the server at `url` with the defaults: one shard, one copy, 1 s of
    /// clock skew, 120 s of retries, 30 s per call.
    pub fn new(url: impl Into<String>, collection: impl Into<String>) -> Self {
        ServerConfig {
            url: url.into(),
            collection: collection.into(),
            api_key: None,
            shards: 1,
            replication: 1,
            clock_skew: Duration::from_secs(1),
            retry_for: Duration::from_secs(120),
            timeout: Duration::from_secs(30),
        }
    }

    /// The collection of holder records.
    pub fn holders_collection(&self) -> String {
        format!("{}_holders", self.collection)
    }
}

impl std::str::FromStr for ServerConfig {
    type Err = Error;

    /// `qdrant://HOST:PORT/COLLECTION[?shards=N&replication=N]` (the port is the gRPC one,
    /// 6334 when left out); `http://` is taken as a synonym of `qdrant://`. The API key comes
    /// from `QDRANT_API_KEY`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::Config(format!(
                "store {s:?}: {why} (expected qdrant://HOST:PORT/COLLECTION[?shards=N&replication=N])"
            ))
        };
        let rest = s
            .strip_prefix("qdrant://")
            .or_else(|| s.strip_prefix("http://"))
            .ok_or_else(|| {
                if s.starts_with("https://") || s.starts_with("qdrants://") {
                    bad("TLS is not built in; reach the server over loopback or a tunnel")
                } else {
                    bad("not a qdrant:// address")
                }
            })?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (host, collection) = rest.split_once('/').ok_or_else(|| bad("no collection"))?;
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let collection = collection.trim_end_matches('/');
        if collection.is_empty()
            || !collection
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad(
                "the collection name takes letters, digits, _ and - only",
            ));
        }
        let host = if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:6334")
        };
        let mut config = ServerConfig::new(format!("http://{host}"), collection);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').ok_or_else(|| bad("bad option"))?;
            let n: u32 = v
                .parse()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| bad("options take a positive number"))?;
            match k {
                "shards" => config.shards = n,
                "replication" => config.replication = n,
                _ => return Err(bad(&format!("unknown option {k:?}"))),
            }
        }
        config.api_key = std::env::var("QDRANT_API_KEY")
            .ok()
            .filter(|k| !k.is_empty());
        Ok(config)
    }
}

impl std::fmt::Display for ServerConfig {
    /// The address as `--store` takes it (without the API key).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = self.url.trim_start_matches("http://");
        write!(f, "qdrant://{host}/{}", self.collection)
    }
}

/// (scope key, content hash).
type ContentKey = (String, String);

/// The files (and tags) this node registered as holding a content, and every node's union then.
type Registered = (Holders, Holders);

/// A collection of a Qdrant server as the vector index (see the module docs).
pub struct ServerIndex {
    client: Qdrant,
    runtime: tokio::runtime::Runtime,
    config: ServerConfig,
    holders: String,
    /// This node's name in the holder records (stable per data directory).
    node: String,
    keywords: Keywords,
    /// (scope key, content) → the files this node registered as holding it, and the union
    /// of every node's records when it last looked.
    registered: Mutex<HashMap<ContentKey, Registered>>,
    /// Contents whose points this node wrote since the last flush: their locators are
    /// settled again from the holder records when it flushes.
    touched: Mutex<BTreeSet<ContentKey>>,
    /// Whether the collection has the [`MULTILINGUAL_VECTOR`] space (made on open where
    /// the server can add it to a collection; else points are stored without it).
    multilingual: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for ServerIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerIndex")
            .field("store", &self.config.to_string())
            .field("node", &self.node)
            .finish()
    }
}

/// Writes go through each shard's dynamically elected leader: ordered, and available while
/// a cluster peer is down (the permanent leader of `Strong` may be the peer that is down).
fn medium() -> WriteOrdering {
    WriteOrdering {
        r#type: WriteOrderingType::Medium as i32,
    }
}

/// Microseconds since the Unix epoch.
fn now_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Whether the server may answer a failed call on a second try.
fn transient(e: &QdrantError) -> bool {
    use tonic::Code;
    match e {
        QdrantError::ResponseError { status } => matches!(
            status.code(),
            Code::Unavailable
                | Code::DeadlineExceeded
                | Code::Aborted
                | Code::Internal
                | Code::Unknown
                | Code::Cancelled
                | Code::ResourceExhausted
        ),
        QdrantError::ResourceExhaustedError { .. } => true,
        _ => false,
    }
}

impl ServerIndex {
    /// Connect to the collection `config` names as node `node`, creating the collection, its
    /// holder collection and their payload indexes when missing (several nodes may do this
    /// at once).
    pub fn open(config: &ServerConfig, node: &str) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("qdrant-client")
            .enable_all()
            .build()
            .map_err(|e| Error::Server {
                store: config.to_string(),
                reason: format!("runtime: {e}"),
            })?;
        let client = {
            // The client spawns its connection on the current runtime.
            let _entered = runtime.enter();
            let mut builder = Qdrant::from_url(&config.url)
                .timeout(config.timeout)
                .connect_timeout(Duration::from_secs(5))
                // Server 1.18 against client 1.20: two minor versions apart, which the
                // check warns about; the conformance tests are the check that matters.
                .skip_compatibility_check();
            if let Some(key) = &config.api_key {
                builder = builder.api_key(key.clone());
            }
            builder.build().map_err(|e| Error::Server {
                store: config.to_string(),
                reason: e.to_string(),
            })?
        };
        let index = ServerIndex {
            client,
            runtime,
            holders: config.holders_collection(),
            config: config.clone(),
            node: node.to_string(),
            keywords: Keywords::new()?,
            registered: Mutex::new(HashMap::new()),
            touched: Mutex::new(BTreeSet::new()),
            multilingual: std::sync::atomic::AtomicBool::new(false),
        };
        index.create_collections()?;
        let space = index.ensure_multilingual_space();
        index
            .multilingual
            .store(space, std::sync::atomic::Ordering::Relaxed);
        Ok(index)
    }

    /// The error of a failed call.
    fn err(&self, what: &str, e: impl std::fmt::Display) -> Error {
        Error::Server {
            store: self.config.to_string(),
            reason: format!("{what}: {e}"),
        }
    }

    /// Run `fut` to completion on this index's runtime, from any thread (inside another
    /// runtime too: then on a scoped thread, as a runtime cannot be entered twice).
    fn block<T: Send>(&self, fut: impl Future<Output = T> + Send) -> T {
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| match s.spawn(|| self.runtime.block_on(fut)).join() {
                Ok(v) => v,
                Err(panic) => std::panic::resume_unwind(panic),
            })
        } else {
            self.runtime.block_on(fut)
        }
    }

    /// Call the server, retrying failures it may recover from for up to `retry_for`.
    fn call<T: Send, Fut>(&self, what: &str, f: impl Fn() -> Fut) -> Result<T>
    where
        Fut: Future<Output = std::result::Result<T, QdrantError>> + Send,
    {
        let deadline = Instant::now() + self.config.retry_for;
        let mut delay = Duration::from_millis(100);
        loop {
            match self.block(f()) {
                Ok(v) => return Ok(v),
                Err(e) if transient(&e) && Instant::now() + delay < deadline => {
                    tracing::warn!("{}: {what}: {e}; retrying in {delay:?}", self.config);
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(self.err(what, e)),
            }
        }
    }

    fn create_collections(&self) -> Result<()> {
        let c = &self.config;
        let points = CreateCollectionBuilder::new(&c.collection)
            .vectors_config(VectorParamsBuilder::new(
                DIMENSIONS as u64,
                Distance::Cosine,
            ))
            .sparse_vectors_config({
                let mut s = SparseVectorsConfigBuilder::default();
                s.add_named_vector_params(
                    SPARSE_VECTOR,
                    SparseVectorParamsBuilder::default().modifier(Modifier::Idf),
                );
                s
            })
            .on_disk_payload(true)
            .shard_number(c.shards)
            .replication_factor(c.replication)
            .write_consistency_factor(1);
        let holders = CreateCollectionBuilder::new(&self.holders)
            .shard_number(c.shards)
            .replication_factor(c.replication)
            .write_consistency_factor(1);
        for (name, create) in [(&c.collection, points), (&self.holders, holders)] {
            let exists = self.call("collection_exists", || {
                self.client.collection_exists(name.as_str())
            })?;
            if !exists {
                let created = self.call("create_collection", || {
                    self.client.create_collection(create.clone())
                });
                // Another node may have created it meanwhile.
                if let Err(e) = created {
                    let exists = self.call("collection_exists", || {
                        self.client.collection_exists(name.as_str())
                    })?;
                    if !exists {
                        return Err(e);
                    }
                }
            }
        }
        let mut fields: Vec<(&str, &str, FieldType)> = Vec::new();
        for f in payload::KEYWORD_FIELDS {
            fields.push((&c.collection, f, FieldType::Keyword));
        }
        for f in payload::INTEGER_FIELDS.iter().chain([&STORED_AT]) {
            fields.push((&c.collection, f, FieldType::Integer));
        }
        for f in payload::BOOL_FIELDS {
            fields.push((&c.collection, f, FieldType::Bool));
        }
        for f in ["scope_key", "content_hash", "node"] {
            fields.push((&self.holders, f, FieldType::Keyword));
        }
        // Every command opens the index: only the indexes a collection lacks are created.
        let mut present = HashMap::new();
        for name in [&c.collection, &self.holders] {
            let info = self.call("collection_info", || {
                self.client.collection_info(name.as_str())
            })?;
            let schema = info.result.map(|r| r.payload_schema).unwrap_or_default();
            present.insert(name.as_str(), schema);
        }
        for (collection, field, kind) in fields {
            if present
                .get(collection)
                .is_some_and(|schema| schema.contains_key(field))
            {
                continue;
            }
            let mut request =
                CreateFieldIndexCollectionBuilder::new(collection, field, kind).wait(true);
            // Every search filters on the scope: a tenant index keeps each scope's points
            // together on disk.
            if field == "scope_key" && collection == c.collection {
                request = request
                    .field_index_params(KeywordIndexParamsBuilder::default().is_tenant(true));
            }
            self.call("create_field_index", || {
                self.client.create_field_index(request.clone())
            })?;
        }
        Ok(())
    }

    /// Whether the collection has the multilingual space, adding it when it has not (a
    /// collection made before it, or just now). A server that cannot add it leaves the index
    /// without: chunks are stored and searched by the index model alone (logged).
    fn ensure_multilingual_space(&self) -> bool {
        let has = || -> Result<bool> {
            let info = self.call("collection_info", || {
                self.client.collection_info(self.config.collection.as_str())
            })?;
            Ok(info
                .result
                .and_then(|r| r.config)
                .and_then(|c| c.params)
                .and_then(|p| p.vectors_config)
                .and_then(|v| v.config)
                .is_some_and(|c| {
                    matches!(c, qdrant::vectors_config::Config::ParamsMap(m)
                        if m.map.contains_key(MULTILINGUAL_VECTOR))
                }))
        };
        if has().unwrap_or(false) {
            return true;
        }
        let request = qdrant::CreateVectorNameRequestBuilder::new(
            &self.config.collection,
            MULTILINGUAL_VECTOR,
            qdrant::DenseVectorCreationConfigBuilder::new(DIMENSIONS as u64, Distance::Cosine),
        )
        .wait(true);
        let created = self.call("create_vector_name", || {
            self.client.create_vector_name(request.clone())
        });
        match (created, has()) {
            (_, Ok(true)) => true,
            (Err(e), _) => {
                tracing::warn!(
                    "{}: no multilingual vectors in this collection ({e}): chunks in other \
                     languages are searched by the index model only",
                    self.config
                );
                false
            }
            (Ok(_), _) => false,
        }
    }

    /// The id of this node's holder record of content `hash` in scope `scope_key`.
    fn holder_id(&self, scope_key: &str, hash: &str) -> u64 {
        point_id(&format!("{scope_key}\0holder\0{}", self.node), hash, 0)
    }

    /// Every node's files holding content `hash` in scope `scope_key`, and their tags: the
    /// sorted unions of the holder records.
    fn holders_union(&self, scope_key: &str, hash: &str) -> Result<Holders> {
        let filter = to_filter(&payload::content_filter(scope_key, hash));
        let mut union = BTreeSet::new();
        let mut tags = BTreeSet::new();
        let mut offset: Option<PointId> = None;
        loop {
            let mut request = ScrollPointsBuilder::new(&self.holders)
                .filter(filter.clone())
                .limit(1000)
                .with_payload(true)
                .with_vectors(false);
            if let Some(o) = offset.clone() {
                request = request.offset(o);
            }
            let page = self.call("scroll holders", || self.client.scroll(request.clone()))?;
            for p in page.result {
                let payload = json_payload(p.payload);
                union.extend(payload::locators(&payload));
                tags.extend(payload::tags(&payload));
            }
            match page.next_page_offset {
                Some(o) => offset = Some(o),
                None => {
                    return Ok(Holders {
                        locators: union.into_iter().collect(),
                        tags: tags.into_iter().collect(),
                    })
                }
            }
        }
    }

    /// Record that this node's files `mine` hold content `hash` (none: it holds it no
    /// more), and return the union of every node's records.
    fn register(&self, scope_key: &str, hash: &str, mine: &Holders) -> Result<Holders> {
        let id = self.holder_id(scope_key, hash);
        if mine.locators.is_empty() {
            let request = DeletePointsBuilder::new(&self.holders)
                .points(vec![PointId::from(id)])
                .wait(true)
                .ordering(medium());
            self.call("delete holder", || {
                self.client.delete_points(request.clone())
            })?;
        } else {
            let record = PointStruct::new(
                id,
                NamedVectors::default(),
                Payload::from(json_map(json!({
                    "scope_key": scope_key,
                    "content_hash": hash,
                    "node": self.node,
                    "locators": mine.locators,
                    "tags": mine.tags,
                    "updated_at": now_us(),
                }))),
            );
            let request = UpsertPointsBuilder::new(&self.holders, vec![record])
                .wait(true)
                .ordering(medium());
            self.call("upsert holder", || {
                self.client.upsert_points(request.clone())
            })?;
        }
        let union = self.holders_union(scope_key, hash)?;
        let key = (scope_key.to_string(), hash.to_string());
        if mine.locators.is_empty() {
            lock(&self.registered).remove(&key);
        } else {
            lock(&self.registered).insert(key, (mine.clone(), union.clone()));
        }
        Ok(union)
    }

    /// Point every chunk of content `hash` at the union of the holder records, and read the
    /// records again until they agree with what was written (another node may have changed
    /// them meanwhile). Nothing to do when no record holds the content.
    fn settle_locators(&self, scope_key: &str, hash: &str, mut union: Holders) -> Result<()> {
        let filter = to_filter(&payload::content_filter(scope_key, hash));
        for _ in 0..16 {
            if union.locators.is_empty() {
                return Ok(());
            }
            let request = SetPayloadPointsBuilder::new(
                &self.config.collection,
                Payload::from(payload::holders_update(&union)),
            )
            .points_selector(filter.clone())
            .wait(true)
            .ordering(medium());
            self.call("set_payload", || self.client.set_payload(request.clone()))?;
            let again = self.holders_union(scope_key, hash)?;
            if again == union {
                return self.refresh_card_keywords(scope_key, hash);
            }
            union = again;
        }
        Err(self.err(
            "settle locators",
            format!("the holders of {hash} kept changing"),
        ))
    }

    /// Compute the keyword vector of content `hash`'s card again from its payload: the files
    /// holding the content changed, and a card is matched on all their names.
    fn refresh_card_keywords(&self, scope_key: &str, hash: &str) -> Result<()> {
        let mut cards = Vec::new();
        self.scroll(
            Some(to_filter(&payload::card_filter(scope_key, hash))),
            Some(payload::KEYWORD_SOURCE_FIELDS),
            false,
            &mut |p| {
                let map = json_payload(p.payload);
                let sparse = self.keywords.document(&payload::keyword_source(&map));
                if let Some(id) = p.id {
                    cards.push(qdrant::PointVectors {
                        id: Some(id),
                        vectors: Some(
                            NamedVectors::default()
                                .add_vector(
                                    SPARSE_VECTOR,
                                    Vector::new_sparse(sparse.indices, sparse.values),
                                )
                                .into(),
                        ),
                    });
                }
            },
        )?;
        if cards.is_empty() {
            return Ok(());
        }
        let request = UpdatePointVectorsBuilder::new(&self.config.collection, cards)
            .wait(true)
            .ordering(medium());
        self.call("update_vectors", || {
            self.client.update_vectors(request.clone())
        })
        .map(drop)
    }

    /// Delete the points of content `hash` in scope `scope_key` written before `before`
    /// (microseconds), and count what is left of it.
    fn delete_points_before(&self, scope_key: &str, hash: &str, before: i64) -> Result<u64> {
        let mut filter = to_filter(&payload::content_filter(scope_key, hash));
        let content = filter.clone();
        filter.must.push(Condition::range(
            STORED_AT,
            Range {
                lt: Some(before as f64),
                ..Default::default()
            },
        ));
        let request = DeletePointsBuilder::new(&self.config.collection)
            .points(filter)
            .wait(true)
            .ordering(medium());
        self.call("delete", || self.client.delete_points(request.clone()))?;
        let count = CountPointsBuilder::new(&self.config.collection)
            .filter(content)
            .exact(true);
        Ok(self
            .call("count", || self.client.count(count.clone()))?
            .result
            .map_or(0, |r| r.count))
    }

    /// Visit every point matching `filter`, a page at a time.
    fn scroll(
        &self,
        filter: Option<Filter>,
        fields: Option<&[&str]>,
        with_vectors: bool,
        visit: &mut dyn FnMut(qdrant::RetrievedPoint),
    ) -> Result<()> {
        let mut offset: Option<PointId> = None;
        loop {
            let mut request = ScrollPointsBuilder::new(&self.config.collection)
                .limit(1000)
                .with_vectors(with_vectors);
            request = match fields {
                Some(f) => request.with_payload(qdrant::PayloadIncludeSelector {
                    fields: f.iter().map(|f| f.to_string()).collect(),
                }),
                None => request.with_payload(true),
            };
            if let Some(f) = filter.clone() {
                request = request.filter(f);
            }
            if let Some(o) = offset.clone() {
                request = request.offset(o);
            }
            let page = self.call("scroll", || self.client.scroll(request.clone()))?;
            page.result.into_iter().for_each(&mut *visit);
            match page.next_page_offset {
                Some(o) => offset = Some(o),
                None => return Ok(()),
            }
        }
    }

    /// A point as the server takes it: dense and keyword vectors, and the payload with the
    /// time it is written.
    fn point(
        &self,
        id: u64,
        (vector, multilingual): (&[f32], Option<&[f32]>),
        keyword: &str,
        mut payload: Map<String, Value>,
        at: i64,
    ) -> PointStruct {
        let sparse = self.keywords.document(keyword);
        payload.insert(STORED_AT.into(), json!(at));
        let mut vectors = NamedVectors::default()
            .add_vector("", Vector::new_dense(vector.to_vec()))
            .add_vector(
                SPARSE_VECTOR,
                Vector::new_sparse(sparse.indices, sparse.values),
            );
        if let Some(m) = multilingual.filter(|_| self.multilingual_space()) {
            vectors = vectors.add_vector(MULTILINGUAL_VECTOR, Vector::new_dense(m.to_vec()));
        }
        PointStruct::new(id, vectors, Payload::from(payload))
    }

    fn upsert_points(&self, points: Vec<PointStruct>) -> Result<()> {
        let request = UpsertPointsBuilder::new(&self.config.collection, points)
            .wait(true)
            .ordering(medium());
        self.call("upsert", || self.client.upsert_points(request.clone()))
            .map(drop)
    }

    /// The union of holder records for content `hash` of `scope_key`, registering `holders`
    /// as this node's first unless the same files and tags are registered already.
    fn union_for(&self, scope_key: &str, hash: &str, holders: &Holders) -> Result<Holders> {
        let key = (scope_key.to_string(), hash.to_string());
        if let Some((mine, union)) = lock(&self.registered).get(&key) {
            if mine == holders {
                return Ok(union.clone());
            }
        }
        self.register(scope_key, hash, holders)
    }
}

impl IndexRead for ServerIndex {
    /// The same request as the embedded shard's (see `EdgeIndex::rank`).
    fn rank(
        &self,
        ranking: Ranking<'_>,
        want: usize,
        min_score: Option<f32>,
        typed: &TypedFilter,
    ) -> Result<Vec<Hit>> {
        let mut request = QueryPointsBuilder::new(&self.config.collection)
            .filter(to_filter(typed))
            .limit(want as u64)
            .with_payload(true)
            .with_vectors(false);
        if matches!(ranking, Ranking::Meaning(_) | Ranking::Multilingual(_)) {
            let ef = super::MEANING_SEARCH_EF.max(want) as u64;
            request = request.params(SearchParamsBuilder::default().hnsw_ef(ef));
        }
        request = match ranking {
            Ranking::Meaning(v) => request.query(Query::new_nearest(VectorInput::new_dense(v))),
            Ranking::Multilingual(v) => {
                if !self.multilingual_space() {
                    return Ok(Vec::new());
                }
                request
                    .query(Query::new_nearest(VectorInput::new_dense(v)))
                    .using(MULTILINGUAL_VECTOR)
            }
            Ranking::Words(text) | Ranking::Name(text) => {
                let v = self
                    .keywords
                    .ranking(text, matches!(ranking, Ranking::Name(_)));
                if v.indices.is_empty() {
                    return Ok(Vec::new());
                }
                request
                    .query(Query::new_nearest(VectorInput::new_sparse(
                        v.indices, v.values,
                    )))
                    .using(SPARSE_VECTOR)
            }
        };
        if let Some(t) = min_score {
            request = request.score_threshold(t);
        }
        let points = self
            .call("query", || self.client.query(request.clone()))?
            .result;
        Ok(points
            .into_iter()
            .map(|p| payload::hit(&json_payload(p.payload), p.score))
            .collect())
    }

    fn count(&self, scope: Option<&Scope>) -> Result<usize> {
        let mut request = CountPointsBuilder::new(&self.config.collection).exact(true);
        if let Some(s) = scope {
            request = request.filter(to_filter(&payload::scope_filter(s)));
        }
        let n = self
            .call("count", || self.client.count(request.clone()))?
            .result
            .map_or(0, |r| r.count);
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn multilingual_space(&self) -> bool {
        self.multilingual.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn has_multilingual_points(&self) -> Result<bool> {
        if !self.multilingual_space() {
            return Ok(false);
        }
        let request = ScrollPointsBuilder::new(&self.config.collection)
            .filter(to_filter(&payload::with_multilingual_vector()))
            .limit(1)
            .with_payload(false)
            .with_vectors(false);
        let found = self.call("scroll", || self.client.scroll(request.clone()))?;
        Ok(!found.result.is_empty())
    }

    fn for_each_point(&self, visit: &mut dyn FnMut(PointRecord)) -> Result<()> {
        self.scroll(None, Some(payload::RECORD_FIELDS), false, &mut |p| {
            visit(payload::record(&json_payload(p.payload)));
        })
    }

    fn export_points(&self, visit: &mut dyn FnMut(ExportedPoint)) -> Result<()> {
        let mut failed = None;
        self.scroll(None, None, true, &mut |p| {
            if failed.is_some() {
                return;
            }
            let Some(PointIdOptions::Num(id)) = p.id.and_then(|i| i.point_id_options) else {
                failed = Some("a point without a numeric id".to_string());
                return;
            };
            let multilingual = match p
                .vectors
                .as_ref()
                .and_then(|v| v.get_vector_by_name(MULTILINGUAL_VECTOR))
            {
                Some(qdrant::vector_output::Vector::Dense(d)) => Some(d.data),
                _ => None,
            };
            let vector = match p.vectors.and_then(|v| v.get_vector_by_name("")) {
                Some(qdrant::vector_output::Vector::Dense(d)) => d.data,
                _ => Vec::new(),
            };
            if vector.is_empty() {
                failed = Some(format!("point {id} has no dense vector"));
                return;
            }
            let mut payload = json_payload(p.payload);
            payload.remove(STORED_AT);
            visit(ExportedPoint {
                id,
                vector,
                multilingual,
                payload,
            });
        })?;
        failed.map_or(Ok(()), |reason| Err(self.err("export", reason)))
    }
}

impl IndexWrite for ServerIndex {
    fn upsert(&self, scope: &Scope, chunks: &[StoredChunk]) -> Result<()> {
        if chunks.is_empty() {
            return Ok(());
        }
        let scope_key = scope.key();
        // Registered before the points are written: a node deleting the content meanwhile
        // sees the record and leaves the points (see the module docs).
        let mut unions: HashMap<&str, Holders> = HashMap::new();
        for c in chunks {
            if !unions.contains_key(c.content_hash.as_str()) {
                let mine = Holders {
                    locators: c.locators.clone(),
                    tags: c.tags.clone(),
                };
                let union = self.union_for(&scope_key, &c.content_hash, &mine)?;
                unions.insert(&c.content_hash, union);
            }
        }
        let at = now_us();
        let points = chunks
            .iter()
            .map(|c| {
                let keyword = keyword_text(
                    &c.chunk.text,
                    c.chunk.context_ref.section_id.as_deref(),
                    &c.locators,
                    c.chunk.kind,
                );
                let mut payload = json_map(payload::of_chunk(scope, &scope_key, c));
                if let Some(union) = unions
                    .get(c.content_hash.as_str())
                    .filter(|u| !u.locators.is_empty())
                {
                    payload.extend(payload::holders_update(union));
                }
                self.point(
                    point_id(&scope_key, &c.content_hash, c.chunk.index),
                    (&c.vector, c.multilingual.as_deref()),
                    &keyword,
                    payload,
                    at,
                )
            })
            .collect();
        self.upsert_points(points)?;
        let mut touched = lock(&self.touched);
        for hash in unions.into_keys() {
            touched.insert((scope_key.clone(), hash.to_string()));
        }
        drop(touched);
        crate::failpoint::hit("store.upsert");
        Ok(())
    }

    fn set_holders(&self, scope: &Scope, hash: &str, holders: &Holders) -> Result<()> {
        let scope_key = scope.key();
        let union = self.register(&scope_key, hash, holders)?;
        self.settle_locators(&scope_key, hash, union)?;
        crate::failpoint::hit("store.set_locators");
        Ok(())
    }

    /// This node no longer holds content `hash`: its record goes, and the points too when no
    /// other node's record holds them (see the module docs).
    fn delete_content_by_key(&self, scope_key: &str, hash: &str) -> Result<()> {
        let skew = i64::try_from(self.config.clock_skew.as_micros()).unwrap_or(i64::MAX);
        self.register(scope_key, hash, &Holders::default())?;
        lock(&self.touched).remove(&(scope_key.to_string(), hash.to_string()));
        for attempt in 0..4 {
            let checked = now_us();
            let union = self.holders_union(scope_key, hash)?;
            if !union.locators.is_empty() {
                self.settle_locators(scope_key, hash, union)?;
                break;
            }
            let left = self.delete_points_before(scope_key, hash, checked.saturating_sub(skew))?;
            if left == 0 {
                break;
            }
            if attempt == 3 {
                tracing::warn!(
                    "{}: {left} points of {hash} were written within the clock skew of their delete; the next repair deletes them",
                    self.config
                );
            } else {
                std::thread::sleep(self.config.clock_skew + Duration::from_millis(10));
            }
        }
        crate::failpoint::hit("store.delete");
        Ok(())
    }

    /// Settle the locators of every content written since the last flush (writes are durable
    /// on the server when they return).
    fn flush(&self) {
        let touched = std::mem::take(&mut *lock(&self.touched));
        for (scope_key, hash) in touched {
            let settled = self
                .holders_union(&scope_key, &hash)
                .and_then(|union| self.settle_locators(&scope_key, &hash, union));
            if let Err(e) = settled {
                tracing::warn!("{}: locators of {hash}: {e}", self.config);
                lock(&self.touched).insert((scope_key, hash));
            }
        }
        crate::failpoint::hit("store.flush");
    }

    /// The server builds its search structures by itself.
    fn optimize(&self) -> Result<bool> {
        Ok(false)
    }

    /// Insert `points` as they are, with this node registered as holding their contents
    /// (the files their payloads name).
    fn import_points(&self, points: &[ExportedPoint]) -> Result<()> {
        let mut registered: BTreeSet<(String, String)> = BTreeSet::new();
        for p in points {
            let record = payload::record(&p.payload);
            let key = (record.scope_key, record.content_hash);
            if !registered.contains(&key) {
                let mine = Holders {
                    locators: record.locators,
                    tags: record.tags,
                };
                self.register(&key.0, &key.1, &mine)?;
                registered.insert(key);
            }
        }
        let at = now_us();
        for batch in points.chunks(IMPORT_BATCH) {
            let batch = batch
                .iter()
                .map(|p| {
                    let keyword = payload::keyword_source(&p.payload);
                    self.point(
                        p.id,
                        (&p.vector, p.multilingual.as_deref()),
                        &keyword,
                        p.payload.clone(),
                        at,
                    )
                })
                .collect();
            self.upsert_points(batch)?;
        }
        Ok(())
    }
}

/// A JSON object as a map (anything else: empty).
fn json_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A payload as the server returns it, in JSON.
fn json_payload(p: HashMap<String, qdrant::Value>) -> Map<String, Value> {
    p.into_iter().map(|(k, v)| (k, v.into_json())).collect()
}

/// A filter in Qdrant's JSON syntax (as [`payload`] builds them) in the client's type: the
/// subset the payload schema uses (`must`/`should`/`must_not`, `match` of a keyword, integer
/// or boolean, `range`, `is_empty`, `has_id`).
/// A typed filter (built by [`payload`]) in the client's type: every condition converted.
fn to_filter(f: &TypedFilter) -> Filter {
    let list = |conditions: &[TypedCondition]| conditions.iter().map(to_condition).collect();
    Filter {
        should: list(&f.should),
        min_should: None,
        must: list(&f.must),
        must_not: list(&f.must_not),
    }
}

fn to_condition(c: &TypedCondition) -> Condition {
    use qdrant::r#match::MatchValue;
    match c {
        TypedCondition::Is(field, value) => Condition::matches(
            field.key(),
            match value {
                // Explicitly a keyword: the client makes a string with a space a full-text
                // match.
                TypedValue::Keyword(s) => MatchValue::Keyword(s.clone()),
                TypedValue::Integer(i) => MatchValue::Integer(*i),
                TypedValue::Flag(b) => MatchValue::Boolean(*b),
            },
        ),
        TypedCondition::Between { field, first, last } => Condition::range(
            field.key(),
            Range {
                gte: Some(*first as f64),
                lte: Some(*last as f64),
                ..Default::default()
            },
        ),
        TypedCondition::Empty(field) => Condition::is_empty(field.key()),
        TypedCondition::HasId(ids) => Condition::has_id(ids.iter().copied()),
        TypedCondition::HasKeywordVector => Condition::has_vector(SPARSE_VECTOR),
        TypedCondition::HasMultilingualVector => Condition::has_vector(MULTILINGUAL_VECTOR),
        TypedCondition::All(inner) => Condition::from(to_filter(inner)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SearchFilter;

    #[test]
    fn store_addresses_parse_with_defaults_and_options() {
        let c: ServerConfig = "qdrant://127.0.0.1:16334/docs".parse().unwrap();
        assert_eq!(c.url, "http://127.0.0.1:16334");
        assert_eq!(c.collection, "docs");
        assert_eq!((c.shards, c.replication), (1, 1));
        assert_eq!(c.holders_collection(), "docs_holders");
        assert_eq!(c.to_string(), "qdrant://127.0.0.1:16334/docs");
        let c: ServerConfig = "qdrant://db/docs?shards=3&replication=2".parse().unwrap();
        assert_eq!(c.url, "http://db:6334");
        assert_eq!((c.shards, c.replication), (3, 2));
        for bad in [
            "db:6334/docs",
            "qdrant://db:6334",
            "qdrant://db:6334/",
            "qdrant:///docs",
            "qdrant://db/do/cs",
            "qdrant://db/docs?shards=0",
            "qdrant://db/docs?colour=red",
            "https://db/docs",
        ] {
            let e = bad.parse::<ServerConfig>().unwrap_err();
            assert!(matches!(e, Error::Config(_)), "{bad}: {e}");
        }
    }

    #[test]
    fn every_filter_the_payload_schema_builds_converts() {
        let scope = Scope {
            user_id: "u".into(),
            feature_instance_id: Some("f".into()),
            mandate_id: Some("m".into()),
            is_shared: false,
            workflow_id: None,
        };
        let all = SearchFilter {
            locator_prefix: Some("/d/a.zip!/".into()),
            content_type: Some(extractors::ContentType::Text),
            pages: Some((2, 4)),
            section_path: Some("Intro".into()),
            sheet: Some("S".into()),
            slide: Some(3),
            tags: vec!["team=ops".into(), "case=17".into()],
            owner_key: Some(scope.key()),
            kind: Some(crate::embed::ChunkKind::Card),
            file_name: Some("Report.PDF".into()),
            shared: Some(false),
            ids: vec![7, 9],
            name_words: vec!["report".into(), "q3".into()],
            unnamed_under: vec![(scope.key(), "h1".into()), (scope.key(), "h2".into())],
        };
        let f = to_filter(&payload::search_filter(&scope, &all));
        // scope + eight narrowing conditions + one per tag + the owner + shared or not + ids
        // + one per name word
        assert_eq!(f.must.len(), 16);
        // The locator: named in `containers`, or one of this scope's two unnamed contents.
        let under = &f.must[1];
        assert!(
            matches!(&under.condition_one_of, Some(qdrant::condition::ConditionOneOf::Filter(inner)) if inner.should.len() == 2),
            "the locator's two alternatives: {under:?}"
        );
        let passages = SearchFilter {
            kind: Some(crate::embed::ChunkKind::Passage),
            ..SearchFilter::default()
        };
        let f = to_filter(&payload::search_filter(&scope, &passages));
        assert_eq!((f.must.len(), f.must_not.len()), (1, 1));
        let scope_rule = &f.must[0];
        assert!(
            matches!(&scope_rule.condition_one_of, Some(qdrant::condition::ConditionOneOf::Filter(inner)) if inner.should.len() == 2),
            "the access rule's two alternatives (own, shared in the mandate): {scope_rule:?}"
        );
        assert_eq!(to_filter(&payload::lacking_derived()).must.len(), 1);
        assert_eq!(to_filter(&payload::content_filter("k", "h")).must.len(), 2);
    }
}
