//! Filling one answer with texts: whole while they fit, then one cut in the middle, then a
//! cursor. Used by `read_content_objects` (a list of objects) and `read_section` (one text).

use serde_json::{json, Map, Value};

use super::budget::{cut, json_len, largest_fitting, Budget, Piece};
use super::cursor::{self, Position};
use super::ToolError;

/// A cut is worth making at the end of a non-empty answer only if it shows this many chars.
const MIN_CUT_CHARS: usize = 100;

/// One text to show: its fields (everything but the text) and its chars.
pub(crate) struct TextItem {
    pub fields: Map<String, Value>,
    pub chars: Vec<char>,
}

/// How the pieces go into the answer: `base` plus the pieces, however the tool lays them out.
pub(crate) type Place<'a> = &'a dyn Fn(&Map<String, Value>, &[Value]) -> Map<String, Value>;

/// A filled answer.
pub(crate) struct Filled {
    pub answer: Map<String, Value>,
}

/// A piece of an item as JSON: its fields, its text, and where it lies when it is not the
/// whole text.
fn piece_value(item: &TextItem, p: &Piece) -> Value {
    let mut v = item.fields.clone();
    let whole = p.from == 0 && p.to == item.chars.len() && p.omitted.is_none();
    if !whole {
        v.insert("offset".into(), json!(p.from));
        v.insert("end".into(), json!(p.to));
        if let Some((a, b)) = p.omitted {
            v.insert("omitted".into(), json!([a, b]));
        }
    }
    v.insert("text".into(), json!(p.text));
    Value::Object(v)
}

/// What the answer says about what it left out.
fn more_text(next: Position, total: usize, unit: &str) -> String {
    if total == 1 {
        let rest = match next.to {
            Some(to) => format!("{} chars omitted in the middle", to - next.from),
            None => "the rest".to_string(),
        };
        return format!(
            "{unit} continues at char {} ({rest}). Call again with the same arguments and this cursor.",
            next.from
        );
    }
    let after = total.saturating_sub(next.item + 1);
    let rest = match next.to {
        Some(to) => format!(
            "{unit} {} continues at char {} ({} chars omitted in the middle)",
            next.item,
            next.from,
            to - next.from
        ),
        None if next.from > 0 => format!("{unit} {} continues at char {}", next.item, next.from),
        None => format!("{unit} {} and after not shown", next.item),
    };
    format!("{rest}; {after} more after it. Call again with the same arguments and this cursor.")
}

/// The answer for `pieces` stopping at `next`.
fn assemble(
    base: &Map<String, Value>,
    pieces: &[Value],
    next: Option<Position>,
    ctx: &Ctx<'_>,
) -> Map<String, Value> {
    let mut a = (ctx.place)(base, pieces);
    if let Some(n) = next {
        a.insert(
            "cursor".into(),
            json!(cursor::encode(ctx.tag, ctx.digest, n)),
        );
        if !ctx.compact {
            a.insert("more".into(), json!(more_text(n, ctx.total, ctx.unit)));
        }
    }
    a
}

/// The call's constants.
pub(crate) struct Ctx<'a> {
    pub budget: Budget,
    /// Cursor tag and argument digest.
    pub tag: &'a str,
    pub digest: &'a str,
    /// Items in the selection, and what one is called in `more`.
    pub total: usize,
    pub unit: &'a str,
    pub place: Place<'a>,
    /// A small budget: leave `more` out (the cursor says there is more).
    pub compact: bool,
}

/// The first of `run(0)` (full form), `run(1)` (compact), `run(2)` (minimal) that fits.
pub(crate) fn first_fitting<T>(
    mut run: impl FnMut(u8) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let mut last = ToolError::TooSmall(0);
    for level in 0..3 {
        match run(level) {
            Err(e @ ToolError::TooSmall(_)) => last = e,
            other => return other,
        }
    }
    Err(last)
}

/// Fill an answer from `start`, reading item `i` with `item(i)`.
pub(crate) fn fill(
    ctx: &Ctx<'_>,
    base: &Map<String, Value>,
    start: Position,
    item: &mut dyn FnMut(usize) -> Result<TextItem, ToolError>,
) -> Result<Filled, ToolError> {
    let mut pieces: Vec<Value> = Vec::new();
    let mut i = start.item;
    // The answer so far, complete: it stops before item `i`.
    let stop_here = |pieces: &[Value], next: Option<Position>| assemble(base, pieces, next, ctx);
    let mut current = stop_here(
        &pieces,
        (i < ctx.total).then_some(Position {
            item: i,
            from: start.from,
            to: start.to,
        }),
    );
    while i < ctx.total {
        let it = item(i)?;
        let n = it.chars.len();
        let (from, to) = if i == start.item {
            let to = start.to.unwrap_or(n).min(n);
            (start.from.min(to), to)
        } else {
            (0, n)
        };
        let after = (i + 1 < ctx.total).then_some(Position {
            item: i + 1,
            from: 0,
            to: None,
        });
        // Whole.
        let whole = cut(&it.chars, from, to, usize::MAX);
        let mut trial = pieces.clone();
        trial.push(piece_value(&it, &whole));
        let answer = stop_here(&trial, after);
        if ctx.budget.fits(&answer) {
            pieces = trial;
            current = answer;
            i += 1;
            continue;
        }
        // Cut in the middle: the largest head + tail that fits.
        let build = |keep: usize| {
            let p = cut(&it.chars, from, to, keep);
            let next = p.omitted.map(|(a, b)| Position {
                item: i,
                from: a,
                to: Some(b),
            });
            let mut trial = pieces.clone();
            trial.push(piece_value(&it, &p));
            stop_here(&trial, next)
        };
        // The first piece must make progress; in full form it must show a useful amount, or
        // the caller retries in compact form.
        let span = to - from;
        let min_keep = match (pieces.is_empty(), ctx.compact) {
            (true, true) => 1,
            (true, false) => MIN_CUT_CHARS.min(span.saturating_sub(1)).max(1),
            (false, _) => MIN_CUT_CHARS,
        };
        if span >= 2 && min_keep < span {
            if let Some(keep) = largest_fitting(min_keep, span - 1, |k| ctx.budget.fits(&build(k)))
            {
                return Ok(Filled {
                    answer: build(keep),
                });
            }
        }
        if pieces.is_empty() {
            return Err(ToolError::TooSmall(ctx.budget.max));
        }
        // Stop before item `i`: `current` already points the cursor at it.
        return Ok(Filled { answer: current });
    }
    Ok(Filled { answer: current })
}

