//! Registered sources: a remote folder given a name and an owner scope in the configuration
//! (`[[source]]` in the user's config file, or `ingest::Config::sources`), so that the agent's
//! source tools can name it and the daemons keep it synced.
//!
//! A source belongs to a scope exactly as a file does: the one access rule
//! ([`crate::access`]) decides who sees it, and what is pulled from it is indexed into that
//! scope. A source another scope may not read is answered exactly like a missing one.

use extractors::Scope;
use serde::Deserialize;

use super::{Credentials, Source, SourceUrl};

/// Longest source name, in bytes.
pub const MAX_SOURCE_NAME_BYTES: usize = 64;
/// Most sources one configuration registers.
pub const MAX_SOURCES: usize = 1000;

/// A remote folder registered for a scope.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisteredSource {
    /// What callers name it by: letters, digits, `-`, `_`, `.` (at most 64 bytes).
    pub name: String,
    /// Where it is: `s3://bucket/prefix`, `sftp://[user@]host/path`, `ftp://…`, `webdav://…`.
    pub url: String,
    /// Whose it is: the user (default `local`, as the command line's).
    #[serde(default)]
    pub user: Option<String>,
    /// The feature instance it is registered for.
    #[serde(default)]
    pub feature_instance: Option<String>,
    /// The mandate (tenant) it belongs to.
    #[serde(default)]
    pub mandate: Option<String>,
    /// Shared with every user of the mandate (as shared files are).
    #[serde(default)]
    pub shared: bool,
    /// Kept in sync by `ingest watch` and `ingest serve` (polled); otherwise only pulled.
    #[serde(default)]
    pub sync: bool,
    /// How to log in (each field else from the environment); never shown.
    #[serde(default)]
    pub credentials: Credentials,
    /// At most this many entries (files and archive members) under the source's root that
    /// a pull by a user other than its owner may leave in the owner's scope: the share of
    /// the owner's quota (`ingest::Config::max_scope_files`) that the users of a shared
    /// source can fill. Default: a quarter of that quota ([`Self::others_share`]).
    #[serde(default)]
    pub max_files: Option<usize>,
}

impl RegisteredSource {
    /// The scope it belongs to (and what is pulled from it is indexed into).
    pub fn owner(&self) -> Scope {
        Scope {
            user_id: self.user.clone().unwrap_or_else(|| "local".into()),
            feature_instance_id: self.feature_instance.clone(),
            mandate_id: self.mandate.clone(),
            is_shared: self.shared,
            workflow_id: None,
        }
    }

    /// How many entries under the source's root a pull by `caller` may leave in the owner's
    /// scope when the owner holds at most `quota`: none of its own for the owner (her quota
    /// bounds her), else [`Self::max_files`], by default a quarter of `quota` (at least 1),
    /// so that a user of the mandate pulling a shared source can never fill the whole
    /// scope's quota.
    pub fn others_share(&self, caller: &Scope, quota: Option<usize>) -> Option<usize> {
        let owner = self.owner();
        if caller.user_id == owner.user_id && caller.mandate_id == owner.mandate_id {
            return None;
        }
        self.max_files.or_else(|| quota.map(|q| (q / 4).max(1)))
    }

    /// Its URL, parsed.
    pub fn source_url(&self) -> Result<SourceUrl, String> {
        self.url.parse::<SourceUrl>().map_err(|e| e.to_string())
    }

    /// The whole source, with its credentials.
    pub fn source(&self) -> Result<Source, String> {
        Ok(Source {
            url: self.source_url()?,
            credentials: self.credentials.clone(),
            file: None,
            max_objects: None,
        })
    }

    /// Whether it is well formed: a name, a URL and a scope that parse.
    pub fn check(&self) -> Result<(), String> {
        let name_ok = !self.name.is_empty()
            && self.name.len() <= MAX_SOURCE_NAME_BYTES
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !name_ok {
            return Err(format!(
                "source name {:?}: 1 to {MAX_SOURCE_NAME_BYTES} letters, digits, '-', '_' or '.'",
                self.name.chars().take(80).collect::<String>()
            ));
        }
        self.source_url()
            .map_err(|e| format!("source {}: {e}", self.name))?;
        crate::access::check_scope(&self.owner())
            .map_err(|e| format!("source {}: invalid scope: {e}", self.name))
    }
}

