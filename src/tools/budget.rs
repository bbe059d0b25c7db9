//! Budgets: every answer is a JSON object whose UTF-8 length never exceeds `max_chars`.
//!
//! A tool builds its answer as a `serde_json` object and asks [`Budget::fits`] whether it
//! still fits; [`Budget::finish`] adds the answer's own `size` and serializes it. Text that
//! does not fit is cut in the middle by [`cut`]: head, a `[N chars omitted]` marker, tail,
//! with the omitted char range recorded so that a cursor continues with exactly that range.

use serde_json::{json, Map, Value};

use super::ToolError;

/// An answer's budget, in chars (UTF-8 bytes, so it holds whether a client counts chars or
/// bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub max: usize,
}

impl Budget {
    /// The budget a call asked for (or the default), capped by the server's `ceiling`.
    pub fn of(requested: Option<usize>, ceiling: usize) -> Result<Budget, ToolError> {
        let max = requested.unwrap_or(super::DEFAULT_MAX_CHARS).min(ceiling);
        if max < super::MIN_MAX_CHARS {
            return Err(ToolError::Invalid(format!(
                "max_chars must be at least {}",
                super::MIN_MAX_CHARS
            )));
        }
        Ok(Budget { max })
    }

    /// Whether `answer`, with its `size` added, fits.
    pub fn fits(&self, answer: &Map<String, Value>) -> bool {
        sized(answer).len() <= self.max
    }

    /// The answer as sent: `answer` with its `size`, serialized; `TooSmall` if it does not fit.
    pub fn finish(&self, answer: &Map<String, Value>) -> Result<String, ToolError> {
        let text = sized(answer);
        if text.len() <= self.max {
            Ok(text)
        } else {
            Err(self.too_small())
        }
    }

    /// The error for an answer that cannot fit at all.
    pub fn too_small(&self) -> ToolError {
        ToolError::TooSmall(self.max)
    }
}

/// `answer` serialized with `size: {chars, tokens}` describing the result itself.
fn sized(answer: &Map<String, Value>) -> String {
    let mut a = answer.clone();
    let mut len = 0usize;
    // The size's own digits change the length: settle on a fixed point (2-3 rounds).
    for _ in 0..6 {
        a.insert("size".into(), json!({"chars": len, "tokens": tokens(len)}));
        let text = Value::Object(a.clone()).to_string();
        if text.len() == len {
            return text;
        }
        len = text.len();
    }
    Value::Object(a).to_string()
}

/// A token estimate for `chars` chars of JSON (about 4 per token).
pub(crate) fn tokens(chars: usize) -> usize {
    chars.div_ceil(4)
}

/// The JSON length of `v` (as it will appear inside the answer).
pub(crate) fn json_len(v: &Value) -> usize {
    v.to_string().len()
}

/// The largest `k` in `lo..=hi` for which `fits(k)` holds, assuming it is monotone (more
/// content never makes an answer shorter); `None` when not even `lo` fits.
pub(crate) fn largest_fitting(lo: usize, hi: usize, fits: impl Fn(usize) -> bool) -> Option<usize> {
    if lo > hi || !fits(lo) {
        return None;
    }
    if fits(hi) {
        return Some(hi);
    }
    // fits(good) holds, fits(bad) does not.
    let (mut good, mut bad) = (lo, hi);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// A text range `[from, to)` (char offsets) shown whole or cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// What to show: the range, or its head, the marker and its tail.
    pub text: String,
    /// The range shown (char offsets into the whole text).
    pub from: usize,
    pub to: usize,
    /// The chars the marker stands for, if cut.
    pub omitted: Option<(usize, usize)>,
}

