//! A locator filter that finds every copy: a content held by many files is one point per
//! scope, whose `containers` (what a locator filter matches) come from the first
//! [`MAX_HOLDERS`] files only, at most [`payload::MAX_CONTAINERS`] entries. The catalog
//! names every file, so it tells which of the contents held under a locator have points
//! that do not list it; a search lets those points through by scope and content hash, and
//! each hit of a content held under the locator names the file there.

use std::collections::HashMap;

use extractors::{Scope, MEMBER_SEPARATOR};

use super::catalog::bounded_holders;
use super::payload::{container_key, containers};
use super::{holder_rank, Catalog, Hit, MAX_HIT_ALSO_IN};

/// The most repeated contents (held by more than one file) examined under one locator, per
/// owner. Beyond them a content's copies under the locator are found only when its points
/// name them; the search says so in the log.
pub const MAX_REPEATED_UNDER: usize = 4096;

/// What the catalog says of the contents held under one locator by more than one file.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct HeldUnder {
    /// The locator as `containers` lists it ([`container_key`]).
    key: String,
    /// The contents (scope key, content hash) held under the locator whose points'
    /// `containers` do not list it: a search lets them through by these.
    pub unnamed: Vec<(String, String)>,
    /// For each content held under the locator (scope key, content hash), the file there a
    /// hit shows: the first by [`holder_rank`].
    shown: HashMap<(String, String), String>,
}

/// Whether `locator` is `key` or lies in it (a folder, an archive or a file).
fn is_under(locator: &str, key: &str) -> bool {
    locator.strip_prefix(key).is_some_and(|rest| {
        rest.is_empty() || rest.starts_with('/') || rest.starts_with(MEMBER_SEPARATOR)
    })
}

impl HeldUnder {
    /// What `catalog` holds under `prefix` (a locator filter, as
    /// [`super::SearchFilter::locator_prefix`] gives it) for each of `owners`.
    pub fn find(catalog: &dyn Catalog, owners: &[Scope], prefix: &str) -> HeldUnder {
        let key = container_key(prefix);
        let mut out = HeldUnder {
            key: key.to_string(),
            ..HeldUnder::default()
        };
        if key.is_empty() {
            return out;
        }
        for owner in owners {
            let repeated = catalog.repeated_under(owner, key, MAX_REPEATED_UNDER);
            if repeated.len() == MAX_REPEATED_UNDER {
                tracing::warn!(
                    locator = key,
                    "more than {MAX_REPEATED_UNDER} contents under this locator are held by \
                     other files too: copies of the others are found only where their points \
                     name them"
                );
            }
            let owner_key = owner.key();
            for hash in repeated {
                let all = catalog.locators_with_hash(owner, &hash);
                let Some(shown) = all
                    .iter()
                    .filter(|l| is_under(l, key))
                    .min_by(|a, b| holder_rank(a).cmp(&holder_rank(b)))
                    .cloned()
                else {
                    continue;
                };
                let named = containers(&bounded_holders(all, Vec::new()).locators);
                if !named.iter().any(|c| c == key) {
                    out.unnamed.push((owner_key.clone(), hash.clone()));
                }
                out.shown.insert((owner_key.clone(), hash), shown);
            }
        }
        out
    }

    /// Point `hit` at the file under the locator holding its content, when the file it
    /// names lies elsewhere: the file it named moves to the front of `also_in`.
    pub fn repoint(&self, hit: &mut Hit) {
        let (file, fragment) = extractors::split_fragment(&hit.locator);
        if is_under(file, &self.key) {
            return;
        }
        let Some(shown) = self.shown.get(&(hit.owner.key(), hit.content_hash.clone())) else {
            return;
        };
        let file = file.to_string();
        let was_listed = hit.also_in.len();
        hit.also_in.retain(|l| l != shown);
        if hit.also_in.len() == was_listed {
            // `shown` was among those not listed: the one it replaces is counted instead.
            hit.also_in_more = hit.also_in_more.saturating_sub(1);
        }
        hit.also_in.insert(0, file);
        if hit.also_in.len() > MAX_HIT_ALSO_IN {
            hit.also_in.truncate(MAX_HIT_ALSO_IN);
            hit.also_in_more += 1;
        }
        hit.locator = match fragment {
            "" => shown.clone(),
            f => format!("{shown}#{f}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_means_whole_segments() {
        assert!(is_under("/d/a", "/d/a"));
        assert!(is_under("/d/a/x.txt", "/d/a"));
        assert!(is_under("/d/a!/x.txt", "/d/a"));
        assert!(!is_under("/d/ab.txt", "/d/a"));
        assert!(!is_under("/d", "/d/a"));
    }

    fn hit(locator: &str, also_in: &[&str], more: usize) -> Hit {
        Hit {
            locator: locator.into(),
            score: 1.0,
            relevance: 1.0,
            confidence: Default::default(),
            evidence: Default::default(),
            text: String::new(),
            section: None,
            label: None,
            also_in: also_in.iter().map(|s| s.to_string()).collect(),
            also_in_more: more,
            tags: Vec::new(),
            tags_more: 0,
            content_hash: "h".into(),
            content_type: "text".into(),
            kind: Default::default(),
            page: Some(2),
            sheet: None,
            slide: None,
            chunk_index: 0,
            chunk_id: 0,
            owner: Scope::user("alice"),
        }
    }

    #[test]
    fn a_hit_is_repointed_to_the_file_under_the_locator_keeping_its_fragment() {
        let mut held = HeldUnder {
            key: "/m".into(),
            ..HeldUnder::default()
        };
        let key = (Scope::user("alice").key(), "h".to_string());
        held.shown
            .insert(key, "/m/box.mbox!/0090 x.eml!/a.pdf".into());
        // Listed in `also_in`: it leaves the list, the former file enters it.
        let mut h = hit("/f/a.pdf#page=2", &["/m/box.mbox!/0090 x.eml!/a.pdf"], 0);
        held.repoint(&mut h);
        assert_eq!(h.locator, "/m/box.mbox!/0090 x.eml!/a.pdf#page=2");
        assert_eq!(h.also_in, ["/f/a.pdf"]);
        assert_eq!(h.also_in_more, 0);
        // Not listed: counted among the unlisted before, the former file is listed now.
        let full: Vec<String> = (0..MAX_HIT_ALSO_IN).map(|i| format!("/o/{i}")).collect();
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let mut h = hit("/f/a.pdf#page=2", &full, 100);
        held.repoint(&mut h);
        assert_eq!(h.also_in.len(), MAX_HIT_ALSO_IN);
        assert_eq!(h.also_in[0], "/f/a.pdf");
        // 100 unlisted, one of them shown now, and the last listed one pushed out.
        assert_eq!(h.also_in_more, 100);
        // A hit of another content, or already under the locator, stays.
        let mut other = hit("/f/b.pdf", &[], 0);
        other.content_hash = "other".into();
        held.repoint(&mut other);
        assert_eq!(other.locator, "/f/b.pdf");
        let mut inside = hit("/m/box.mbox!/0007 y.eml!/a.pdf#page=2", &[], 0);
        held.repoint(&mut inside);
        assert_eq!(inside.locator, "/m/box.mbox!/0007 y.eml!/a.pdf#page=2");
    }
}
