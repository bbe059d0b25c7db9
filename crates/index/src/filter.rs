//! The typed filter: the conditions the payload schema (`payload.rs`) is filtered on, built
//! once above the index trait and converted, condition by condition with an exhaustive
//! `match`, into each backend's own filter type (`edge.rs`: the embedded shard's,
//! `server.rs`: the gRPC client's). No filter crosses the trait as text, and a condition a
//! backend cannot express does not compile.

/// A payload field that filters read (each with a payload index: see `payload.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    ScopeKey,
    ContentHash,
    UserId,
    FeatureInstanceId,
    MandateId,
    WorkflowId,
    IsShared,
    Containers,
    SectionPath,
    ContentType,
    SheetName,
    Tags,
    Kind,
    Names,
    NameWords,
    PageIndex,
    SlideIndex,
}

impl Field {
    /// The payload key the field is stored under.
    pub fn key(self) -> &'static str {
        match self {
            Field::ScopeKey => "scope_key",
            Field::ContentHash => "content_hash",
            Field::UserId => "user_id",
            Field::FeatureInstanceId => "feature_instance_id",
            Field::MandateId => "mandate_id",
            Field::WorkflowId => "workflow_id",
            Field::IsShared => "is_shared",
            Field::Containers => "containers",
            Field::SectionPath => "section_path",
            Field::ContentType => "content_type",
            Field::SheetName => "sheet_name",
            Field::Tags => "tags",
            Field::Kind => "kind",
            Field::Names => "names",
            Field::NameWords => "name_words",
            Field::PageIndex => "page_index",
            Field::SlideIndex => "slide_index",
        }
    }
}

/// A value a field is matched against. A keyword matches a list field when the list holds
/// it (`containers`, `tags`, `names`, `section_path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Keyword(String),
    Integer(i64),
    Flag(bool),
}

/// One condition on a point.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// The field has (or, for a list, holds) this value.
    Is(Field, Value),
    /// An integer field lies in `first..=last`.
    Between { field: Field, first: i64, last: i64 },
    /// The field is missing or an empty list.
    Empty(Field),
    /// The point is one of these.
    HasId(Vec<u64>),
    /// The point has a keyword (sparse) vector.
    HasKeywordVector,
    /// The point has a multilingual vector ([`super::MULTILINGUAL_VECTOR`]).
    HasMultilingualVector,
    /// A filter of its own (for alternatives inside `must`).
    All(Filter),
}

/// Conditions: every `must` holds, at least one `should` holds (when any is given), no
/// `must_not` holds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub must: Vec<Condition>,
    pub should: Vec<Condition>,
    pub must_not: Vec<Condition>,
}

impl Filter {
    /// Every one of `conditions`.
    pub fn all(conditions: Vec<Condition>) -> Filter {
        Filter {
            must: conditions,
            ..Filter::default()
        }
    }

    /// At least one of `conditions`.
    pub fn any(conditions: Vec<Condition>) -> Filter {
        Filter {
            should: conditions,
            ..Filter::default()
        }
    }

    /// None of `conditions`.
    pub fn none(conditions: Vec<Condition>) -> Filter {
        Filter {
            must_not: conditions,
            ..Filter::default()
        }
    }
}

impl Condition {
    /// The keyword field `field` is (or holds) `value`.
    pub fn keyword(field: Field, value: impl Into<String>) -> Condition {
        Condition::Is(field, Value::Keyword(value.into()))
    }
}
