//! A hit's snippet: the passage of a chunk's text that best matches the query, in a few
//! hundred chars, so that a search answer shows why a chunk was found without its whole text.

/// Words shorter than this (in letters) are neither query terms nor counted in the text.
const MIN_WORD_CHARS: usize = 3;

/// Two words match when one is a prefix of the other sharing at least this many letters
/// (`lighthouse` / `lighthouses`), or when they are equal.
const MIN_SHARED_PREFIX: usize = 4;

/// The ellipsis put where the text was cut; counted within the budget.
const ELLIPSIS: char = '…';

/// A cut right side moves back to a word end by at most this many chars.
const MAX_WORD_TRIM: usize = 20;

/// A window of at most `max_chars` chars (Unicode scalar values) of `text`, whitespace runs
/// collapsed to one space, around the passage that best matches `query`: the window holding
/// the most distinct query terms (then the most matches), preferring one that starts at a
/// sentence or line start. `…` marks each side that was cut. With no match (or no query
/// terms), the start of the text.
pub(crate) fn snippet(text: &str, query: &str, max_chars: usize) -> String {
    if max_chars == 0 {
        return String::new();
    }
    let (chars, starts) = collapse(text);
    if chars.len() <= max_chars {
        return chars.into_iter().collect();
    }
    let terms = terms(query);
    let words = words(&chars);
    // Each word in the text: its start, end, and which query term it matches.
    let matches: Vec<(usize, usize, usize)> = words
        .iter()
        .filter_map(|&(s, e)| {
            let w: String = chars.get(s..e)?.iter().collect::<String>().to_lowercase();
            terms
                .iter()
                .position(|t| words_match(t, &w))
                .map(|t| (s, e, t))
        })
        .collect();
    let (start, keep) = if matches.is_empty() {
        (0, 0)
    } else {
        best_window(&chars, &starts, &words, &matches, terms.len(), max_chars)
    };
    window(&chars, start, max_chars, keep)
}

/// `text` with every whitespace run as one space and no leading or trailing space, as chars,
/// and the positions (in those chars) where a sentence or a line starts.
fn collapse(text: &str) -> (Vec<char>, Vec<usize>) {
    let mut chars: Vec<char> = Vec::with_capacity(text.len());
    let mut starts = vec![0];
    let mut pending_space = false;
    let mut newline = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !chars.is_empty();
            newline |= c == '\n';
            continue;
        }
        if pending_space {
            let after_sentence = chars
                .last()
                .is_some_and(|p| matches!(p, '.' | '!' | '?' | '。'));
            chars.push(' ');
            if newline || after_sentence {
                starts.push(chars.len());
            }
        }
        pending_space = false;
        newline = false;
        chars.push(c);
    }
    (chars, starts)
}

/// The distinct lowercased words of `query` of at least [`MIN_WORD_CHARS`] letters.
fn terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.chars().count() >= MIN_WORD_CHARS {
            let w = word.to_lowercase();
            if seen.insert(w.clone()) {
                out.push(w);
            }
        }
    }
    out
}