/// A list to page through: the key it goes under and its items.
pub(crate) struct ListItems {
    key: &'static str,
    items: Vec<Value>,
    unit: &'static str,
    /// Items in their compact form (see [`mark_compact`]), used when the full ones do not fit.
    compact: Option<Vec<Value>>,
    /// Fields of the answer left out in compact form.
    compact_drops: &'static [&'static str],
}

impl ListItems {
    pub(crate) fn new(key: &'static str, items: Vec<Value>, unit: &'static str) -> Self {
        ListItems {
            key,
            items,
            unit,
            compact: None,
            compact_drops: &[],
        }
    }

    /// The same list with a compact form of each item for small budgets, and the answer's
    /// fields to leave out then.
    pub(crate) fn with_compact(
        mut self,
        compact: Vec<Value>,
        drops: &'static [&'static str],
    ) -> Self {
        self.compact = Some(compact);
        self.compact_drops = drops;
        self
    }
}

/// Whether an answer is in its compact form: small budgets leave out what can be asked
/// again (full locators, types, sizes, `more`), and the answer says `"compact": true`.
pub(crate) fn mark_compact(answer: &mut Map<String, Value>) {
    answer.insert("compact".into(), json!(true));
}

/// `base` with as many of `list`'s items from `start` as fit, and a cursor for the rest; in
/// compact form (without `locator` and `more`) when not even one full item fits.
pub(crate) fn fill_list(
    budget: Budget,
    base: &Map<String, Value>,
    list: &ListItems,
    start: Position,
    tag: &str,
    digest: &str,
) -> Result<String, ToolError> {
    match fill_list_as(budget, base, &list.items, list, start, tag, digest, false) {
        Err(ToolError::TooSmall(_)) if list.compact.is_some() => {
            let mut small = base.clone();
            for key in list.compact_drops {
                small.remove(*key);
            }
            mark_compact(&mut small);
            let items = list.compact.as_deref().unwrap_or(&[]);
            match fill_list_as(budget, &small, items, list, start, tag, digest, true) {
                // Last resort: without the echo of the caller's own locator either.
                Err(ToolError::TooSmall(_)) => {
                    small.remove("locator");
                    fill_list_as(budget, &small, items, list, start, tag, digest, true)
                }
                other => other,
            }
        }
        other => other,
    }
}

/// `base` with as many of `list`'s items from `start` as fit, and a cursor for the rest.
#[allow(clippy::too_many_arguments)]
fn fill_list_as(
    budget: Budget,
    base: &Map<String, Value>,
    items: &[Value],
    list: &ListItems,
    start: Position,
    tag: &str,
    digest: &str,
    compact: bool,
) -> Result<String, ToolError> {
    let total = items.len();
    let build = |end: usize| {
        let mut a = base.clone();
        let shown = items.get(start.item.min(end)..end).unwrap_or(&[]);
        a.insert(list.key.into(), Value::Array(shown.to_vec()));
        if end < total {
            let next = Position {
                item: end,
                from: 0,
                to: None,
            };
            a.insert("cursor".into(), json!(cursor::encode(tag, digest, next)));
            if compact {
                return a;
            }
            a.insert(
                "more".into(),
                json!(format!(
                    "{} of {total} {} shown ({}-{}); call again with the same arguments and this cursor for the rest",
                    end - start.item.min(end),
                    list.unit,
                    start.item.min(end) + 1,
                    end
                )),
            );
        }
        a
    };
    let first = start.item.min(total);
    // Estimate how many fit from the items' lengths, then settle exactly.
    let fixed = json_len(&Value::Object(build(first))) + 120;
    let mut end = first;
    let mut used = fixed;
    while end < total {
        let len = items.get(end).map_or(0, json_len) + 1;
        if used + len > budget.max {
            break;
        }
        used += len;
        end += 1;
    }
    while end < total && budget.fits(&build(end + 1)) {
        end += 1;
    }
    while end > first && !budget.fits(&build(end)) {
        end -= 1;
    }
    if end == first && first < total {
        return Err(budget.too_small());
    }
    budget.finish(&build(end))
}
