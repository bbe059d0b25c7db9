//! Who may read and write what: the one access rule every face and every operation uses
//! (search, browse, read, section, extract, status, delete, the daemon's socket, MCP, HTTP).
//!
//! **The tenancy model.** A scope is a user, optionally narrowed to a feature instance, inside
//! optionally a mandate (tenant); content is stored in the exact scope that wrote it, private
//! or shared.
//! - A mandate is a hard wall: a reader sees only content of its own mandate, and a reader
//!   without a mandate sees only content without one. The same user name in two mandates (or
//!   with and without one) is two different people.
//! - Within that wall a reader sees its user's own content (narrowed to its feature instance
//!   when it has one) and the content other users of its mandate shared. Sharing needs a
//!   mandate: without one there is nobody to share with.
//! - A workflow (one agent run of a user in a feature instance and mandate) is a wall of its
//!   own: what is stored in it (tool results, entities, summaries) is read only by a reader
//!   naming that same workflow with the exact same user, feature instance and mandate, and a
//!   reader's documents and its colleagues' shared ones never include any workflow's content.
//! - A writer changes only content of its exact scope (user, feature instance, mandate and
//!   the shared flag it names): every write goes through the catalog and the store under
//!   that scope's key, so no other scope's entry can be reached by one.
//!
//! The rule is data ([`ReadRule`]): a list of alternatives, each a list of conditions on the
//! owner's fields. [`ReadRule::admits`] evaluates it on a scope (the catalog, the tools, the
//! upload queue) and the index translates the same conditions ([`ReadRule::alternatives`])
//! into its typed filter (`ingest::index::filter`, for every search), so the two cannot drift apart; a property test over generated
//! scopes checks them against each other on a real index.

use extractors::Scope;

/// The longest user, feature-instance or mandate id, in bytes.
pub const MAX_ID_BYTES: usize = 128;

/// A field of the scope a point or catalog entry was stored in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    User,
    FeatureInstance,
    Mandate,
    Workflow,
}

impl Field {
    fn of(self, owner: &Scope) -> Option<&str> {
        match self {
            Field::User => Some(owner.user_id.as_str()),
            Field::FeatureInstance => owner.feature_instance_id.as_deref(),
            Field::Mandate => owner.mandate_id.as_deref(),
            Field::Workflow => owner.workflow_id.as_deref(),
        }
    }
}

/// One condition on an owner scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    /// The field has exactly this value.
    Is(Field, String),
    /// The field has no value.
    Absent(Field),
    /// The content is shared.
    Shared,
    /// The content is not shared.
    NotShared,
}

impl Condition {
    fn holds(&self, owner: &Scope) -> bool {
        match self {
            Condition::Is(f, v) => f.of(owner) == Some(v.as_str()),
            Condition::Absent(f) => f.of(owner).is_none(),
            Condition::Shared => owner.is_shared,
            Condition::NotShared => !owner.is_shared,
        }
    }
}

/// What one reader may read: owners matching every condition of at least one alternative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRule {
    alternatives: Vec<Vec<Condition>>,
}

impl ReadRule {
    /// The rule for `reader` (see the module's tenancy model).
    pub fn of(reader: &Scope) -> ReadRule {
        let wall = match &reader.mandate_id {
            Some(m) => Condition::Is(Field::Mandate, m.clone()),
            None => Condition::Absent(Field::Mandate),
        };
        let no_workflow = Condition::Absent(Field::Workflow);
        let mut own = vec![
            Condition::Is(Field::User, reader.user_id.clone()),
            wall.clone(),
            no_workflow.clone(),
        ];
        if let Some(fi) = &reader.feature_instance_id {
            own.push(Condition::Is(Field::FeatureInstance, fi.clone()));
        }
        let mut alternatives = vec![own];
        if let Some(m) = &reader.mandate_id {
            alternatives.push(vec![
                Condition::Is(Field::Mandate, m.clone()),
                Condition::Shared,
                no_workflow,
            ]);
        }
        if let Some(w) = &reader.workflow_id {
            // The workflow's own content: exactly this principal, never shared.
            alternatives.push(vec![
                Condition::Is(Field::Workflow, w.clone()),
                Condition::Is(Field::User, reader.user_id.clone()),
                wall,
                match &reader.feature_instance_id {
                    Some(fi) => Condition::Is(Field::FeatureInstance, fi.clone()),
                    None => Condition::Absent(Field::FeatureInstance),
                },
                Condition::NotShared,
            ]);
        }
        ReadRule { alternatives }
    }

