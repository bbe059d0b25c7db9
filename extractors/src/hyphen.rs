//! Words a PDF hyphenated across a line break, joined again: "fol-" at a line's end and
//! "lowing" at the next line's start are the word "following", as a reader (and pdftotext)
//! reads it, and as a keyword search must find it.
//!
//! A hyphen stays when it is a real one: when the document itself writes the hyphenated form
//! elsewhere on one line ("command-line") and never the joined one. A soft hyphen (U+00AD) is
//! always a break. Nothing is joined before a capital ("Smith-" / "Jones") or across a
//! blank line. What was changed is kept: each join is recorded as `[at, was, now]`: from char
//! offset `at` the new text holds `now` where the page printed `was`, so a quote of the page
//! as printed can still be checked against it (replace `now` by `was`, last join first).

use std::collections::HashSet;

/// The most joins recorded for one text (later ones are still made).
pub(crate) const MAX_RECORDED_JOINS: usize = 2000;

/// The words a document writes whole, lowercased: single words and hyphenated compounds, each
/// seen within one line.
#[derive(Debug, Default)]
pub(crate) struct Vocabulary {
    words: HashSet<String>,
}

/// Characters that end a line as a hyphen.
fn is_hyphen(c: char) -> bool {
    matches!(c, '-' | '\u{2010}' | '\u{ad}')
}

impl Vocabulary {
    /// The vocabulary of `texts`.
    pub(crate) fn of<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vocabulary {
        let mut words = HashSet::new();
        for text in texts {
            for line in text.lines() {
                let line = line.trim_end();
                let mut tokens: Vec<&str> = line
                    .split(|c: char| !(c.is_alphanumeric() || is_hyphen(c)))
                    .collect();
                // A word broken at this line's end is not a whole word.
                if line.ends_with(is_hyphen) {
                    tokens.pop();
                }
                for token in tokens {
                    let token = token.trim_matches(is_hyphen);
                    if token.chars().any(char::is_alphabetic) {
                        words.insert(token.to_lowercase());
                    }
                }
            }
        }
        Vocabulary { words }
    }

    fn knows(&self, word: &str) -> bool {
        self.words.contains(word)
    }
}

/// `text` with its line-end hyphenations joined, and the joins made (at most
/// [`MAX_RECORDED_JOINS`] recorded): `(at, was, now)`.
pub(crate) fn join_hyphens(
    text: &str,
    vocab: &Vocabulary,
) -> (String, Vec<(usize, String, String)>) {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut joins = Vec::new();
    // The part of the current line still to write (after a join moved its first word up).
    let mut carry: Option<String> = None;
    for (i, line) in lines.iter().enumerate() {
        let line: String = carry.take().unwrap_or_else(|| (*line).to_string());
        let next = lines.get(i + 1).copied();
        match next.and_then(|n| join(&line, n, vocab)) {
            Some(j) => {
                let at =
                    out.chars().count() + line.get(..j.head_start).map_or(0, |h| h.chars().count());
                out.push_str(line.get(..j.head_start).unwrap_or(""));
                out.push_str(&j.now);
                if joins.len() < MAX_RECORDED_JOINS {
                    joins.push((at, j.was, format!("{}\n", j.now)));
                }
                out.push('\n');
                carry = Some(j.rest);
            }
            None => {
                out.push_str(&line);
                if i + 1 < lines.len() {
                    out.push('\n');
                }
            }
        }
    }
    (out, joins)
}

/// One join: the head's byte start in its line, the text replaced from there (`was`: head,
/// hyphen, line break, tail and the spaces after it), what stands for it, and what is left of
/// the next line.
struct Join {
    head_start: usize,
    was: String,
    now: String,
    rest: String,
}

fn join(line: &str, next: &str, vocab: &Vocabulary) -> Option<Join> {
    let trimmed = line.trim_end();
    let (hyphen_at, hyphen) = trimmed.char_indices().last()?;
    if !is_hyphen(hyphen) {
        return None;
    }
    let before = trimmed.get(..hyphen_at)?;
    let head_start = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_alphabetic())
        .last()
        .map(|(i, _)| i)?;
    let head = before.get(head_start..)?;
    let tail_len: usize = next
        .chars()
        .take_while(|c| c.is_alphabetic())
        .map(char::len_utf8)
        .sum();
    let tail = next.get(..tail_len)?;
    let first = tail.chars().next()?;
    if first.is_uppercase() && hyphen != '\u{ad}' {
        return None;
    }
    let after = next.get(tail_len..).unwrap_or("");
    // Punctuation stays with the word; the spaces before the rest of the line go.
    let punct_len: usize = after
        .chars()
        .take_while(|c| !c.is_whitespace())
        .map(char::len_utf8)
        .sum();
    let (punct, rest) = after.split_at(punct_len);
    let rest_trimmed = rest.trim_start();
    let joined = format!("{head}{tail}");
    let compound = format!("{head}-{tail}");
    let keep_hyphen = hyphen != '\u{ad}'
        && vocab.knows(&compound.to_lowercase())
        && !vocab.knows(&joined.to_lowercase());
    let now = if keep_hyphen {
        format!("{compound}{punct}")
    } else {
        format!("{joined}{punct}")
    };
    let was = format!(
        "{}\n{}",
        line.get(head_start..).unwrap_or(""),
        next.get(..next.len() - rest_trimmed.len()).unwrap_or("")
    );
    Some(Join {
        head_start,
        was,
        now,
        rest: rest_trimmed.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(text: &str, context: &str) -> (String, Vec<(usize, String, String)>) {
        join_hyphens(text, &Vocabulary::of([text, context]))
    }

    #[test]
    fn a_word_broken_at_a_line_end_is_one_word_again() {
        let (t, joins) = joined("the fol-\nlowing options are\nread", "");
        assert_eq!(t, "the following\noptions are\nread");
        assert_eq!(
            joins,
            [(4, "fol-\nlowing ".to_string(), "following\n".to_string())]
        );
        // Recorded so that the printed text can be rebuilt.
        let (at, was, now) = &joins[0];
        let prefix: String = t.chars().take(*at).collect();
        let rest: String = t.chars().skip(at + now.chars().count()).collect();
        assert_eq!(
            format!("{prefix}{was}{rest}"),
            "the fol-\nlowing options are\nread"
        );
        // Punctuation stays with the word; a word that is the whole next line leaves none.
        let (t, _) = joined("see the docu-\nmentation.\nNext", "");
        assert_eq!(t, "see the documentation.\n\nNext");
    }

    #[test]
    fn real_hyphens_stay() {
        // The document writes "command-line" on one line and never "commandline".
        let (t, _) = joined("use the command-\nline tool", "a command-line option");
        assert_eq!(t, "use the command-line\ntool");
        // Known whole: joined.
        let (t, _) = joined("use the command-\nline tool", "the commandline");
        assert_eq!(t, "use the commandline\ntool");
        // A capital after the hyphen: a name or a list, not a broken word.
        let (t, j) = joined("Smith-\nJones said", "");
        assert_eq!(t, "Smith-\nJones said");
        assert!(j.is_empty());
        // A soft hyphen is always a break, whatever follows.
        let (t, _) = joined("Ver\u{ad}\nsion two", "");
        assert_eq!(t, "Version\ntwo");
        // Not a word before the hyphen, a blank line, a number: nothing to join.
        for text in ["a list -\nitem", "end-\n\nnext", "pages 10-\n12", "x -"] {
            assert_eq!(joined(text, "").0, text);
        }
    }
}
