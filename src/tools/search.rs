//! `search_documents` (pending the index's filters).
use extractors::Scope;

use super::budget::Budget;
use super::{Finished, SearchArgs, ToolError};
use crate::ingestor::Ingestor;

pub(crate) fn search_documents(
    _: &Ingestor,
    _: &Scope,
    _: &SearchArgs,
    _: Budget,
) -> Result<Finished, ToolError> {
    Err(ToolError::Invalid("pending".into()))
}
