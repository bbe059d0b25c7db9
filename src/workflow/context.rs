//! `gather_context`: before an agent round, the three layers of the knowledge store, in
//! priority order — first what the agent's own run established: **all** the workflow's
//! entities (its working facts: customer, amounts, dates; most recently set first, whether or
//! not they match the query), then the relevant passages of its tool results (those of the
//! most recent results first), then its latest conversation summaries; after them the
//! knowledge base: the caller's own documents (its user and feature instance) that match the
//! query, then documents shared in its mandate that match. Each layer has its own limit and
//! floor, every passage is there once (the same text found in two layers stays in the first).
//! However many documents match, they never push the run's own facts out of a budget. The
//! answer's budget is the tool's (`crate::tools`): this module finds and orders, the tool
//! packs.

use std::collections::HashSet;

use extractors::Scope;
use serde::Serialize;

use super::records::{list_as, Item, Kind};
use super::{workflow_scope, WorkflowItem, Workflows, RESULTS_FOLDER};
use crate::config::{ContextLayers, LayerLimit};
use crate::embed::ChunkKind;
use crate::error::{Error, Result};
use crate::index::{Hit, SearchFilter, SearchMode};

/// Which layer an item comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// The caller's own documents.
    Instance,
    /// The workflow's entities.
    Entity,
    /// Documents shared in the mandate.
    Shared,
    /// A conversation summary.
    Summary,
    /// A stored tool result.
    ToolResult,
}

/// One item of a gathered context, in priority order.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)] // a few dozen per call, built once
pub enum ContextItem {
    /// A passage of a document (own or shared): read more with its locator.
    Passage {
        /// Own or shared.
        layer: Layer,
        /// The hit, with its locator, owner and score.
        hit: Hit,
    },
    /// A remembered entity (every one of the workflow's, most recently set first).
    Entity {
        /// Its key, value and source.
        entity: super::Entity,
    },
    /// A conversation summary.
    Summary(super::Summary),
    /// A passage of a stored tool result: recall the rest by its handle.
    ToolResult {
        /// The result's handle, tool and size.
        meta: super::ResultMeta,
        /// The passage.
        hit: Hit,
    },
}

impl ContextItem {
    /// The layer it is from.
    pub fn layer(&self) -> Layer {
        match self {
            ContextItem::Passage { layer, .. } => *layer,
            ContextItem::Entity { .. } => Layer::Entity,
            ContextItem::Summary(_) => Layer::Summary,
            ContextItem::ToolResult { .. } => Layer::ToolResult,
        }
    }

    /// The text it shows (what deduplication compares).
    pub fn text(&self) -> String {
        match self {
            ContextItem::Passage { hit, .. } | ContextItem::ToolResult { hit, .. } => {
                hit.text.clone()
            }
            ContextItem::Entity { entity, .. } => format!("{}: {}", entity.key, entity.value),
            ContextItem::Summary(s) => s.text.clone(),
        }
    }
}

/// A text reduced to what makes two passages the same: its words, lowercase.
fn fingerprint(text: &str) -> blake3::Hash {
    let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
    blake3::hash(words.join(" ").as_bytes())
}