/// The (start, end) char positions of the words of at least [`MIN_WORD_CHARS`] letters.
fn words(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in chars.iter().chain(std::iter::once(&' ')).enumerate() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                if i - s >= MIN_WORD_CHARS {
                    out.push((s, i));
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Whether the lowercased words `a` and `b` match: equal, or one a prefix of the other with
/// at least [`MIN_SHARED_PREFIX`] letters shared.
fn words_match(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    long.starts_with(short) && short.chars().count() >= MIN_SHARED_PREFIX
}

/// The best window of at most `max_chars` chars, as (start, end of the matches it shows):
/// the one covering the query terms of most weight (a term weighs less the more often the
/// text has it, so that `the` does not decide), then starting at a sentence or line start,
/// then holding the most matches (weighed alike), then with the least text before its first
/// match.
fn best_window(
    chars: &[char],
    starts: &[usize],
    words: &[(usize, usize)],
    matches: &[(usize, usize, usize)],
    n_terms: usize,
    max_chars: usize,
) -> (usize, usize) {
    let len = chars.len();
    // The last full window needs no `…` on its right.
    let last_start = len.saturating_sub(max_chars.saturating_sub(1));
    // Room for the ellipses a window in the middle carries.
    let inner = max_chars.saturating_sub(2).max(1);
    let mut counts = vec![0u64; n_terms];
    for &(_, _, t) in matches {
        if let Some(c) = counts.get_mut(t) {
            *c += 1;
        }
    }
    let weights: Vec<u64> = counts.iter().map(|&c| 1_000_000 / c.max(1)).collect();
    // Candidate starts: sentence/line starts (a window starting there may be short) and word
    // starts (moved back so that the window is full), each before a match within reach.
    let near_match = |c: usize| {
        matches
            .iter()
            .any(|&(s, _, _)| s >= c && s < c.saturating_add(inner))
    };
    let mut candidates: Vec<usize> = starts.iter().copied().filter(|&c| near_match(c)).collect();
    candidates.extend(
        words
            .iter()
            .map(|&(s, _)| s)
            .filter(|&c| near_match(c))
            .map(|c| c.min(last_start)),
    );
    candidates.sort_unstable();
    candidates.dedup();
    type Key = (u64, bool, u64, std::cmp::Reverse<usize>);
    let mut best: Option<(Key, usize, usize, usize)> = None;
    for start in candidates {
        let end = start.saturating_add(inner).min(len);
        let mut seen = vec![false; n_terms];
        let (mut hits, mut lo, mut hi) = (0u64, usize::MAX, start);
        for &(s, e, t) in matches {
            if s >= start && e <= end {
                hits += weights.get(t).copied().unwrap_or_default();
                lo = lo.min(s);
                hi = hi.max(e);
                if let Some(x) = seen.get_mut(t) {
                    *x = true;
                }
            }
        }
        let weight = seen
            .iter()
            .zip(&weights)
            .filter(|(&x, _)| x)
            .map(|(_, &w)| w)
            .sum::<u64>();
        let at_start = starts.binary_search(&start).is_ok();
        let key = (
            weight,
            at_start,
            hits,
            std::cmp::Reverse(lo.saturating_sub(start)),
        );
        if best.as_ref().is_none_or(|(k, ..)| key > *k) {
            best = Some((key, start, lo, hi));
        }
    }
    match best {
        Some(((_, true, _, _), start, _, hi)) => (start, hi),
        // Not at a sentence start: centre the matches, then start at a word.
        Some((_, _, lo, hi)) if lo <= hi => {
            let slack = inner.saturating_sub(hi - lo);
            let start = lo.saturating_sub(slack / 2).min(last_start);
            let word = (start..=lo)
                .find(|&i| i == 0 || chars.get(i.wrapping_sub(1)) == Some(&' '))
                .unwrap_or(start);
            (word, hi)
        }
        Some((_, start, _, hi)) => (start, hi),
        None => (0, 0),
    }
}

/// At most `max_chars` chars of `chars` from `start`, with `…` on each cut side (within the
/// budget). A cut right side is moved back to a word end when that keeps everything up to
/// `keep` (the end of the last match shown) and loses little.
fn window(chars: &[char], start: usize, max_chars: usize, keep: usize) -> String {
    let len = chars.len();
    let start = start.min(len);
    let cut_left = start > 0;
    let mut room = max_chars.saturating_sub(usize::from(cut_left));
    let cut_right = start.saturating_add(room) < len;
    if cut_right {
        room = room.saturating_sub(1);
    }
    let mut end = start.saturating_add(room).min(len);
    if cut_right && chars.get(end) != Some(&' ') {
        let floor = keep.max(start).max(end.saturating_sub(MAX_WORD_TRIM));
        if let Some(space) = (floor..end).rev().find(|&i| chars.get(i) == Some(&' ')) {
            end = space;
        }
    }
    let body = trim_spaces(chars.get(start..end).unwrap_or_default());
    let mut out = String::with_capacity(max_chars.saturating_mul(4).min(1 << 16));
    if cut_left {
        out.push(ELLIPSIS);
    }
    out.extend(body.iter());
    if cut_right {
        out.push(ELLIPSIS);
    }
    // A budget of one char has no room for two ellipses.
    if max_chars < 2 {
        return out.chars().take(max_chars).collect();
    }
    out
}

fn trim_spaces(mut s: &[char]) -> &[char] {
    while let [' ', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., ' '] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> usize {
        s.chars().count()
    }

    fn filler(words: usize) -> String {
        let base = [
            "the", "quiet", "harbour", "keeps", "its", "boats", "moored", "while", "gulls",
            "circle", "over", "grey", "water",
        ];
        (0..words)
            .map(|i| base[i % base.len()])
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn a_match_in_the_middle_of_a_long_text_is_inside_the_snippet() {
        let head = filler(230);
        let tail = filler(230);
        let text =
            format!("{head}. The lighthouse generator is tested every Tuesday at noon. {tail}.");
        assert!(n(&text) > 2500, "{}", n(&text));
        let s = snippet(&text, "when is the lighthouse generator tested", 200);
        assert!(n(&s) <= 200, "{} {s}", n(&s));
        assert!(
            s.contains("lighthouse generator is tested every Tuesday"),
            "{s}"
        );
        assert!(s.starts_with('…') && s.ends_with('…'), "{s}");
        // Starts at the sentence: the previous sentence's end is just before it.
        assert!(s.starts_with("…The lighthouse"), "{s}");
    }

    #[test]
    fn plurals_and_stems_match() {
        let text = format!(
            "{} Lighthouses along the coast. {}",
            filler(100),
            filler(100)
        );
        let s = snippet(&text, "lighthouse", 80);
        assert!(s.contains("Lighthouses"), "{s}");
        assert!(words_match("keeper", "keepers"));
        assert!(!words_match("the", "there"));
        assert!(!words_match("cat", "catalogue"));
    }

    #[test]
    fn without_a_match_the_start_is_shown() {
        let text = format!("First line here.\n{}", filler(300));
        let s = snippet(&text, "zebra xylophone", 100);
        assert!(s.starts_with("First line here. the quiet"), "{s}");
        assert!(s.ends_with('…'));
        assert!(n(&s) <= 100 && n(&s) > 80, "{s}");
        // Cut at a word end.
        assert!(s.ends_with(" the…") || !s.ends_with(" t…"), "{s}");
        // No query terms at all (short words only, or nothing).
        assert!(snippet(&text, "a an of", 50).starts_with("First line"));
        assert!(snippet(&text, "", 50).starts_with("First line"));
    }

    #[test]
    fn multibyte_text_is_cut_on_char_boundaries() {
        let text = format!(
            "{} Ødegård sørget for fyrlykten på Skjærøy. {}",
            "æøå 日本語のテキスト ".repeat(100),
            "ünïcödé ✓ ".repeat(100)
        );
        for max in [1, 2, 3, 10, 57, 200] {
            let s = snippet(&text, "fyrlykten Skjærøy", max);
            assert!(n(&s) <= max, "{max}: {} {s}", n(&s));
            if max >= 57 {
                assert!(s.contains("fyrlykten på Skjærøy"), "{s}");
            }
        }
        let s = snippet(&text, "nothing", 30);
        assert!(s.starts_with("æøå 日本語"), "{s}");
    }

    #[test]
    fn max_chars_is_respected_and_whitespace_collapsed() {
        let text = "alpha   beta\n\n\tgamma  delta epsilon zeta eta theta iota kappa";
        assert_eq!(
            snippet(text, "gamma", 1000),
            "alpha beta gamma delta epsilon zeta eta theta iota kappa"
        );
        for max in 0..40 {
            let s = snippet(text, "theta", max);
            assert!(n(&s) <= max, "{max}: {s}");
            assert!(!s.contains("  "), "{s}");
        }
        let s = snippet(text, "theta", 20);
        assert!(s.contains("theta"), "{s}");
        assert_eq!(snippet("", "x", 10), "");
        assert_eq!(snippet("   \n ", "x", 10), "");
    }
}