    /// Whether content stored in scope `owner` is readable.
    pub fn admits(&self, owner: &Scope) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|c| c.holds(owner)))
    }

    /// The rule's alternatives, each a list of conditions that must all hold: what the
    /// index turns into its filter (points carry their scope's fields: `user_id`,
    /// `feature_instance_id`, `mandate_id`, `workflow_id`, `is_shared`).
    pub fn alternatives(&self) -> &[Vec<Condition>] {
        &self.alternatives
    }
}

/// Whether `reader` may read content stored in scope `owner`.
pub fn can_read(reader: &Scope, owner: &Scope) -> bool {
    ReadRule::of(reader).admits(owner)
}

/// Whether `a` and `b` are the same principal (user, feature instance, mandate), shared or
/// not: who may follow a job.
pub fn same_principal(a: &Scope, b: &Scope) -> bool {
    a.user_id == b.user_id
        && a.feature_instance_id == b.feature_instance_id
        && a.mandate_id == b.mandate_id
}

/// How content stored in `owner` is named to a reader who shares its mandate: the user, its
/// feature instance after `/`, and ` (shared)` for shared content. Ids hold no `/` or white
/// space ([`check_scope`]), so two owners never have the same label.
pub fn owner_label(owner: &Scope) -> String {
    let mut label = owner.user_id.clone();
    if let Some(fi) = &owner.feature_instance_id {
        label.push('/');
        label.push_str(fi);
    }
    if owner.is_shared {
        label.push_str(" (shared)");
    }
    if let Some(w) = &owner.workflow_id {
        label.push_str(" (workflow ");
        label.push_str(w);
        label.push(')');
    }
    label
}

/// How close content in `owner` is to `reader`, lower first: when two readable files have
/// the same locator, the reader's own wins. 0: its exact private scope; 1: its own private
/// content elsewhere (another feature instance); 2: its own shared content; 3: shared by
/// another user.
pub fn closeness(reader: &Scope, owner: &Scope) -> u8 {
    match (owner.user_id == reader.user_id, owner.is_shared) {
        (true, false) if owner.feature_instance_id == reader.feature_instance_id => 0,
        (true, false) => 1,
        (true, true) => 2,
        (false, _) => 3,
    }
}

/// The owners among `owners` (a catalog's scopes) whose content `reader` may read, closest
/// first (then by label), narrowed to the one labelled `owner` when a call names one: an
/// unknown label selects nobody, as a missing file would.
pub fn readable_owners(owners: Vec<Scope>, reader: &Scope, owner: Option<&str>) -> Vec<Scope> {
    let mut owners: Vec<Scope> = owners
        .into_iter()
        .filter(|o| can_read(reader, o))
        .filter(|o| owner.is_none_or(|label| owner_label(o) == label.trim()))
        .collect();
    owners.sort_by_cached_key(|o| (closeness(reader, o), owner_label(o)));
    owners
}

/// Every scope over a small domain of ids (two users, no or two feature instances, no or two
/// mandates, shared or not, in no or one of two workflows), then `extra` more drawn from a wider pool (ids of odd
/// characters, the same name in several roles) by a seeded generator.
#[cfg(any(test, feature = "testing"))]
fn generated_scopes(extra: usize, seed: u64) -> Vec<Scope> {
    let mut out = Vec::new();
    for user in ["alice", "bob"] {
        for fi in [None, Some("f1"), Some("f2")] {
            for mandate in [None, Some("m1"), Some("m2")] {
                // A workflow's scope is never shared.
                for (shared, workflow) in [
                    (false, None),
                    (true, None),
                    (false, Some("w1")),
                    (false, Some("w2")),
                ] {
                    out.push(Scope {
                        user_id: user.into(),
                        feature_instance_id: fi.map(Into::into),
                        mandate_id: mandate.map(Into::into),
                        is_shared: shared,
                        workflow_id: workflow.map(Into::into),
                    });
                }
            }
        }
    }
    // A small xorshift: reproducible without a dependency.
    let mut state = seed | 1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let pool = [
        "alice", "bob", "m1", "f1", "ünï", "x@y.z", "A", "a", "0", "alice.", "m2",
    ];
    let pick = |n: usize| pool.get(n).copied().unwrap_or("a").to_string();
    for _ in 0..extra {
        let user = pick(next(pool.len()));
        let fi = (next(3) == 0).then(|| pick(next(pool.len())));
        let mandate = (next(3) != 0).then(|| pick(next(pool.len())));
        let is_shared = next(2) == 0;
        let workflow_id = (!is_shared && next(3) == 0).then(|| pick(next(pool.len())));
        out.push(Scope {
            user_id: user,
            feature_instance_id: fi,
            mandate_id: mandate,
            is_shared,
            workflow_id,
        });
    }
    out
}

