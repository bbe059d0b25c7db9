//! The cards of entries without content of their own. A file that failed or was skipped,
//! and an archive (whose members have their own points), would otherwise be nowhere in the
//! index: a question naming it would find nothing. Each such catalog entry gets one card
//! point, keyed by its locator ([`crate::index::entry_card_key`]) and not by its bytes, so
//! that the same bytes indexed later under any name never inherit it. The card says what the
//! file is, why its content is not searchable (the ledger's reason) and, for an archive,
//! what it holds; its keywords are its name and the folders above it, like every card's.
//!
//! **What holds nothing costs almost nothing.** A link, a device or a FIFO inside an archive
//! gets no card (its archive's card counts it); of an archive's other members without content
//! (skipped by a limit, failed), the first [`MAX_MEMBER_CARDS`] in locator order get one, the
//! rest only their catalog row (their archive's card counts them, `browse_container` lists
//! them): a flood of empty members costs rows, not embeddings. Files given directly and
//! uploads always get theirs.
//!
//! A card pass runs at each catalog checkpoint of a run (over the entries recorded since)
//! and at its end (over all of the scope's): it deletes the cards of entries replaced or
//! removed since ([`ScopeCatalog::take_retired_cards`]), then embeds and stores the cards of
//! the entries that want one, and records each as stored (its `chunks` becomes 1) only if
//! its entry did not change meanwhile. A crash between the two is repaired on the next open
//! (`index/repair.rs`): a card without its entry is deleted, an entry without its card is
//! marked to get it again.

use extractors::{ContentType, Scope};

use super::books::ScopeCatalog;
use crate::embed::card::{entry_card_context, entry_card_text, EntryFacts};
use crate::error::Result;
use crate::index::{entry_card_key, CatalogEntry, EntryStatus, StoredChunk};
use crate::services::Services;

/// Cards embedded per model call.
const CARDS_PER_CALL: usize = 64;
/// Names inside an archive its card lists, at most.
const MAX_MEMBER_NAMES: usize = 40;

/// Which entries a card pass looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// At a checkpoint: those recorded since the last pass, at most [`CHECKPOINT_CARDS`]
    /// (the rest are noted for the next), so a pass costs what changed, bounded.
    Checkpoint,
    /// At the end of a run: every entry of the scope that wants a card (so an index made
    /// before entry cards gets them, and nothing noted is missed).
    End,
}

/// Cards of an archive's members without content, at most (per top-level archive: per
/// upload).
pub(crate) const MAX_MEMBER_CARDS: usize = 64;

/// Whether `entry` is a member that holds nothing worth a card of its own: a link, a device
/// or a FIFO (never read, nothing to say but that).
fn holds_nothing(entry: &CatalogEntry) -> bool {
    entry.parent.is_some()
        && entry.status == EntryStatus::Skipped
        && entry
            .reason
            .as_deref()
            .is_some_and(|r| r.starts_with("link:") || r.starts_with("special file"))
}

/// `wanting` without the members [`MAX_MEMBER_CARDS`] leaves out: for each archive, the
/// members without content that get a card are its first ones in locator order, whichever
/// pass looks at them.
fn within_bounds(catalog: &ScopeCatalog<'_>, wanting: Vec<CatalogEntry>) -> Vec<CatalogEntry> {
    let mut allowed: std::collections::HashMap<String, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    let mut kept = Vec::with_capacity(wanting.len());
    for entry in wanting {
        let Some(parent) = entry.parent.clone() else {
            kept.push(entry);
            continue;
        };
        if holds_nothing(&entry) {
            continue;
        }
        let members = allowed.entry(parent).or_insert_with_key(|parent| {
            catalog
                .members_of(parent)
                .into_iter()
                .filter(|m| m.status != EntryStatus::Indexed && !holds_nothing(m))
                .take(MAX_MEMBER_CARDS)
                .map(|m| m.locator)
                .collect()
        });
        if members.contains(&entry.locator) {
            kept.push(entry);
        }
    }
    kept
}

/// Cards one checkpoint pass stores at most.
const CHECKPOINT_CARDS: usize = 256;

