//! `extract_container_item`: extract and index one archive member now (one skipped by a
//! limit, or not listed because the archive held too many), under the same isolation and
//! limits as any ingest, then answer as `browse_container` does for it.

use extractors::Scope;
use serde_json::{json, Value};

use super::browse::browse_container;
use super::budget::Budget;
use super::view::{normalize, View};
use super::{BrowseArgs, ExtractArgs, Finished, ToolError};

use crate::index::EntryStatus;
use crate::ingestor::Ingestor;
use crate::pipeline::Input;
use crate::report::FileStatus;

/// Answer an `extract_container_item` call.
pub(crate) fn extract_container_item(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &ExtractArgs,
    budget: Budget,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Finished, ToolError> {
    let member = normalize(&args.locator);
    let (top, Some(_)) = extractors::split_top(&member) else {
        return Err(ToolError::Invalid(format!(
            "{member} is not an archive member (a member's locator has `!/`, as in a.zip!/docs/b.pdf)"
        )));
    };
    // What the caller may read decides what exists (another scope's archive is answered as
    // a missing one); extraction writes, so it takes only the caller's own archive.
    let view = View::of(ingestor, scope, None);
    // Opened (a container), or cut short by a limit (skipped): either way an archive whose
    // members can be read; the walk finds out.
    if view.entry(top).is_none_or(|e| e.parent.is_some()) {
        return Err(ToolError::NotFound(member.clone()));
    }
    // The caller's own archive: uploaded privately, or shared by it with its mandate.
    let (own, own_member) = {
        let catalog = ingestor.catalog();
        let shared = Scope {
            is_shared: true,
            ..scope.clone()
        };
        let mine = [scope, &shared].into_iter().find_map(|s| {
            let e = catalog.get(s, top).filter(|e| e.parent.is_none())?;
            Some((s.clone(), e))
        });
        let member_entry = mine.as_ref().and_then(|(s, _)| catalog.get(s, &member));
        (mine, member_entry)
    };
    let extracted = match own_member {
        Some(e) if e.status == EntryStatus::Indexed || e.status == EntryStatus::Container => {
            json!({"status": "indexed", "note": "already indexed: nothing to do"})
        }
        _ => {
            let Some((own_scope, own)) = own else {
                return Err(ToolError::Invalid(
                    "this archive is shared with you by another user: only its owner can extract from it".into(),
                ));
            };
            let path = super::original::top_level_path(ingestor, &own_scope, &own)?;
            tracing::info!(archive = top, member = %member, "extracting an archive member on demand");
            let report = ingestor.ingest_until(
                vec![Input::Member {
                    archive: path,
                    member: member.clone(),
                }],
                &own_scope,
                &|_| {},
                stop,
            )?;
            match report.files.iter().find(|f| f.locator == member) {
                Some(f) => {
                    let mut v = json!({
                        "status": match f.status {
                            FileStatus::Indexed | FileStatus::Unchanged | FileStatus::Duplicate => "indexed",
                            FileStatus::Skipped => "skipped",
                            _ => "failed",
                        },
                        "chunks": f.chunks,
                    });
                    if let (Some(m), Some(r)) = (v.as_object_mut(), &f.reason) {
                        m.insert("reason".into(), json!(r));
                    }
                    v
                }
                None => return Err(ToolError::NotFound(member)),
            }
        }
    };
    // Browse the member, with room kept for the extraction's outcome.
    let reserve = extracted.to_string().len() + 20;
    let inner = Budget {
        max: budget.max.saturating_sub(reserve).max(super::MIN_MAX_CHARS),
    };
    let browse = BrowseArgs {
        locator: Some(member.clone()),
        owner: None,
        section: None,
        max_chars: Some(inner.max),
        cursor: args.cursor.clone(),
    };
    let answer = browse_container(ingestor, scope, &browse, inner);
    let with_outcome = |text: &str| -> Result<String, ToolError> {
        let mut m = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(ToolError::Invalid(
                    "the member's answer is not an object".into(),
                ))
            }
        };
        m.remove("size");
        m.insert("extracted".into(), extracted.clone());
        budget.finish(&m)
    };
    match answer {
        Ok(f) => {
            let text = with_outcome(&f.text)?;
            Ok(Finished { text, full: f.full })
        }
        Err(ToolError::NotFound(_)) => {
            let mut m = serde_json::Map::new();
            m.insert("locator".into(), json!(member));
            m.insert("extracted".into(), extracted);
            let text = budget.finish(&m)?;
            Ok(Finished {
                full: super::FullResult::of([text.as_str()]),
                text,
            })
        }
        Err(e) => Err(e),
    }
}