/// The chars `[from, to)` of `chars` with at most `keep` of them shown: all of them when
/// `keep >= to - from`, else the first two thirds of `keep` as head and the rest as tail
/// around `[N chars omitted]`.
pub(crate) fn cut(chars: &[char], from: usize, to: usize, keep: usize) -> Piece {
    let to = to.min(chars.len());
    let from = from.min(to);
    let span = |a: usize, b: usize| -> String { chars.get(a..b).unwrap_or(&[]).iter().collect() };
    let len = to - from;
    if keep >= len {
        return Piece {
            text: span(from, to),
            from,
            to,
            omitted: None,
        };
    }
    let head = keep - keep / 3;
    let tail = keep - head;
    let gap = (from + head, to - tail);
    let text = format!(
        "{}[{} chars omitted]{}",
        span(from, gap.0),
        gap.1 - gap.0,
        span(gap.1, to)
    );
    Piece {
        text,
        from,
        to,
        omitted: Some(gap),
    }
}

/// [`cut`] of the whole of `text` (`chars` chars long), reading only the head and the tail
/// it keeps: a preview of a 16 MiB text costs the preview, not a char array of the text.
pub(crate) fn cut_str(text: &str, chars: usize, keep: usize) -> Piece {
    if keep >= chars {
        return Piece {
            text: text.to_string(),
            from: 0,
            to: chars,
            omitted: None,
        };
    }
    let head = keep - keep / 3;
    let tail = keep - head;
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(b, _)| b);
    let tail_start = match tail {
        0 => text.len(),
        n => text.char_indices().rev().nth(n - 1).map_or(0, |(b, _)| b),
    };
    let gap = (head, chars - tail);
    Piece {
        text: format!(
            "{}[{} chars omitted]{}",
            text.get(..head_end).unwrap_or_default(),
            gap.1 - gap.0,
            text.get(tail_start..).unwrap_or_default()
        ),
        from: 0,
        to: chars,
        omitted: Some(gap),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_of_a_str_is_the_cut_of_its_chars() {
        let text = "abcdefghijklmnopqrstuvwxyzäöü";
        let chars: Vec<char> = text.chars().collect();
        for keep in 0..=chars.len() + 1 {
            assert_eq!(
                cut_str(text, chars.len(), keep),
                cut(&chars, 0, chars.len(), keep),
                "keep {keep}"
            );
        }
    }

    #[test]
    fn the_size_field_describes_the_answer_it_is_in() {
        for n in [0usize, 5, 90, 995, 9_990] {
            let mut a = Map::new();
            a.insert("text".into(), json!("x".repeat(n)));
            let text = sized(&a);
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["size"]["chars"], json!(text.len()), "n={n}");
            assert_eq!(v["size"]["tokens"], json!(text.len().div_ceil(4)));
        }
    }

    #[test]
    fn cuts_keep_head_and_tail_and_say_what_they_omit() {
        let chars: Vec<char> = "abcdefghijklmnopqrstuvwxyzäöü".chars().collect();
        let p = cut(&chars, 2, 29, 9);
        assert_eq!(p.text, "cdefgh[18 chars omitted]äöü");
        assert_eq!(p.omitted, Some((8, 26)));
        let whole = cut(&chars, 2, 29, 27);
        assert_eq!(whole.text.chars().count(), 27);
        assert_eq!(whole.omitted, None);
        // Every split rebuilds the range exactly.
        for keep in 0..27 {
            let p = cut(&chars, 2, 29, keep);
            let (a, b) = p.omitted.unwrap();
            let head: String = chars[2..a].iter().collect();
            let tail: String = chars[b..29].iter().collect();
            assert_eq!(p.text, format!("{head}[{} chars omitted]{tail}", b - a));
        }
    }

    #[test]
    fn largest_fitting_finds_the_edge() {
        assert_eq!(largest_fitting(0, 100, |k| k <= 37), Some(37));
        assert_eq!(largest_fitting(0, 100, |_| true), Some(100));
        assert_eq!(largest_fitting(5, 100, |k| k < 5), None);
        assert_eq!(largest_fitting(1, 1, |_| true), Some(1));
    }

    #[test]
    fn budgets_are_capped_and_floored() {
        assert_eq!(Budget::of(None, 100_000).unwrap().max, 4000);
        assert_eq!(Budget::of(Some(500_000), 20_000).unwrap().max, 20_000);
        assert!(Budget::of(Some(199), 100_000).is_err());
    }
}