/// One card pass over `catalog`'s scope (see the module documentation); how many cards were
/// stored. Entries that changed while their card was made are noted to be looked at again by
/// the next pass. Stores no card without file cards (the recipe says whether an index has
/// them).
pub(super) fn write_entry_cards(
    ing: &Services,
    catalog: &ScopeCatalog<'_>,
    pass: Pass,
) -> Result<u64> {
    delete_retired_cards(ing, catalog)?;
    if !ing.config().chunking.file_cards {
        catalog.forget_noted();
        return Ok(0);
    }
    let mut wanting = within_bounds(catalog, catalog.wanting_cards(pass == Pass::End));
    if pass == Pass::Checkpoint && wanting.len() > CHECKPOINT_CARDS {
        let later = wanting.split_off(CHECKPOINT_CARDS);
        catalog.note_again(later.into_iter().map(|e| e.locator));
    }
    if wanting.is_empty() {
        return Ok(0);
    }
    let scope = catalog.scope();
    let embedder = ing.embedder()?;
    let chunker = ing.chunker()?;
    let store = ing.store()?;
    let mut stored_cards = 0;
    for batch in wanting.chunks(CARDS_PER_CALL) {
        let chunks: Vec<crate::embed::Chunk> = batch
            .iter()
            .map(|entry| {
                let (members, member_count, unread) = if entry.status == EntryStatus::Container {
                    catalog.member_names(&entry.locator, MAX_MEMBER_NAMES)
                } else {
                    (Vec::new(), 0, 0)
                };
                let text = entry_card_text(&EntryFacts {
                    locator: &entry.locator,
                    status: entry.status.as_str(),
                    reason: entry.reason.as_deref(),
                    mime: entry.mime.as_deref(),
                    size: entry.size,
                    members: &members,
                    member_count,
                    unread,
                });
                let mut chunk = chunker.card(0, &entry.locator, &text, content_type_of(entry));
                chunk.context = entry_card_context(&entry.locator);
                chunk
            })
            .collect();
        let texts: Vec<_> = chunks.iter().map(|c| c.embedding_text()).collect();
        let refs: Vec<&str> = texts.iter().map(|t| t.as_ref()).collect();
        let vectors = embedder.embed(&refs)?;
        if vectors.len() != chunks.len() {
            return Err(crate::error::Error::Embed(format!(
                "{} vectors for {} entry cards",
                vectors.len(),
                chunks.len()
            )));
        }
        let mut points: Vec<StoredChunk> = batch
            .iter()
            .zip(chunks)
            .zip(vectors)
            .map(|((entry, chunk), vector)| StoredChunk {
                other_language: crate::embed::language::in_other_language(&chunk.text),
                chunk,
                vector,
                multilingual: None,
                content_hash: entry_card_key(&entry.locator),
                locators: vec![entry.locator.clone()],
                tags: entry.tags.clone(),
            })
            .collect();
        ing.add_multilingual_vectors(&mut points)?;
        store.upsert(scope, &points)?;
        for entry in batch {
            if catalog.set_card_stored(entry) {
                stored_cards += 1;
            } else {
                // It changed meanwhile: the next pass keeps or deletes the card.
                catalog.retire_card(entry.locator.clone());
            }
        }
    }
    Ok(stored_cards)
}

/// Delete the cards of the entries replaced or removed since the last pass, unless their
/// locator has a card again.
pub(super) fn delete_retired_cards(ing: &Services, catalog: &ScopeCatalog<'_>) -> Result<()> {
    let retired = catalog.take_retired_cards();
    if retired.is_empty() {
        return Ok(());
    }
    let store = ing.store()?;
    let scope = catalog.scope();
    for locator in retired {
        if catalog.get(&locator).and_then(|e| e.card()).is_none() {
            store.delete_content(scope, &entry_card_key(&locator))?;
        }
    }
    Ok(())
}

/// The content type a card of `entry` stands for, by its detected type: a picture's is an
/// `image`, a recording's an audio or video stream, anything else `other`.
fn content_type_of(entry: &CatalogEntry) -> ContentType {
    match entry.mime.as_deref() {
        Some(m) if m.starts_with("image/") => ContentType::Image,
        Some(m) if m.starts_with("audio/") => ContentType::Audiostream,
        Some(m) if m.starts_with("video/") => ContentType::Videostream,
        _ => ContentType::Other,
    }
}

/// Write the cards of every entry of `scope` again (after `reindex` changed the model or
/// the recipe): each card is deleted and its entry marked as wanting it, then one pass
/// embeds them all (none when the recipe has no file cards).
pub(crate) fn rewrite_entry_cards(ing: &Services, scope: &Scope) -> Result<u64> {
    let catalog = ScopeCatalog::new(ing.catalog(), scope);
    {
        let books = ing.catalog();
        for entry in books
            .entries(scope)
            .into_iter()
            .filter(|e| e.card().is_some())
        {
            books.set_card_missing(scope, &entry.locator);
            catalog.retire_card(entry.locator);
        }
    }
    write_entry_cards(ing, &catalog, Pass::End)
}
