//! Names first: when a query's words are a file's name (or its title or subject), that file's
//! card leads the answer, however many passages elsewhere share the words (a long manual
//! asked for by its own title, `notes` asked for `notes.txt`, an archive member by its name).
//!
//! A card matches when the words the query and the name share are most of the query's words
//! (at least [`MIN_QUERY_SHARE`]) and at least half of the name's: `pump manual` names
//! `pump-manual_v2.pdf`, `meeting notes from March` does not name `notes.txt` (one word of
//! three). Words are compared lowercase, split as file names are split
//! ([`crate::embed::card::name_words`]), without a few function words and without the
//! extension.

use std::collections::BTreeSet;

use crate::embed::card::name_words;

/// The share of the query's words a name must hold to be the query's answer.
pub const MIN_QUERY_SHARE: f32 = 0.6;
/// The share of a name's words the query must hold.
pub const MIN_NAME_SHARE: f32 = 0.5;
/// The most name-matched cards put first in one answer (files of one name in several
/// formats: `harbour.mp4`, `harbour.webm`, … all lead).
pub const MAX_NAMED: usize = 5;
/// The cards a keyword search gives to be matched by name: many files can share most of a
/// name (`live-manual.en.pdf`, `live-manual.ja.odt`, … of one manual in 18 files).
pub const NAMED_CANDIDATES: usize = 50;
/// The longest query taken for a name, in words: questions are not names.
const MAX_NAME_QUERY_WORDS: usize = 12;

/// Words that say nothing about which file is meant (English only: `de`, `en`, `it` are
/// also language codes, which file names hold: `live-manual.de.pdf`).
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "and", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with",
];

/// The words of `text` as names and queries are compared: lowercase, split at punctuation,
/// case and letter-digit changes, function words left out.
pub fn words(text: &str) -> BTreeSet<String> {
    name_words(text)
        .split_whitespace()
        .map(str::to_lowercase)
        .filter(|w| !FUNCTION_WORDS.contains(&w.as_str()))
        .collect()
}

/// The name of the file at `locator` without its extension (of 1 to 5 characters): what a
/// user types for it (`pump-manual_v2` for `/d/pump-manual_v2.pdf`, `README` for
/// `a.zip!/README`).
pub fn stem(locator: &str) -> &str {
    let file = extractors::file_part(locator);
    let name = file
        .rsplit(['/', '!'])
        .find(|s| !s.is_empty())
        .unwrap_or(file);
    match name.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && (1..=5).contains(&ext.len()) => stem,
        _ => name,
    }
}

/// The most distinct words of the names of the files holding one content that a point
/// records ([`words_of_names`]).
pub const MAX_NAME_WORDS: usize = 64;

/// The [`words`] of the names (without extension) of the files at `locators`, each once, at
/// most [`MAX_NAME_WORDS`]: what a point records so that the cards of every file a query's
/// words name wholly are found by a filter, however many other cards hold the same words in
/// their folders or text (`xhtml` for the `xhtml.css` of an EPUB among its hundred
/// `.xhtml` chapters).
pub fn words_of_names<'a>(locators: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for locator in locators {
        for w in words(stem(locator)) {
            if out.len() >= MAX_NAME_WORDS {
                return out;
            }
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
}

/// A query's words when it may be a name: none for a long question.
pub fn query_words(query: &str) -> Option<BTreeSet<String>> {
    let q = words(query);
    (!q.is_empty() && q.len() <= MAX_NAME_QUERY_WORDS).then_some(q)
}

/// How well `query` (its [`query_words`]) names a card of the file at `locator` whose card
/// text is `card`, when the file's name, title or subject match (see the module): the share
/// of the query's words the name holds, then the share of the name's words the query holds
/// (`harbour` names `harbour.mp4` better than `harbour-budget.ods`); `None` otherwise.
pub fn name_match(query: &BTreeSet<String>, locator: &str, card: &str) -> Option<(f32, f32)> {
    let mut names = vec![words(stem(locator))];
    for line in card.lines() {
        if let Some((key, value)) = line.split_once(": ") {
            if matches!(key.trim(), "title" | "subject") {
                names.push(words(value));
            }
        }
    }
    names
        .iter()
        .filter_map(|n| share(query, n))
        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)))
}

/// The share of `query`'s words that `name` holds and the share of the name's the query
/// holds, when they are at least [`MIN_QUERY_SHARE`] and [`MIN_NAME_SHARE`].
fn share(query: &BTreeSet<String>, name: &BTreeSet<String>) -> Option<(f32, f32)> {
    if name.is_empty() {
        return None;
    }
    let common = query.intersection(name).count() as f32;
    let of_query = common / query.len() as f32;
    let of_name = common / name.len() as f32;
    (of_query >= MIN_QUERY_SHARE && of_name >= MIN_NAME_SHARE).then_some((of_query, of_name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(query: &str, locator: &str, card: &str) -> Option<f32> {
        name_match(&query_words(query)?, locator, card).map(|(q, _)| q)
    }

    #[test]
    fn a_point_records_the_words_of_its_files_names() {
        assert_eq!(stem("/d/pump-manual_v2.pdf"), "pump-manual_v2");
        assert_eq!(stem("a.zip!/pkg/README"), "README");
        assert_eq!(stem("/m/live-manual.de.pdf#page=3"), "live-manual.de");
        assert_eq!(stem("/d/archive.markdown"), "archive.markdown");
        let locators = [
            "/m/live-manual.de.pdf".to_string(),
            "/n/Live_Manual-DE.txt".to_string(),
            "/b/book.epub!/OEBPS/css/xhtml.css".to_string(),
        ];
        assert_eq!(
            words_of_names(&locators),
            ["de", "live", "manual", "xhtml"],
            "lowercase, each once, without extensions and folders"
        );
        let many: Vec<String> = (0..200).map(|i| format!("/d/file-{i}.txt")).collect();
        assert_eq!(words_of_names(&many).len(), MAX_NAME_WORDS);
    }

    #[test]
    fn a_query_names_a_file_by_most_of_its_words() {
        assert_eq!(named("pump manual", "/d/pump-manual_v2.pdf", ""), Some(1.0));
        assert_eq!(named("notes", "/d/notes.txt", ""), Some(1.0));
        assert_eq!(named("README", "a.zip!/pkg/README", ""), Some(1.0));
        assert_eq!(
            named("annual report 2023", "/r/AnnualReport_2023-final.pdf", ""),
            Some(1.0)
        );
        assert!(named("meeting notes from March", "/d/notes.txt", "").is_none());
        assert!(named("pump", "/d/pump-manual_v2-service.pdf", "").is_none());
        assert!(named("network", "/d/network-configuration.txt", "").is_some());
        // The whole name before a part of one.
        let q = query_words("harbour").unwrap();
        assert!(name_match(&q, "/f/harbour.mp4", "") > name_match(&q, "/f/harbour-budget.ods", ""));
        assert!(named("configure the network", "/d/network-configuration.txt", "").is_none());
        // By title or subject, as the card says.
        let card = "PDF document, 412 pages\ntitle: The Debian Administrator's Handbook";
        assert_eq!(
            named("debian administrator's handbook", "/m/dah.pdf", card),
            Some(1.0)
        );
        assert!(named("debian", "/m/dah.pdf", card).is_none());
        // A long question is not a name.
        assert!(named(
            "how do I change the default gateway of the second network interface on a server",
            "/d/network.txt",
            ""
        )
        .is_none());
    }
}