/// The owners the access property tests store content in (distinct scopes of
/// [`generated_scopes`]), each with a locator of its own (`/owner/N.txt`).
#[cfg(any(test, feature = "testing"))]
pub fn generated_owners() -> Vec<(Scope, String)> {
    let mut seen = std::collections::HashSet::new();
    generated_scopes(60, 0x5eed_0fac_ce55)
        .into_iter()
        .filter(|o| seen.insert(o.key()))
        .enumerate()
        .map(|(n, o)| (o, format!("/owner/{n}.txt")))
        .collect()
}

/// The readers the access property tests ask as.
#[cfg(any(test, feature = "testing"))]
pub fn generated_readers() -> Vec<Scope> {
    generated_scopes(40, 0x00ac_ce55)
}

/// Refuse a scope whose ids could be confused with others: empty, longer than
/// [`MAX_ID_BYTES`], or holding white space, control, format (bidi, zero-width) characters or
/// `/`; an empty feature instance or mandate is refused too (leave it out). Sharing needs a
/// mandate.
pub fn check_scope(scope: &Scope) -> Result<(), String> {
    check_id("user", &scope.user_id)?;
    if let Some(fi) = &scope.feature_instance_id {
        check_id("feature instance", fi)?;
    }
    if let Some(m) = &scope.mandate_id {
        check_id("mandate", m)?;
    }
    if let Some(w) = &scope.workflow_id {
        check_id("workflow", w)?;
        if scope.is_shared {
            return Err(
                "a workflow's content is private to that workflow: it cannot be shared".into(),
            );
        }
    }
    if scope.is_shared && scope.mandate_id.is_none() {
        return Err(
            "sharing needs a mandate: shared content is visible to the other users of its \
             mandate, and this scope has none"
                .into(),
        );
    }
    Ok(())
}

fn check_id(what: &str, id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err(format!("the {what} id is empty"));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(format!("the {what} id is longer than {MAX_ID_BYTES} bytes"));
    }
    if let Some(c) = id
        .chars()
        .find(|&c| c == '/' || c.is_whitespace() || c.is_control() || is_invisible(c))
    {
        return Err(format!(
            "the {what} id {id:?} holds {}: ids are printable, without white space or `/`",
            describe_char(c)
        ));
    }
    Ok(())
}

/// Characters that change how text around them looks without being seen themselves (the
/// one definition, [`extractors::is_invisible`]).
pub fn is_invisible(c: char) -> bool {
    extractors::is_invisible(c)
}

/// 128 random bits from the operating system (job ids, MCP session owners). Should the OS
/// refuse, the bits come from a hash of the time and a counter, logged: ids stay unique,
/// only no longer unguessable.
pub fn random_u128() -> u128 {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        tracing::error!("no random bits from the operating system ({e}); ids are guessable");
        let seed = format!(
            "{:?}{}{}",
            std::time::SystemTime::now(),
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        bytes.copy_from_slice(
            blake3::hash(seed.as_bytes())
                .as_bytes()
                .get(..16)
                .unwrap_or(&[0; 16]),
        );
    }
    u128::from_le_bytes(bytes)
}

