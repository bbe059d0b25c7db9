//! The run's view of the catalog: one scope's entries, through the few operations the stages
//! need, through the catalog interface ([`Catalog`]): no stage holds a lock. A run has its
//! scope to itself (`RunSlots`), so reading an entry and then writing it is safe here; what
//! must happen in one step across scopes (write a content index and record its file) is one
//! operation of the interface.
//!
//! It also keeps the list of entry cards to retire: whenever an entry that has a card of
//! its own ([`CatalogEntry::card`]) is replaced or removed, its locator is noted, and the
//! next card pass (`entry_cards.rs`) deletes that card unless the locator has one again.

use std::sync::Mutex;

use extractors::Scope;

use crate::error::Result;
use crate::index::objects::ContentRecord;
use crate::index::{holder_rank, Catalog, CatalogEntry, Holders};
use crate::lock;

/// Whether `a` and `b` are the same entry but for whether its card is stored.
fn same_but_card(a: &CatalogEntry, b: &CatalogEntry) -> bool {
    CatalogEntry {
        chunks: a.chunks,
        ..b.clone()
    } == *a
}

/// See the module documentation.
pub(super) struct ScopeCatalog<'a> {
    catalog: &'a dyn Catalog,
    scope: &'a Scope,
    /// Locators whose entry had a card when it was replaced or removed.
    retired_cards: Mutex<Vec<String>>,
    /// Locators recorded since the last card pass with an entry that wants a card.
    new_cards: Mutex<Vec<String>>,
}

impl<'a> ScopeCatalog<'a> {
    pub(super) fn new(catalog: &'a dyn Catalog, scope: &'a Scope) -> Self {
        ScopeCatalog {
            catalog,
            scope,
            retired_cards: Mutex::new(Vec::new()),
            new_cards: Mutex::new(Vec::new()),
        }
    }

    /// The scope this view is of.
    pub(super) fn scope(&self) -> &Scope {
        self.scope
    }

    /// Note that `old`, an entry just replaced or removed, may leave a card behind.
    fn retire(&self, old: Option<&CatalogEntry>) {
        if let Some(old) = old.filter(|e| e.card().is_some()) {
            lock(&self.retired_cards).push(old.locator.clone());
        }
    }

    /// Note that the card of `locator` may have to go (see the module documentation).
    pub(super) fn retire_card(&self, locator: String) {
        lock(&self.retired_cards).push(locator);
    }