/// Check a list of registered sources: each well formed, names unique, not too many.
pub fn check_sources(sources: &[RegisteredSource]) -> Result<(), String> {
    if sources.len() > MAX_SOURCES {
        return Err(format!(
            "{} sources registered: at most {MAX_SOURCES}",
            sources.len()
        ));
    }
    let mut names = std::collections::HashSet::new();
    for s in sources {
        s.check()?;
        if !names.insert(s.name.as_str()) {
            return Err(format!("source name {} registered twice", s.name));
        }
    }
    Ok(())
}

/// The sources `reader` may use, in registration order: those whose scope the one access
/// rule lets it read.
pub fn visible<'a>(
    sources: &'a [RegisteredSource],
    reader: &'a Scope,
) -> impl Iterator<Item = &'a RegisteredSource> + 'a {
    sources
        .iter()
        .filter(move |s| crate::access::can_read(reader, &s.owner()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str, mandate: Option<&str>, user: &str, shared: bool) -> RegisteredSource {
        RegisteredSource {
            name: name.into(),
            url: "s3://bucket/team".into(),
            user: Some(user.into()),
            feature_instance: None,
            mandate: mandate.map(Into::into),
            shared,
            sync: false,
            credentials: Credentials {
                secret_access_key: Some("s3cr3t".into()),
                ..Credentials::default()
            },
            max_files: None,
        }
    }

    #[test]
    fn a_source_is_seen_by_the_readers_of_its_scope_only() {
        let sources = vec![
            source("acme-team", Some("acme"), "alice", true),
            source("alice-own", Some("acme"), "alice", false),
            source("globex", Some("globex"), "alice", true),
        ];
        check_sources(&sources).unwrap();
        let reader = |user: &str, mandate: &str| Scope {
            user_id: user.into(),
            feature_instance_id: None,
            mandate_id: Some(mandate.into()),
            is_shared: false,
            workflow_id: None,
        };
        let names =
            |r: &Scope| -> Vec<String> { visible(&sources, r).map(|s| s.name.clone()).collect() };
        assert_eq!(names(&reader("alice", "acme")), ["acme-team", "alice-own"]);
        assert_eq!(names(&reader("bob", "acme")), ["acme-team"]);
        assert_eq!(names(&reader("alice", "globex")), ["globex"]);
        assert!(names(&reader("mallory", "initech")).is_empty());
        assert!(!format!("{:?}", sources[0]).contains("s3cr3t"));
    }

    #[test]
    fn others_fill_only_the_sources_share_of_the_owners_quota() {
        let mut team = source("acme-team", Some("acme"), "alice", true);
        let user = |user: &str| Scope {
            user_id: user.into(),
            feature_instance_id: None,
            mandate_id: Some("acme".into()),
            is_shared: false,
            workflow_id: None,
        };
        assert_eq!(team.others_share(&user("alice"), Some(100)), None);
        assert_eq!(team.others_share(&user("bob"), Some(100)), Some(25));
        assert_eq!(team.others_share(&user("bob"), Some(2)), Some(1));
        assert_eq!(team.others_share(&user("bob"), None), None);
        team.max_files = Some(7);
        assert_eq!(team.others_share(&user("bob"), Some(100)), Some(7));
        assert_eq!(team.others_share(&user("bob"), None), Some(7));
    }

    #[test]
    fn bad_registrations_are_refused() {
        let mut twice = vec![source("a", Some("m"), "u", false); 2];
        assert!(check_sources(&twice).unwrap_err().contains("twice"));
        twice[1].name = "../etc".into();
        assert!(check_sources(&twice).is_err());
        let mut url = source("b", None, "u", false);
        url.url = "http://x/y".into();
        assert!(url.check().is_err());
        let unshared = source("c", None, "u", true);
        assert!(unshared.check().is_err(), "sharing needs a mandate");
    }
}