impl Workflows<'_> {
    /// The context for `query` in `workflow` of `scope`: every layer's items in priority
    /// order (see the module), each passage once. Searches run in `mode` (hybrid by default).
    pub fn gather(
        &self,
        scope: &Scope,
        workflow: &str,
        query: &str,
        layers: &ContextLayers,
        mode: SearchMode,
    ) -> Result<Vec<ContextItem>> {
        layers.validate().map_err(Error::Request)?;
        let w = workflow_scope(scope, workflow)?;
        // The caller's documents: its scope without the workflow (the read rule then admits
        // no workflow's content at all).
        let docs = Scope {
            workflow_id: None,
            ..scope.clone()
        };
        self.sweep();
        // Embedded once for every layer's search (and a too long query refused).
        let vector = self.ing.query_vector(query, mode)?;
        let search = |reader: &Scope, limit: &LayerLimit, filter: SearchFilter| {
            if limit.limit == 0 || query.trim().is_empty() {
                return Ok(Vec::new());
            }
            self.ing.search_embedded(
                query,
                vector.clone(),
                reader,
                limit.limit,
                limit.min_score,
                &filter,
                mode,
            )
        };
        // Gathering is using the workflow.
        self.touch(&w)?;
        let mut items = Vec::new();
        // Passages only: a file's card says what the file is, not what it says.
        let passages = SearchFilter {
            kind: Some(ChunkKind::Passage),
            ..SearchFilter::default()
        };
        let own = SearchFilter {
            shared: Some(false),
            ..passages.clone()
        };
        let in_workflow = |folder: &str| SearchFilter {
            owner_key: Some(w.key()),
            locator_prefix: Some(folder.to_string()),
            ..passages.clone()
        };
        // The workflow's working facts, whatever the query: the most recently set first.
        let mut entities = list_as(self.store(), &w, Kind::Entity, None, |i| match i {
            Item::Entity(e) => Some(e),
            _ => None,
        })?;
        entities.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.key.cmp(&b.key)));
        entities.truncate(layers.entities.limit);
        items.extend(
            entities
                .into_iter()
                .map(|entity| ContextItem::Entity { entity }),
        );
        // Tool results: the relevant passages, those of the most recent results first (a
        // wider search, then the newest results' passages by score, then the others').
        let wide = LayerLimit {
            limit: layers.tool_results.limit.saturating_mul(4),
            ..layers.tool_results
        };
        let mut found = Vec::new();
        for hit in search(&w, &wide, in_workflow(RESULTS_FOLDER))? {
            if let Some(WorkflowItem::Result(meta)) = self.item_named(&w, file_of(&hit))? {
                found.push((meta, hit));
            }
        }
        let recent: HashSet<String> = list_as(
            self.store(),
            &w,
            Kind::Result,
            Some(RECENT_RESULTS),
            |i| match i {
                Item::Result(m) => Some(m.handle),
                _ => None,
            },
        )?
        .into_iter()
        .collect();
        found.sort_by(|(a, x), (b, y)| {
            let (ra, rb) = (recent.contains(&a.handle), recent.contains(&b.handle));
            rb.cmp(&ra).then(y.score.total_cmp(&x.score))
        });
        found.truncate(layers.tool_results.limit);
        items.extend(
            found
                .into_iter()
                .map(|(meta, hit)| ContextItem::ToolResult { meta, hit }),
        );
        // Then what the run concluded: its latest summaries, the newest first.
        let summaries = match layers.summary.limit {
            0 => Vec::new(),
            n => self.latest_summaries(&w, Some(n))?,
        };
        for s in summaries.into_iter().rev() {
            items.push(ContextItem::Summary(s));
        }
        // Last the knowledge base: the caller's own documents, then the mandate's shared ones.
        for hit in search(&docs, &layers.instance, own)? {
            items.push(ContextItem::Passage {
                layer: Layer::Instance,
                hit,
            });
        }
        if docs.mandate_id.is_some() {
            let shared = SearchFilter {
                shared: Some(true),
                ..passages.clone()
            };
            for hit in search(&docs, &layers.shared, shared)? {
                items.push(ContextItem::Passage {
                    layer: Layer::Shared,
                    hit,
                });
            }
        }
        // One passage once: the first (highest-priority) layer keeps it.
        let mut seen = HashSet::new();
        items.retain(|i| seen.insert(fingerprint(&i.text())));
        Ok(items)
    }
}

/// How many of a workflow's newest tool results come first in its context (their relevant
/// passages, before older results' passages).
const RECENT_RESULTS: usize = 3;

/// The top-level file a hit is in (its locator without the fragment, and without the
/// members of a result that unpacked as a container).
fn file_of(hit: &Hit) -> &str {
    extractors::split_top(extractors::split_fragment(&hit.locator).0).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_words_are_the_same_passage() {
        assert_eq!(fingerprint("The  Cat\nsat"), fingerprint("the cat sat"));
        assert_ne!(fingerprint("the cat sat"), fingerprint("the cat sat down"));
    }

    use crate::config::MAX_LAYER_LIMIT;

    #[test]
    fn limits_and_floors_are_checked() {
        assert!(ContextLayers::default().validate().is_ok());
        let mut l = ContextLayers::default();
        l.shared.limit = MAX_LAYER_LIMIT + 1;
        assert!(l.validate().is_err());
        let mut l = ContextLayers::default();
        l.instance.min_score = Some(1.5);
        assert!(l.validate().unwrap_err().contains("instance"));
        let parsed: ContextLayers = serde_json::from_str(r#"{"shared": {"limit": 3}}"#).unwrap();
        assert_eq!(parsed.shared.limit, 3);
        assert_eq!(parsed.shared.min_score, None);
        assert_eq!(parsed.instance, ContextLayers::default().instance);
        assert!(serde_json::from_str::<ContextLayers>(r#"{"bogus": {}}"#).is_err());
    }
}