    /// The locators whose cards may have to go, noted since the last call.
    pub(super) fn take_retired_cards(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.retired_cards))
    }

    /// Note these locators again: a pass left their cards for the next one.
    pub(super) fn note_again(&self, locators: impl Iterator<Item = String>) {
        lock(&self.new_cards).extend(locators);
    }

    /// Forget the entries noted as wanting cards (an index without file cards makes none).
    pub(super) fn forget_noted(&self) {
        lock(&self.new_cards).clear();
    }

    /// Note that `new`, an entry just recorded, may want a card.
    fn note_new(&self, new: &CatalogEntry) {
        if new.wants_card() {
            lock(&self.new_cards).push(new.locator.clone());
        }
    }

    /// The entries that want a card of their own ([`CatalogEntry::wants_card`]): all of
    /// the scope's, or (`all` false) those recorded since the last call, so a pass during a
    /// run costs what changed, not the scope's size.
    pub(super) fn wanting_cards(&self, all: bool) -> Vec<CatalogEntry> {
        let noted = std::mem::take(&mut *lock(&self.new_cards));
        let catalog = self.catalog;
        if all {
            return catalog.wanting_cards(self.scope);
        }
        let mut wanting: Vec<CatalogEntry> = noted
            .iter()
            .filter_map(|l| catalog.get(self.scope, l))
            .filter(|e| e.wants_card())
            .collect();
        wanting.sort_by(|a, b| a.locator.cmp(&b.locator));
        wanting.dedup_by(|a, b| a.locator == b.locator);
        wanting
    }

    /// Record that `entry`'s card is stored, if the entry is still as it was.
    pub(super) fn set_card_stored(&self, entry: &CatalogEntry) -> bool {
        self.catalog.set_card_stored(self.scope, entry)
    }

    /// The first `max` names inside archive `locator`, how many there are, and how many of
    /// them were not read (skipped or failed).
    pub(super) fn member_names(&self, locator: &str, max: usize) -> (Vec<String>, usize, usize) {
        self.catalog.member_names(self.scope, locator, max)
    }

    /// The entry of `locator`.
    pub(super) fn get(&self, locator: &str) -> Option<CatalogEntry> {
        self.catalog.get(self.scope, locator)
    }

    /// Record `entry`; the content (hash, chunks) its locator held before, if any. An entry
    /// recorded again as it was (a link skipped at every sync, a failed file retried in
    /// vain) keeps its card.
    pub(super) fn put(&self, mut entry: CatalogEntry) -> Option<(String, u32)> {
        let catalog = self.catalog;
        let old = catalog.get(self.scope, &entry.locator);
        match &old {
            Some(o) if o.card().is_some() && same_but_card(o, &entry) => entry.chunks = o.chunks,
            _ => self.retire(old.as_ref()),
        }
        self.note_new(&entry);
        catalog.put(self.scope, entry);
        old.and_then(|o| o.content())
    }

    /// Forget `locator`; its entry. The archives above it list their members' names: their
    /// cards are made again.
    pub(super) fn remove(&self, locator: &str) -> Option<CatalogEntry> {
        let removed = self.catalog.remove(self.scope, locator);
        self.retire(removed.as_ref());
        if removed.is_some() {
            let archives: Vec<&str> = locator
                .match_indices(extractors::MEMBER_SEPARATOR)
                .filter_map(|(at, _)| locator.get(..at))
                .collect();
            for archive in archives {
                self.remake_card(archive);
            }
        }
        removed
    }

    /// The archives inside archive `top` (just recorded, with all its members): their cards
    /// may have been made before all their members were recorded, so they are made again.
    pub(super) fn remake_nested_cards(&self, top: &str) {
        let nested: Vec<String> = self
            .catalog
            .members_of(self.scope, top)
            .into_iter()
            .filter(|m| m.status == crate::index::EntryStatus::Container && m.card().is_some())
            .map(|m| m.locator)
            .collect();
        for archive in nested {
            self.remake_card(&archive);
        }
    }

    /// Make the card of the entry at `locator` again at the next pass, if it has one.
    fn remake_card(&self, locator: &str) {
        if self
            .catalog
            .get(self.scope, locator)
            .is_some_and(|e| e.card().is_some())
        {
            self.catalog.set_card_missing(self.scope, locator);
            lock(&self.retired_cards).push(locator.to_string());
            lock(&self.new_cards).push(locator.to_string());
        }
    }

    /// The members of archive `parent`.
    pub(super) fn members_of(&self, parent: &str) -> Vec<CatalogEntry> {
        self.catalog.members_of(self.scope, parent)
    }

    /// The entries whose locator starts with `prefix`.
    pub(super) fn under(&self, prefix: &str) -> Vec<CatalogEntry> {
        self.catalog.under(self.scope, prefix)
    }

    /// The top-level entries (files on disk, archives) under folder or file `root`.
    pub(super) fn top_level_under(&self, root: &str) -> Vec<CatalogEntry> {
        self.catalog.top_level_under(self.scope, root)
    }

    /// Whether every one of `locators` has an entry.
    pub(super) fn has_all<'l>(&self, mut locators: impl Iterator<Item = &'l String>) -> bool {
        locators.all(|l| self.catalog.get(self.scope, l).is_some())
    }

    /// The locators holding content `hash`, in locator order.
    pub(super) fn locators_with_hash(&self, hash: &str) -> Vec<String> {
        self.catalog.locators_with_hash(self.scope, hash)
    }

    /// Whether any locator holds content `hash`.
    pub(super) fn holds(&self, hash: &str) -> bool {
        !self.locators_with_hash(hash).is_empty()
    }

    /// The files holding content `hash` and their tags, as the points' payload needs them.
    pub(super) fn holders(&self, hash: &str) -> Holders {
        self.catalog.holders(self.scope, hash)
    }

    /// The chunk count of content `hash` and a locator other than `locator` holding it.
    pub(super) fn held_elsewhere(
        &self,
        hash: &str,
        locator: &str,
    ) -> (Option<u32>, Option<String>) {
        let catalog = self.catalog;
        let locators = catalog.locators_with_hash(self.scope, hash);
        let chunks = locators
            .first()
            .and_then(|l| catalog.get(self.scope, l))
            .map(|e| e.chunks);
        // The one a hit would show (the same rule as the points' holders).
        let original = locators
            .into_iter()
            .filter(|l| l != locator)
            .min_by(|a, b| holder_rank(a).cmp(&holder_rank(b)));
        (chunks, original)
    }

    /// Write content `hash`'s index and object pack, then record `entry`, in one step
    /// ([`CatalogContents::write_content_and_put`]). Nothing is recorded when the write fails.
    pub(super) fn write_content_and_put(
        &self,
        hash: &str,
        content: &ContentRecord,
        entry: CatalogEntry,
    ) -> Result<()> {
        let wants_card = entry.wants_card().then(|| entry.locator.clone());
        let old = self
            .catalog
            .write_content_and_put(self.scope, hash, content, entry)?;
        self.retire(old.as_ref());
        if let Some(locator) = wants_card {
            lock(&self.new_cards).push(locator);
        }
        Ok(())
    }

    /// Delete content `hash`'s index unless another scope holds the same bytes.
    pub(super) fn drop_content_index(&self, hash: &str) -> Result<bool> {
        self.catalog.drop_content_index(hash)
    }

    /// Save the catalog.
    pub(super) fn save(&self) -> Result<()> {
        self.catalog.save()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Bench;
    use super::*;
    use crate::index::EntryStatus;

    fn indexed(locator: &str, hash: &str, chunks: u32) -> CatalogEntry {
        CatalogEntry::indexed(locator, None, hash, 10, 1, chunks)
    }

    fn failed(locator: &str) -> CatalogEntry {
        CatalogEntry::without_content(locator, None, None, EntryStatus::Failed, "broken")
    }

    #[test]
    fn put_tells_what_the_locator_held_and_a_replaced_card_is_noted_to_retire() {
        let b = Bench::new();
        let books = ScopeCatalog::new(b.ing.catalog(), &b.scope);
        assert_eq!(books.put(indexed("a", "h1", 3)), None);
        assert_eq!(books.put(indexed("a", "h2", 2)), Some(("h1".into(), 3)));
        assert_eq!(books.get("a").map(|e| e.chunks), Some(2));
        // A failed entry wants a card; asked once, then not again until recorded again.
        books.put(failed("f"));
        let wanting: Vec<String> = books
            .wanting_cards(false)
            .into_iter()
            .map(|e| e.locator)
            .collect();
        assert_eq!(wanting, ["f"]);
        assert!(books.wanting_cards(false).is_empty());
        assert!(books.set_card_stored(&failed("f")));
        // Recorded again as it was: its card stays, nothing to retire.
        books.put(failed("f"));
        assert!(books.take_retired_cards().is_empty());
        assert!(books.get("f").unwrap().card().is_some());
        // Replaced by an indexed file: its card must go.
        assert_eq!(books.put(indexed("f", "h3", 1)), None);
        assert_eq!(books.take_retired_cards(), ["f"]);
        // The other scope sees none of it.
        let other = Scope::user("someone-else");
        let theirs = ScopeCatalog::new(b.ing.catalog(), &other);
        assert_eq!(theirs.get("a"), None);
        assert!(!theirs.holds("h2"));
    }

    #[test]
    fn every_holder_of_a_content_is_seen_and_one_gone_leaves_the_others() {
        let b = Bench::new();
        let books = ScopeCatalog::new(b.ing.catalog(), &b.scope);
        books.put(indexed("c", "h", 4));
        books.put(indexed("a", "h", 4));
        assert!(books.holds("h"));
        assert_eq!(books.locators_with_hash("h"), ["a", "c"]);
        assert_eq!(books.held_elsewhere("h", "a"), (Some(4), Some("c".into())));
        let removed = books.remove("a").expect("a was there");
        assert_eq!(removed.content(), Some(("h".into(), 4)));
        assert_eq!(books.held_elsewhere("h", "c"), (Some(4), None));
        assert_eq!(books.holders("h").locators, ["c"]);
        books.remove("c");
        assert!(!books.holds("h"));
        assert_eq!(books.remove("c"), None, "removing twice is nothing");
    }

    #[test]
    fn an_archive_knows_its_members_and_whether_all_are_recorded() {
        let b = Bench::new();
        let books = ScopeCatalog::new(b.ing.catalog(), &b.scope);
        books.put(CatalogEntry::container(
            "x.zip",
            "hx",
            100,
            1,
            "archive",
            Vec::new(),
        ));
        let member = |name: &str| {
            CatalogEntry::indexed(
                format!("x.zip!/{name}"),
                Some("x.zip".into()),
                "hm",
                5,
                0,
                1,
            )
        };
        books.put(member("m1"));
        let wanted = ["x.zip!/m1".to_string(), "x.zip!/m2".to_string()];
        assert!(!books.has_all(wanted.iter()));
        books.put(member("m2"));
        assert!(books.has_all(wanted.iter()));
        let members: Vec<String> = books
            .members_of("x.zip")
            .into_iter()
            .map(|e| e.locator)
            .collect();
        assert_eq!(members, wanted);
    }
}