/// `c` named for an error message.
pub fn describe_char(c: char) -> String {
    if c == ' ' {
        "a space".into()
    } else if c.is_whitespace() {
        format!("white space (U+{:04X})", u32::from(c))
    } else if c.is_control() {
        format!("a control character (U+{:04X})", u32::from(c))
    } else if is_invisible(c) {
        format!("an invisible formatting character (U+{:04X})", u32::from(c))
    } else {
        format!("{c:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(user: &str, fi: Option<&str>, mandate: Option<&str>, shared: bool) -> Scope {
        Scope {
            user_id: user.into(),
            feature_instance_id: fi.map(Into::into),
            mandate_id: mandate.map(Into::into),
            is_shared: shared,
            workflow_id: None,
        }
    }

    #[test]
    fn a_workflow_is_a_wall_of_its_own() {
        let alice = scope("alice", Some("f1"), Some("m"), false);
        let run1 = alice.in_workflow("run1");
        let run2 = alice.in_workflow("run2");
        assert!(can_read(&run1, &run1));
        assert!(
            can_read(&run1, &alice),
            "a workflow reads its user's documents"
        );
        assert!(can_read(&run1, &scope("bob", None, Some("m"), true)));
        assert!(
            !can_read(&run1, &run2),
            "nor another workflow of the same user"
        );
        assert!(
            !can_read(&alice, &run1),
            "documents never include a workflow's content"
        );
        assert!(!can_read(&scope("alice", None, Some("m"), false), &run1));
        let bob = scope("bob", Some("f1"), Some("m"), false);
        assert!(
            !can_read(&bob.in_workflow("run1"), &run1),
            "same workflow id, other user"
        );
        let other_fi = scope("alice", Some("f2"), Some("m"), false).in_workflow("run1");
        assert!(!can_read(&other_fi, &run1));
        let no_fi = scope("alice", None, Some("m"), false).in_workflow("run1");
        assert!(
            !can_read(&no_fi, &run1),
            "the exact feature instance, not any"
        );
        let other_mandate = scope("alice", Some("f1"), Some("x"), false).in_workflow("run1");
        assert!(!can_read(&other_mandate, &run1));
        let mut shared = run1.clone();
        shared.is_shared = true;
        assert!(check_scope(&shared).is_err(), "a workflow is never shared");
        assert!(check_scope(&alice.in_workflow("a/b")).is_err());
        assert_ne!(run1.key(), alice.key());
        assert_eq!(
            alice.key(),
            "alice\u{1f}f1\u{1f}m\u{1f}false",
            "keys without a workflow stay"
        );
    }

    #[test]
    fn a_mandate_is_a_hard_wall() {
        let alice = scope("alice", None, None, false);
        let alice_acme = scope("alice", None, Some("acme"), false);
        let alice_globex = scope("alice", None, Some("globex"), false);
        assert!(can_read(&alice, &alice));
        assert!(
            !can_read(&alice, &alice_acme),
            "no mandate sees no mandate's content"
        );
        assert!(!can_read(&alice, &scope("bob", None, Some("acme"), true)));
        assert!(!can_read(&alice_acme, &alice), "a mandate sees only itself");
        assert!(!can_read(&alice_acme, &alice_globex));
        assert!(can_read(
            &alice_acme,
            &scope("bob", None, Some("acme"), true)
        ));
        assert!(!can_read(
            &alice_acme,
            &scope("bob", None, Some("acme"), false)
        ));
        assert!(!can_read(
            &alice_acme,
            &scope("bob", None, Some("globex"), true)
        ));
    }

    #[test]
    fn feature_instances_narrow_own_content_only() {
        let fi = scope("alice", Some("f1"), Some("m"), false);
        assert!(!can_read(&fi, &scope("alice", None, Some("m"), false)));
        assert!(!can_read(
            &fi,
            &scope("alice", Some("f2"), Some("m"), false)
        ));
        assert!(can_read(&fi, &scope("alice", Some("f1"), Some("m"), true)));
        assert!(can_read(&scope("alice", None, Some("m"), false), &fi));
        assert!(can_read(&fi, &scope("bob", Some("f9"), Some("m"), true)));
    }

    #[test]
    fn the_own_file_is_closest() {
        let reader = scope("alice", Some("f1"), Some("m"), false);
        let mut owners = [
            scope("bob", None, Some("m"), true),
            scope("alice", None, Some("m"), true),
            scope("alice", Some("f1"), Some("m"), false),
        ];
        owners.sort_by_key(|o| closeness(&reader, o));
        assert_eq!(owners[0], reader);
        assert_eq!(owner_label(&owners[2]), "bob (shared)");
        assert_eq!(owner_label(&owners[0]), "alice/f1");
    }

    #[test]
    fn ids_that_could_be_confused_are_refused() {
        for bad in [
            scope("", None, None, false),
            scope(" alice", None, None, false),
            scope("a/b", None, None, false),
            scope("a\u{1f}b", None, None, false),
            scope("al\u{200b}ice", None, None, false),
            scope("alice", Some(""), None, false),
            scope("alice", None, Some("ac me"), false),
            scope("alice", None, None, true),
            scope(&"x".repeat(MAX_ID_BYTES + 1), None, None, false),
        ] {
            assert!(check_scope(&bad).is_err(), "{bad:?}");
        }
        check_scope(&scope(
            "alice@example.com",
            Some("chat-7"),
            Some("acme"),
            true,
        ))
        .unwrap();
        check_scope(&scope("ünï", None, None, false)).unwrap();
    }

    #[test]
    fn a_principal_is_its_scope_shared_or_not() {
        let a = scope("alice", None, Some("m"), false);
        assert!(same_principal(&a, &scope("alice", None, Some("m"), true)));
        assert!(!same_principal(
            &a,
            &scope("alice", Some("f"), Some("m"), false)
        ));
        assert!(!same_principal(&a, &scope("alice", None, None, false)));
    }
}
