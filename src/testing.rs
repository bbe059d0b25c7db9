//! What the integration tests and examples reach inside the tools: not part of the API (hidden
//! from the docs), and nothing here is used by the library itself. The lower layers' internals
//! are reached through their own crates (`ingest_index::testkit`, `ingest_unpack::zip_of`…);
//! this goes too when the tools are a crate of their own.

/// `verify_quote`'s search of `quote` in `text` alone (no file, no answer): whether it was
/// found, else the closest passage's score (or where it stopped), as printed. For the
/// worst-case benchmark (`examples/quote_worst_case.rs`).
pub fn quote_search(text: &str, quote: &str) -> impl std::fmt::Debug {
    crate::tools::quote_search_text(text, quote)
}

use crate::index::{Catalog, CatalogEntry};

/// The one access rule, through a [`Catalog`]: for generated owners (one file each, and one
/// file of the same locator for all) and generated readers, what every tool's view of the
/// catalog lists is exactly the owners [`crate::access`] admits, and a locator several
/// owners hold resolves to the closest readable one — or to nothing, as a missing file.
/// Run on a fresh, empty catalog (the embedded one and PostgreSQL run it; see
/// tests/integration/catalogs.rs). Returns how many readers were checked.
#[allow(clippy::unwrap_used, clippy::panic)] // a test helper
pub fn catalog_access_property(c: &dyn Catalog) -> usize {
    use crate::access::{can_read, closeness, generated_owners, generated_readers};
    use crate::tools::view::{document_in, View};
    let owners = generated_owners();
    for (n, (owner, locator)) in owners.iter().enumerate() {
        let hash = format!("h{n}");
        c.put(owner, CatalogEntry::indexed(locator, None, &hash, 1, 0, 1));
        c.put(
            owner,
            CatalogEntry::indexed("/same.txt", None, &hash, 1, 0, 1),
        );
    }
    c.save().unwrap();
    // Scopes come back exactly as stored (no field lost, no empty id made absent).
    let mut stored: Vec<String> = c.scopes().iter().map(crate::Scope::key).collect();
    let mut put: Vec<String> = owners.iter().map(|(o, _)| o.key()).collect();
    stored.sort();
    put.sort();
    assert_eq!(stored, put, "the catalog's scopes");
    let mut checked = 0;
    for reader in generated_readers() {
        let readable: Vec<&(crate::Scope, String)> = owners
            .iter()
            .filter(|(o, _)| can_read(&reader, o))
            .collect();
        let mut want: Vec<String> = readable.iter().map(|(_, l)| l.clone()).collect();
        if !readable.is_empty() {
            want.push("/same.txt".into());
        }
        want.sort();
        let view = View::in_catalog(c, &reader, None);
        let got: Vec<String> = view.entries.keys().cloned().collect();
        assert_eq!(got, want, "what reader {reader:?} sees");
        match document_in(c, &reader, "/same.txt", None) {
            Ok(doc) => {
                assert!(can_read(&reader, &doc.owner), "reader {reader:?}");
                let best = readable.iter().map(|(o, _)| closeness(&reader, o)).min();
                assert_eq!(
                    Some(closeness(&reader, &doc.owner)),
                    best,
                    "reader {reader:?}"
                );
                assert_eq!(doc.others.len() + 1, readable.len(), "reader {reader:?}");
            }
            Err(crate::tools::ToolError::NotFound(_)) => {
                assert!(readable.is_empty(), "reader {reader:?} was refused");
            }
            Err(e) => panic!("reader {reader:?}: {e}"),
        }
        checked += 1;
    }
    assert!(checked >= 76 && owners.len() >= 60, "{checked} readers");
    checked
}
