//! Cursors: where an answer stopped, as a short opaque string the next call hands back with
//! the same arguments. A cursor names its tool and a digest of the arguments it belongs to
//! (budget and cursor excluded), so a cursor reused with other arguments is refused instead
//! of continuing something else.

use serde::Serialize;

use super::ToolError;

/// Where to continue: item `item` of the tool's ordered list (an object, a hit, a member, an
/// outline entry) and, within a text, the char range `[from, to)` still to show (`to: None`:
/// to the end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Position {
    pub item: usize,
    pub from: usize,
    pub to: Option<usize>,
}

/// A digest of `args` without `cursor` and `max_chars`.
pub(crate) fn digest<T: Serialize>(args: &T) -> String {
    let mut v = serde_json::to_value(args).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        m.remove("cursor");
        m.remove("max_chars");
    }
    let hash = blake3::hash(v.to_string().as_bytes()).to_hex();
    hash.as_str().get(..8).unwrap_or_default().to_string()
}

/// The cursor for `p` in tool `tag`'s answers to arguments with digest `digest`.
pub(crate) fn encode(tag: &str, digest: &str, p: Position) -> String {
    let to = p.to.map_or_else(|| "-".to_string(), |t| t.to_string());
    format!("{tag}.{}.{}.{to}.{digest}", p.item, p.from)
}

/// The position in `cursor`, checked against the tool and the arguments.
pub(crate) fn decode(cursor: &str, tag: &str, digest: &str) -> Result<Position, ToolError> {
    let bad = || {
        ToolError::Invalid(
            "this cursor does not belong to this tool and these arguments: repeat the arguments of the call that returned it".into(),
        )
    };
    let parts: Vec<&str> = cursor.trim().split('.').collect();
    let [t, item, from, to, d] = parts.as_slice() else {
        return Err(bad());
    };
    if *t != tag || *d != digest {
        return Err(bad());
    }
    let num = |s: &str| s.parse::<usize>().map_err(|_| bad());
    let to = match *to {
        "-" => None,
        n => Some(num(n)?),
    };
    let p = Position {
        item: num(item)?,
        from: num(from)?,
        to,
    };
    if p.to.is_some_and(|t| t < p.from) {
        return Err(bad());
    }
    Ok(p)
}

/// The position a call starts at: its cursor's, or the beginning.
pub(crate) fn start(cursor: Option<&str>, tag: &str, digest: &str) -> Result<Position, ToolError> {
    match cursor.filter(|c| !c.trim().is_empty()) {
        Some(c) => decode(c, tag, digest),
        None => Ok(Position::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_other_arguments() {
        let d = digest(&serde_json::json!({"locator": "a", "cursor": "x", "max_chars": 5}));
        assert_eq!(d, digest(&serde_json::json!({"locator": "a"})));
        let p = Position {
            item: 3,
            from: 10,
            to: Some(99),
        };
        let c = encode("r", &d, p);
        assert_eq!(decode(&c, "r", &d).unwrap(), p);
        assert!(decode(&c, "s", &d).is_err());
        assert!(decode(&c, "r", &digest(&serde_json::json!({"locator": "b"}))).is_err());
        assert!(decode("garbage", "r", &d).is_err());
        let open = encode("r", &d, Position::default());
        assert_eq!(decode(&open, "r", &d).unwrap(), Position::default());
    }
}
