//! `verify_quote`: whether a quote occurs in one file, where (each object and page holding
//! it) and in which sentence; else the closest passage with a score.
//!
//! Both the quote and the file's text are compared in one canonical form, so that what
//! copying from a page changes does not count: compatibility characters are folded (`ﬁ` is
//! `fi`), typographic quotes and dashes are plain, case is ignored, every run of white space
//! is one space, and hyphens are left out (a word hyphenated at a line's end, `expres-\nsion`,
//! is the word; `well-known` and `well-\nknown` are the same). Nothing else is forgiven: a
//! changed word, number or letter is not the quote, and the answer then names the closest
//! passage with its similarity instead.
//!
//! Where the file's objects have positions (PDF text, OCR text), each place also gives the
//! `boxes` of the lines holding the quote, page by page, in the positions' system (PDF
//! points from the page's bottom-left corner): what `render_page` takes as `region`.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use extractors::{ContentType, Scope};
use serde_json::{json, Map, Value};
use unicode_normalization::UnicodeNormalization;

use super::budget::{largest_fitting, Budget};
use super::view;
use super::{Finished, FullResult, QuoteArgs, ToolError};
use crate::index::objects::{PackReader, PackedObject};
use crate::ingestor::Ingestor;

/// The longest quote checked, in chars.
pub const MAX_QUOTE_CHARS: usize = 4000;
/// The most chars of text a file may hold for a quote to be checked in it (about 8 000
/// pages of prose): what one call holds in memory is about 10 bytes per char.
const MAX_VERIFIED_CHARS: u64 = 16_000_000;
/// The most matches looked for (the answer counts them up to this).
const MAX_MATCHES: usize = 100;
/// Chars of context on each side of a match, at most, within its sentence.
const MAX_CONTEXT_CHARS: usize = 300;
/// Windows whose words are compared closely when the quote is not found.
const CANDIDATE_WINDOWS: usize = 5;
/// Line boxes given for one match, at most.
const MAX_BOXES: usize = 64;
/// The longest one call searches: past it the call stops and says how far it got.
pub const QUOTE_TIME_LIMIT: Duration = Duration::from_secs(20);
/// The most chars the canonical form of a file's text may hold: a char may fold into many
/// (`\u{fdfa}` is 18), and the canonical form is held in memory with 4 bytes of origin a
/// char.
const MAX_CANONICAL_CHARS: usize = 2 * MAX_VERIFIED_CHARS as usize;
/// The longest passage compared with a quote by edit distance, in chars of the quote: a window
/// of the quote's word count in a text of very long words is cut to this (the comparison
/// costs its length times the quote's).
const WINDOW_CHARS_PER_QUOTE_CHAR: usize = 2;
/// How many steps of a loop run between two looks at the clock and the stop flag.
const CHECK_EVERY: usize = 1 << 14;

/// When a search must stop: its caller went away, or its time is up.
pub(crate) struct Limits<'a> {
    stop: &'a AtomicBool,
    /// `None`: a time too far to be reached.
    until: Option<Instant>,
    time: Duration,
}

/// Why a search stopped before its end, and how far it got.
#[derive(Debug)]
pub(crate) enum Stop {
    /// Stopped while `stage`, `done` of `total` (in `unit`) done.
    Halted {
        why: String,
        stage: &'static str,
        done: usize,
        total: usize,
        unit: &'static str,
    },
    /// The text's canonical form would hold more than [`MAX_CANONICAL_CHARS`].
    Grew,
}

impl<'a> Limits<'a> {
    /// Until `stop` is set or `time` has passed from now.
    pub(crate) fn new(stop: &'a AtomicBool, time: Duration) -> Self {
        Limits {
            stop,
            until: Instant::now().checked_add(time),
            time,
        }
    }

    /// `Err` once the search must stop, saying where it was.
    fn check(
        &self,
        stage: &'static str,
        done: usize,
        total: usize,
        unit: &'static str,
    ) -> Result<(), Stop> {
        let why = if self.stop.load(Ordering::SeqCst) {
            "the caller went away".to_string()
        } else if self.until.is_some_and(|u| Instant::now() >= u) {
            format!("it reached its time limit of {} s", self.time.as_secs())
        } else {
            return Ok(());
        };
        Err(Stop::Halted {
            why,
            stage,
            done,
            total,
            unit,
        })
    }
}

impl Stop {
    /// The error answer for a search of `file` that stopped.
    fn error(self, file: &str) -> ToolError {
        match self {
            Stop::Halted {
                why,
                stage,
                done,
                total,
                unit,
            } => {
                tracing::info!(file, stage, done, total, "verify_quote stopped: {why}");
                ToolError::Invalid(format!(
                    "verify_quote stopped before an answer: {why}, while {stage} \
                     ({done} of {total} {unit} done); nothing is said about the rest. Check \
                     a shorter, more distinctive part of the quote, or find its page with \
                     search_documents and read it with read_content_objects"
                ))
            }
            Stop::Grew => ToolError::Invalid(format!(
                "{file}: its text in the form quotes are compared in would be over \
                 {MAX_CANONICAL_CHARS} chars (it holds characters that expand when \
                 normalized): quotes are not checked in it"
            )),
        }
    }
}

/// A text in canonical form, each char remembering where it came from.
#[derive(Default)]
struct Canonical {
    text: String,
    /// For each char of `text`: the index of the char it came from in the original.
    from: Vec<u32>,
}

/// One char as the canonical form has it (`None`: left out; white space is handled apart).
fn fold(c: char, out: &mut String) {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' | '\u{2032}' | '`' => out.push('\''),
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{2033}' => out.push('"'),
        // Hyphens and dashes of every kind, and the soft hyphen, are left out.
        '-' | '\u{ad}' | '\u{2010}'..='\u{2015}' | '\u{2212}' => {}
        c => {
            for n in c.nfkc() {
                out.extend(n.to_lowercase());
            }
        }
    }
}

impl Canonical {
    /// `original` (a sequence of `total` chars) in canonical form, within `limits`, at most
    /// `max_chars` chars long.
    fn within(
        original: impl Iterator<Item = char>,
        total: usize,
        max_chars: usize,
        limits: &Limits<'_>,
    ) -> Result<Canonical, Stop> {
        let mut out = Canonical::default();
        // White space since the last char kept: none, some, or some with a line break.
        let (mut space, mut line_break) = (false, false);
        // A hyphen left out right after a word: a line break after it joins the word.
        let mut hyphenated = false;
        let mut buf = String::new();
        for (i, c) in original.enumerate() {
            if i % CHECK_EVERY == 0 {
                limits.check("putting the text in canonical form", i, total, "chars")?;
                if out.from.len() > max_chars {
                    return Err(Stop::Grew);
                }
            }
            let at = u32::try_from(i).unwrap_or(u32::MAX);
            if c.is_whitespace() {
                space = !out.text.is_empty();
                line_break |= c == '\n';
                continue;
            }
            buf.clear();
            fold(c, &mut buf);
            if buf.is_empty() {
                hyphenated |= !space && !out.text.is_empty();
                continue;
            }
            if space && !(hyphenated && line_break) {
                out.text.push(' ');
                out.from.push(at);
            }
            (space, line_break, hyphenated) = (false, false, false);
            for f in buf.chars() {
                out.text.push(f);
                out.from.push(at);
            }
        }
        if out.from.len() > max_chars {
            return Err(Stop::Grew);
        }
        Ok(out)
    }
}

/// A file's text objects joined in document order (a blank line between two), and where
/// each starts (in chars).
struct Joined {
    chars: Vec<char>,
    /// (first char, object index in the pack) of each text object.
    starts: Vec<(usize, usize)>,
}

impl Joined {
    /// The object holding joined char `at`.
    fn object_at(&self, at: usize) -> usize {
        let k = self.starts.partition_point(|(start, _)| *start <= at);
        self.starts
            .get(k.saturating_sub(1))
            .map_or(0, |(_, object)| *object)
    }

    /// The sentence around joined chars `[a, b)`: back to the end of the previous sentence
    /// and on to the end of this one, at most [`MAX_CONTEXT_CHARS`] each way (`…` where cut),
    /// never past the objects holding `a` and `b`.
    fn sentence(&self, a: usize, b: usize) -> String {
        let ends = |c: char| matches!(c, '.' | '!' | '?' | '\n');
        let object_start = self
            .starts
            .get(
                self.starts
                    .partition_point(|(s, _)| *s <= a)
                    .saturating_sub(1),
            )
            .map_or(0, |(s, _)| *s);
        let mut start = a;
        while start > object_start && a - start < MAX_CONTEXT_CHARS {
            let prev = self.chars.get(start - 1).copied().unwrap_or('.');
            if ends(prev) {
                break;
            }
            start -= 1;
        }
        let object_end = self
            .starts
            .get(self.starts.partition_point(|(s, _)| *s < b))
            .map_or(self.chars.len(), |(s, _)| s.saturating_sub(2));
        let mut end = b;
        let closed = b > 0 && self.chars.get(b - 1).is_some_and(|c| ends(*c));
        while !closed && end < object_end && end - b < MAX_CONTEXT_CHARS {
            let c = self.chars.get(end).copied().unwrap_or('.');
            end += 1;
            if ends(c) {
                break;
            }
        }
        let mut s = String::new();
        if start > object_start && !self.chars.get(start - 1).is_some_and(|c| ends(*c)) {
            s.push('…');
        }
        s.extend(self.chars.get(start..end).unwrap_or_default());
        let s = s.trim().to_string();
        if end < object_end && !self.chars.get(end - 1).is_some_and(|c| ends(*c)) {
            format!("{s}…")
        } else {
            s
        }
    }
}

/// A window of a canonical text: its first char and byte, and the char and byte after it.
#[derive(Clone, Copy)]
struct Window {
    char_start: usize,
    byte_start: usize,
    byte_end: usize,
}

/// The passage of `doc` closest to `quote` (both canonical): among the windows of the
/// quote's word count holding most of its words (a sliding count over the text's words,
/// once, keeping the best [`CANDIDATE_WINDOWS`]), the one nearest by edit distance (a window
/// cut to [`WINDOW_CHARS_PER_QUOTE_CHAR`] times the quote's length). Its first and last
/// canonical char and its similarity (0–1). Time and memory grow as the text's length (the
/// last quote-count words are held, not the text's), plus the few windows' comparisons.
fn closest(
    doc: &str,
    quote: &str,
    limits: &Limits<'_>,
) -> Result<Option<(usize, usize, f64)>, Stop> {
    let m = quote.split(' ').count();
    if doc.is_empty() || quote.is_empty() {
        return Ok(None);
    }
    let mut want: HashMap<&str, i64> = HashMap::new();
    for w in quote.split(' ') {
        *want.entry(w).or_default() += 1;
    }
    let mut have: HashMap<&str, i64> = HashMap::new();
    let mut shared = 0i64;
    // The last `m` words: (first char, first byte, word).
    let mut last: VecDeque<(usize, usize, &str)> = VecDeque::with_capacity(m + 1);
    // (words of the quote held, window), best first.
    let mut best: Vec<(i64, Window)> = Vec::with_capacity(CANDIDATE_WINDOWS + 1);
    let (mut chars, mut bytes) = (0usize, 0usize);
    let mut seen = 0usize;
    for (i, w) in doc.split(' ').enumerate() {
        if i % CHECK_EVERY == 0 {
            limits.check(
                "looking for the closest passage",
                bytes,
                doc.len(),
                "bytes of text",
            )?;
        }
        let w_chars = w.chars().count();
        last.push_back((chars, bytes, w));
        if let Some(&wanted) = want.get(w) {
            let n = have.entry(w).or_default();
            *n += 1;
            if *n <= wanted {
                shared += 1;
            }
        }
        if last.len() > m {
            if let Some((_, _, gone)) = last.pop_front() {
                if let (Some(&wanted), Some(n)) = (want.get(gone), have.get_mut(gone)) {
                    if *n <= wanted {
                        shared -= 1;
                    }
                    *n -= 1;
                }
            }
        }
        let window = last.front().map(|&(c, b, _)| Window {
            char_start: c,
            byte_start: b,
            byte_end: bytes + w.len(),
        });
        chars += w_chars + 1;
        bytes += w.len() + 1;
        seen = i + 1;
        let Some(window) = window else { continue };
        if seen >= m
            && best
                .last()
                .is_none_or(|b| shared > b.0 || best.len() < CANDIDATE_WINDOWS)
        {
            let at = best.partition_point(|b| b.0 >= shared);
            best.insert(at, (shared, window));
            best.truncate(CANDIDATE_WINDOWS);
        }
    }
    // A text of fewer words than the quote: the one window is the whole text.
    if seen < m {
        if let Some(&(c, b, _)) = last.front() {
            best.push((
                shared,
                Window {
                    char_start: c,
                    byte_start: b,
                    byte_end: bytes.saturating_sub(1),
                },
            ));
        }
    }
    let quote_chars: Vec<char> = quote.chars().collect();
    let cap = quote_chars
        .len()
        .saturating_mul(WINDOW_CHARS_PER_QUOTE_CHAR);
    let mut scored: Option<(usize, usize, f64)> = None;
    for (k, (_, w)) in best.iter().enumerate() {
        let Some(text) = doc.get(w.byte_start..w.byte_end) else {
            continue;
        };
        let window: Vec<char> = text.chars().take(cap).collect();
        let end = w.char_start + window.len();
        let score = similarity(&window, &quote_chars, limits, k)?;
        if scored.is_none_or(|s| score > s.2 || (score == s.2 && w.char_start < s.0)) {
            scored = Some((w.char_start, end, score));
        }
    }
    Ok(scored)
}

/// 1 − the edit distance (Levenshtein, in chars) of `a` and `b` over the longer's length:
/// one row at a time, the limits looked at every few rows. `k` counts the comparisons so far
/// (for the stop's report).
fn similarity(a: &[char], b: &[char], limits: &Limits<'_>, k: usize) -> Result<f64, Stop> {
    let longest = a.len().max(b.len());
    if longest == 0 {
        return Ok(1.0);
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        if i % 256 == 0 {
            limits.check(
                "comparing the closest passages with the quote",
                k,
                CANDIDATE_WINDOWS,
                "passages",
            )?;
        }
        let mut diagonal = i;
        let mut left = i + 1;
        for (cb, up) in b.iter().zip(row.iter_mut().skip(1)) {
            let here = if ca == cb {
                diagonal
            } else {
                1 + diagonal.min(*up).min(left)
            };
            diagonal = *up;
            *up = here;
            left = here;
        }
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
    }
    let distance = row.last().copied().unwrap_or(longest);
    Ok(1.0 - distance as f64 / longest as f64)
}

/// For benches only ([`crate::testing::quote_search`]): the whole search of `quote` in
/// `text` (canonical forms, exact matches, else the closest passage), without a file:
/// whether it was found, and the closest passage's score when it was not.
/// `Err` when it stopped (its time limit is [`QUOTE_TIME_LIMIT`]), saying where.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn search_text(text: &str, quote: &str) -> Result<(bool, Option<f64>), String> {
    let stop = AtomicBool::new(false);
    let limits = Limits::new(&stop, QUOTE_TIME_LIMIT);
    let run = || -> Result<(bool, Option<f64>), Stop> {
        let doc = Canonical::within(
            text.chars(),
            text.chars().count(),
            MAX_CANONICAL_CHARS,
            &limits,
        )?;
        let quote = Canonical::within(
            quote.chars(),
            quote.chars().count(),
            MAX_CANONICAL_CHARS,
            &limits,
        )?;
        if doc.text.contains(quote.text.as_str()) {
            return Ok((true, None));
        }
        Ok((
            false,
            closest(&doc.text, &quote.text, &limits)?.map(|c| c.2),
        ))
    };
    run().map_err(|s| s.error("the text").to_string())
}

/// Answer a `verify_quote` call.
pub(crate) fn verify_quote(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &QuoteArgs,
    budget: Budget,
    stop: &AtomicBool,
) -> Result<Finished, ToolError> {
    verify_quote_within(
        ingestor,
        scope,
        args,
        budget,
        &Limits::new(stop, QUOTE_TIME_LIMIT),
    )
}

/// [`verify_quote`] within `limits`.
fn verify_quote_within(
    ingestor: &Ingestor,
    scope: &Scope,
    args: &QuoteArgs,
    budget: Budget,
    limits: &Limits<'_>,
) -> Result<Finished, ToolError> {
    let quote_chars = args.quote.chars().count();
    if quote_chars > MAX_QUOTE_CHARS {
        return Err(ToolError::Invalid(format!(
            "quote is {quote_chars} chars: at most {MAX_QUOTE_CHARS}; check a shorter part"
        )));
    }
    let quote = Canonical::within(args.quote.chars(), quote_chars, MAX_CANONICAL_CHARS, limits)
        .map_err(|s| s.error("the quote"))?;
    if quote.text.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
        return Err(ToolError::Invalid(
            "quote has no words to look for: give the quoted words".into(),
        ));
    }
    let doc = view::document(ingestor, scope, &args.locator, args.owner.as_deref())?;
    let mut pack = view::pack(ingestor, &doc.hash)?;
    let file = doc.entry.locator.clone();
    // Bounded before any text is read: the file's text, as the pack's directory counts it.
    let text_chars: u64 = pack
        .objects
        .iter()
        .filter(|o| o.content_type == ContentType::Text)
        .map(|o| o.chars)
        .sum();
    if text_chars > MAX_VERIFIED_CHARS {
        return Err(ToolError::Invalid(format!(
            "{file} holds {text_chars} chars of text: quotes are checked in files of at most \
             {MAX_VERIFIED_CHARS}; search_documents with this locator and the quote's words \
             finds its page, read_content_objects shows it"
        )));
    }
    let mut joined = Joined {
        chars: Vec::new(),
        starts: Vec::new(),
    };
    let objects = pack.objects.len();
    for i in 0..objects {
        if pack.objects.get(i).map(|o| o.content_type) != Some(ContentType::Text) {
            continue;
        }
        limits
            .check("reading the file's text", i, objects, "objects")
            .map_err(|s| s.error(&file))?;
        let text = pack.text(i)?;
        if !joined.chars.is_empty() {
            joined.chars.extend(['\n', '\n']);
        }
        joined.starts.push((joined.chars.len(), i));
        joined.chars.extend(text.chars());
    }
    let canonical = Canonical::within(
        joined.chars.iter().copied(),
        joined.chars.len(),
        MAX_CANONICAL_CHARS,
        limits,
    )
    .map_err(|s| s.error(&file))?;
    let mut base = Map::new();
    base.insert("locator".into(), json!(file));
    doc.note_owner(&mut base, scope);
    base.insert("quote_chars".into(), json!(quote_chars));
    let place = |objects: &[PackedObject], a: usize, b: usize| -> Map<String, Value> {
        let object = joined.object_at(a);
        let mut m = Map::new();
        if let Some(o) = objects.get(object) {
            m.insert(
                "locator".into(),
                json!(super::read::object_locator(&file, o)),
            );
            if let Some(p) = o.page {
                m.insert("page".into(), json!(p));
            }
            let last = joined.object_at(b.saturating_sub(1));
            if let Some(p) = objects.get(last).and_then(|o| o.page) {
                if Some(p) != o.page {
                    m.insert("to_page".into(), json!(p));
                }
            }
        }
        m
    };
    let mut positions: HashMap<usize, Option<extractors::Positions>> = HashMap::new();
    // Canonical chars → joined chars, for a match's place and sentence.
    let original = |canonical_char: usize| -> usize {
        canonical
            .from
            .get(canonical_char)
            .map_or(joined.chars.len(), |&i| i as usize)
    };
    let mut matches: Vec<Value> = Vec::new();
    let mut chars_before = 0usize;
    let mut last_byte = 0usize;
    for (byte, _) in canonical.text.match_indices(quote.text.as_str()) {
        if matches.len() == MAX_MATCHES {
            break;
        }
        chars_before += canonical
            .text
            .get(last_byte..byte)
            .map_or(0, |s| s.chars().count());
        last_byte = byte;
        let a = original(chars_before);
        let b = original(chars_before + quote.text.chars().count() - 1) + 1;
        let mut m = place(&pack.objects, a, b);
        let found = line_boxes(&mut pack, &joined, &mut positions, a, b)?;
        if !found.is_empty() {
            m.insert("boxes".into(), Value::Array(found));
        }
        m.insert("sentence".into(), json!(joined.sentence(a, b)));
        matches.push(Value::Object(m));
    }
    let full = FullResult::of(matches.iter().filter_map(|m| m["locator"].as_str()));
    if matches.is_empty() {
        base.insert("found".into(), json!(false));
        match closest(&canonical.text, &quote.text, limits).map_err(|s| s.error(&file))? {
            Some((a, b, score)) => {
                let (a, b) = (original(a), original(b.saturating_sub(1)) + 1);
                let mut m = place(&pack.objects, a, b);
                let found = line_boxes(&mut pack, &joined, &mut positions, a, b)?;
                if !found.is_empty() {
                    m.insert("boxes".into(), Value::Array(found));
                }
                m.insert("score".into(), json!((score * 1000.0).round() / 1000.0));
                let text: String = joined.chars.get(a..b).unwrap_or_default().iter().collect();
                let text: String = text.chars().take(MAX_QUOTE_CHARS + 100).collect();
                m.insert("text".into(), json!(text));
                base.insert("closest".into(), Value::Object(m));
                base.insert(
                    "note".into(),
                    json!("the quote is not in this file as given (white space, line-break hyphens, ligatures, typographic quotes and case aside); closest is the most similar passage (score 1 is identical)"),
                );
            }
            None => {
                base.insert(
                    "note".into(),
                    json!("this file has no text to compare with"),
                );
            }
        }
        // The closest passage is cut to fit when it must.
        let closest_text: Option<Vec<char>> = base
            .get("closest")
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .map(|t| t.chars().collect());
        if let Some(chars) = closest_text.filter(|_| !budget.fits(&base)) {
            let with = |k: usize| {
                let mut b = base.clone();
                if let Some(Value::Object(c)) = b.get_mut("closest") {
                    c.insert("text".into(), json!(cut(&chars, k)));
                }
                b
            };
            let keep = largest_fitting(0, chars.len(), |k| budget.fits(&with(k))).unwrap_or(0);
            base = with(keep);
        }
        return Ok(Finished {
            text: budget.finish(&base)?,
            full,
        });
    }
    base.insert("found".into(), json!(true));
    base.insert("match_count".into(), json!(matches.len()));
    if matches.len() == MAX_MATCHES {
        base.insert(
            "note".into(),
            json!(format!("counted up to {MAX_MATCHES} matches")),
        );
    }
    let with = |keep: usize| {
        let mut a = base.clone();
        a.insert(
            "matches".into(),
            Value::Array(matches.get(..keep).unwrap_or(&[]).to_vec()),
        );
        a
    };
    let keep = largest_fitting(1, matches.len(), |k| budget.fits(&with(k))).unwrap_or(0);
    let answer = if keep > 0 {
        with(keep)
    } else {
        // Not even one match with its sentence: the places only.
        let mut a = base.clone();
        let places: Vec<Value> = matches
            .iter()
            .map(|m| {
                let mut m = m.clone();
                if let Value::Object(o) = &mut m {
                    o.remove("sentence");
                }
                m
            })
            .collect();
        let fit = largest_fitting(0, places.len(), |k| {
            let mut b = a.clone();
            b.insert(
                "matches".into(),
                Value::Array(places.get(..k).unwrap_or_default().to_vec()),
            );
            budget.fits(&b)
        })
        .unwrap_or(0);
        a.insert(
            "matches".into(),
            Value::Array(places.get(..fit).unwrap_or_default().to_vec()),
        );
        a
    };
    Ok(Finished {
        text: budget.finish(&answer)?,
        full,
    })
}

/// The boxes of the lines holding joined chars `[a, b)`, page by page (objects without
/// positions give none), at most [`MAX_BOXES`]; each object's positions read once.
fn line_boxes(
    pack: &mut PackReader,
    joined: &Joined,
    positions: &mut HashMap<usize, Option<extractors::Positions>>,
    a: usize,
    b: usize,
) -> Result<Vec<Value>, ToolError> {
    let mut out = Vec::new();
    let k = joined
        .starts
        .partition_point(|(start, _)| *start <= a)
        .saturating_sub(1);
    for &(start, i) in joined.starts.get(k..).unwrap_or_default() {
        if start >= b || out.len() >= MAX_BOXES {
            break;
        }
        let p = match positions.entry(i) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(pack.positions(i)?),
        };
        let Some(p) = p else { continue };
        let (from, to) = (a.saturating_sub(start), b.saturating_sub(start));
        let page = pack.objects.get(i).and_then(|o| o.page);
        for l in &p.lines {
            if (l.start as usize) < to && (l.end as usize) > from && out.len() < MAX_BOXES {
                let mut m = Map::new();
                if let Some(page) = page {
                    m.insert("page".into(), json!(page));
                }
                m.insert("box".into(), json!(l.bbox));
                out.push(Value::Object(m));
            }
        }
    }
    Ok(out)
}

/// The first `keep` chars of `chars`, with `…` when cut.
fn cut(chars: &[char], keep: usize) -> String {
    let mut s: String = chars.iter().take(keep).collect();
    if keep < chars.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unlimited() -> Limits<'static> {
        static NEVER: AtomicBool = AtomicBool::new(false);
        Limits::new(&NEVER, Duration::from_secs(3600))
    }

    impl Canonical {
        fn of(original: impl Iterator<Item = char>) -> Canonical {
            Canonical::within(original, 0, usize::MAX, &unlimited()).unwrap()
        }
    }

    fn canon(s: &str) -> String {
        Canonical::of(s.chars()).text
    }

    #[test]
    fn copying_from_a_page_changes_nothing_that_counts() {
        assert_eq!(canon("The  ﬁrst\nexpres-\nsion"), "the first expression");
        assert_eq!(canon("well-known"), canon("well-\nknown"));
        assert_eq!(
            canon("“Quoted” — it’s"),
            "\"quoted\"  it's".replace("  ", " ")
        );
        assert_eq!(canon("  lead and trail \n"), "lead and trail");
        assert_ne!(canon("42 knots"), canon("41 knots"));
    }

    #[test]
    fn the_canonical_form_remembers_every_chars_origin() {
        let c = Canonical::of("a  ﬁ-\nb".chars());
        assert_eq!(c.text, "a fib");
        assert_eq!(c.from, [0, 3, 3, 3, 6]);
    }

    #[test]
    fn the_closest_passage_is_the_altered_one() {
        let doc = canon(
            "The tide gauge sits on the north pier. The keeper logs gusts of 41 knots on Thursday.",
        );
        let quote = canon("The keeper logs gusts of 44 knots on Thursday.");
        let (a, b, score) = closest(&doc, &quote, &unlimited()).unwrap().unwrap();
        let found: String = doc.chars().skip(a).take(b - a).collect();
        assert_eq!(found, "the keeper logs gusts of 41 knots on thursday.");
        assert!(score > 0.9 && score < 1.0, "{score}");
    }

    #[test]
    fn a_sentence_is_cut_at_its_ends_and_its_object() {
        let text = "First one. The second sentence holds the quote here. Third.";
        let joined = Joined {
            chars: text.chars().collect(),
            starts: vec![(0, 0)],
        };
        let a = text.find("holds").unwrap();
        assert_eq!(
            joined.sentence(a, a + 5),
            "The second sentence holds the quote here."
        );
    }

    #[test]
    fn a_search_stops_when_its_caller_goes_away_or_its_time_is_up() {
        let doc = canon(&"the keeper logs gusts of forty knots. ".repeat(2000));
        let quote = canon("the keeper logs gusts of fifty knots");
        let gone = AtomicBool::new(true);
        let stopped = |limits: &Limits<'_>| {
            let by_closest = closest(&doc, &quote, limits).err();
            let by_canonical = Canonical::within(doc.chars(), doc.len(), usize::MAX, limits).err();
            [by_closest, by_canonical]
        };
        for (limits, why) in [
            (
                Limits::new(&gone, Duration::from_secs(3600)),
                "the caller went away",
            ),
            (
                Limits::new(&AtomicBool::new(false), Duration::ZERO),
                "its time limit of 0 s",
            ),
        ] {
            for stop in stopped(&limits) {
                let Some(stop) = stop else {
                    panic!("not stopped: {why}")
                };
                let said = stop.error("f.txt").to_string();
                assert!(said.contains(why) && said.contains(" of "), "{said}");
            }
        }
        // Not stopped: the same search answers.
        assert!(closest(&doc, &quote, &unlimited()).unwrap().is_some());
    }

    #[test]
    fn a_passage_compared_is_cut_to_twice_the_quote() {
        // Words of 5 000 chars: a window of the quote's three words is 15 000 chars, cut to
        // twice the quote's before its edit distance is taken.
        let long = "x".repeat(5000);
        let doc = format!("{long} {long} alpha {long} {long}");
        let quote = "alpha beta gamma";
        let (a, b, score) = closest(&doc, quote, &unlimited()).unwrap().unwrap();
        assert!(b - a <= 2 * quote.len(), "{a}..{b}");
        assert!(score < 0.5, "{score}");
        // A text of fewer words than the quote is compared whole.
        let (a, b, _) = closest("alpha beta", "alpha beta gamma", &unlimited())
            .unwrap()
            .unwrap();
        assert_eq!((a, b), (0, 10));
    }

    #[test]
    fn a_text_whose_canonical_form_grows_past_its_bound_is_refused() {
        // U+FDFA folds into 18 chars.
        let text = "\u{fdfa}".repeat(100);
        let grown = Canonical::within(text.chars(), 100, 1000, &unlimited());
        assert!(matches!(grown, Err(Stop::Grew)));
        assert!(Canonical::within(text.chars(), 100, 2000, &unlimited()).is_ok());
    }
}
