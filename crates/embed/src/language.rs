//! Which chunks get a second, multilingual vector (the index's `MULTILINGUAL_VECTOR`):
//! those in another language than English. English text is embedded once, by the index
//! model; a chunk in German, Japanese or Polish also by the multilingual model, so that a
//! question in one language finds it in another.
//!
//! The decision errs towards English: text the detector is unsure of (code, tables of
//! numbers, short labels) and text that holds English's function words as English prose does
//! counts as English, so an English corpus costs no second embedding (docs/EVALUATION.md,
//! "Every language by default").

use whatlang::{Lang, Script};

/// How sure the detector must be of another language (0..1; its "reliable" mark is 0.9).
/// At 0.5, code and index pages of English manuals were taken for Latin or French.
const MIN_CONFIDENCE: f64 = 0.8;

/// The share of a Latin-script text's tokens that must be words (letters only, with
/// trailing punctuation): prose, not code, tables of numbers or index listings, which the
/// detector assigns a language at random.
const MIN_PROSE_SHARE: f64 = 0.7;

/// English function words: a text in which at least [`ENGLISH_SHARE`] of the words are
/// among them is English, whatever the detector says (it calls terse English German or
/// Latin at times).
const ENGLISH_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "but", "by", "can", "could", "do", "does", "each", "for", "from", "has", "have", "how", "if",
    "in", "into", "is", "it", "its", "may", "more", "must", "no", "not", "of", "on", "one", "only",
    "or", "other", "should", "so", "such", "than", "that", "the", "their", "then", "there",
    "these", "they", "this", "those", "to", "was", "we", "were", "what", "when", "which", "while",
    "who", "will", "with", "would", "you", "your",
];

/// The share of English function words that makes a text English.
const ENGLISH_SHARE: f64 = 0.12;

/// Words below which a Latin-script text is not judged (too short to tell).
const MIN_WORDS: usize = 8;

/// Bytes of a text looked at (a chunk is about 1 000; a card can be longer).
const DETECT_BYTES: usize = 4096;

/// The least share of a document's chunks in another language ([`in_other_language`]) that
/// makes it a document in another language, whose chunks get multilingual vectors: a
/// French quotation or a Latin-looking listing in an English manual is not one (an English
/// corpus then loads no second model at all).
const MIN_DOCUMENT_SHARE: f64 = 0.25;

/// Which of a document's chunks (`texts`, all of them, its card too) get a multilingual
/// vector: those in another language, when they are at least [`MIN_DOCUMENT_SHARE`] of
/// the document's; none otherwise.
pub fn other_language_chunks(texts: &[&str]) -> Vec<bool> {
    let flags: Vec<bool> = texts.iter().map(|t| in_other_language(t)).collect();
    let other = flags.iter().filter(|&&f| f).count();
    if !is_document_share(other, texts.len()) {
        return vec![false; texts.len()];
    }
    flags
}

/// Whether `other` chunks in another language of a document's `all` make it a document in
/// another language ([`MIN_DOCUMENT_SHARE`]).
pub fn is_document_share(other: usize, all: usize) -> bool {
    other > 0 && other as f64 >= MIN_DOCUMENT_SHARE * all as f64
}

/// Whether `text` is in another language than English, sure enough to be worth a
/// multilingual vector.
pub fn in_other_language(text: &str) -> bool {
    other_language(text).is_some()
}

/// The language `text` is in when it is another than English, by [`in_other_language`]'s
/// rule.
pub fn other_language(text: &str) -> Option<Lang> {
    let mut end = text.len().min(DETECT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let head = text.get(..end).unwrap_or_default();
    let info = whatlang::detect(head)?;
    let lang = info.lang();
    if lang == Lang::Eng {
        return None;
    }
    // Another script than Latin is another language: its letters say so.
    if info.script() != Script::Latin {
        let letters = head.chars().filter(|c| c.is_alphabetic()).count();
        let latin = head.chars().filter(|c| c.is_ascii_alphabetic()).count();
        return (letters >= MIN_WORDS && latin * 2 < letters).then_some(lang);
    }
    if info.confidence() < MIN_CONFIDENCE || prose_share(head) < MIN_PROSE_SHARE {
        return None;
    }
    let words: Vec<String> = head
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    if words.len() < MIN_WORDS {
        return None;
    }
    let english = words
        .iter()
        .filter(|w| ENGLISH_WORDS.binary_search(&w.as_str()).is_ok())
        .count();
    ((english as f64) < ENGLISH_SHARE * words.len() as f64).then_some(lang)
}

/// Languages an English question may name, as it writes them (capitalised: `polish` is a
/// verb), by the detector's code.
const NAMED_LANGUAGES: &[(&str, Lang)] = &[
    ("Arabic", Lang::Ara),
    ("Chinese", Lang::Cmn),
    ("Czech", Lang::Ces),
    ("Danish", Lang::Dan),
    ("Dutch", Lang::Nld),
    ("Finnish", Lang::Fin),
    ("French", Lang::Fra),
    ("German", Lang::Deu),
    ("Greek", Lang::Ell),
    ("Hebrew", Lang::Heb),
    ("Hungarian", Lang::Hun),
    ("Italian", Lang::Ita),
    ("Japanese", Lang::Jpn),
    ("Korean", Lang::Kor),
    ("Norwegian", Lang::Nob),
    ("Polish", Lang::Pol),
    ("Portuguese", Lang::Por),
    ("Romanian", Lang::Ron),
    ("Russian", Lang::Rus),
    ("Spanish", Lang::Spa),
    ("Swedish", Lang::Swe),
    ("Turkish", Lang::Tur),
    ("Ukrainian", Lang::Ukr),
];

/// The one language other than English a question names (`According to the Polish edition
/// of the manual…`, `the German slide deck`), if it names exactly one: what it asks for is
/// written in it.
pub fn named_language(question: &str) -> Option<Lang> {
    let mut named = question
        .split(|c: char| !c.is_alphabetic())
        .filter_map(|w| NAMED_LANGUAGES.iter().find(|(name, _)| *name == w))
        .map(|&(_, lang)| lang);
    let first = named.next()?;
    named.all(|l| l == first).then_some(first)
}

/// The share of `text`'s whitespace-separated tokens that are words: two letters or more
/// (apostrophes and hyphens inside), punctuation around them allowed.
fn prose_share(text: &str) -> f64 {
    let (mut tokens, mut words) = (0usize, 0usize);
    for t in text.split_whitespace() {
        tokens += 1;
        let t = t.trim_matches(|c: char| c.is_ascii_punctuation() || "«»¿¡“”‘’".contains(c));
        words += usize::from(
            t.chars().count() >= 2 && t.chars().all(|c| c.is_alphabetic() || "'’-".contains(c)),
        );
    }
    if tokens == 0 {
        0.0
    } else {
        words as f64 / tokens as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_names_one_language_or_none() {
        use whatlang::Lang;
        assert_eq!(
            named_language("According to the Polish edition, how are scripts indented?"),
            Some(Lang::Pol)
        );
        assert_eq!(
            named_language("Which English edition was the Spanish translation made from?"),
            Some(Lang::Spa)
        );
        assert_eq!(named_language("the German slide deck"), Some(Lang::Deu));
        // A verb, two languages, none.
        assert_eq!(named_language("How do I polish the brass fittings?"), None);
        assert_eq!(
            named_language("Compare the German and the French editions"),
            None
        );
        assert_eq!(named_language("How do I reset the pump?"), None);
        assert_eq!(
            other_language(
                "Skrypty powinny być wcięte spacjami, a nie tabulatorami, i każda zmienna \
                 używana przez live-build otrzymuje przedrostek LB_ w całym kodzie."
            ),
            Some(Lang::Pol)
        );
        assert_eq!(
            other_language("Scripts should be indented with spaces and not with tabs at all."),
            None
        );
    }

    #[test]
    fn a_few_chunks_in_another_language_do_not_make_a_document_in_it() {
        let german = "Gebrauchte Batterien und Akkus gehören in die rote Kiste im Labor, \
                      niemals in den Restmüll. Die Kiste wird jeden ersten Montag abgeholt.";
        let english = "Used batteries go into the red box in the laboratory, never into the \
                       general waste. The box is collected on the first Monday of the month.";
        assert_eq!(other_language_chunks(&[german, english]), [true, false]);
        assert_eq!(
            other_language_chunks(&[german, english, english, english, english]),
            [false; 5]
        );
        assert!(other_language_chunks(&[]).is_empty());
    }

    #[test]
    fn the_english_words_are_sorted_for_the_search() {
        assert!(ENGLISH_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn other_languages_are_told_from_english_prose_code_and_numbers() {
        let other = [
            "Gebrauchte Batterien und Akkus gehören in die rote Kiste im Labor, niemals in den \
             Restmüll. Die Kiste wird jeden ersten Montag im Monat abgeholt.",
            "Beste buren, vanaf maandag 4 mei wordt de parkeerplaats bij de haven opnieuw \
             geasfalteerd. De werkzaamheden duren ongeveer drie weken. In die periode kunt u \
             gratis parkeren op het terrein achter de visafslag.",
            "Pour quelle version de Debian le manuel Live Systems a-t-il été rédigé ? Il décrit \
             la construction d'un système autonome.",
            "ライブシステムとは、一般的に、CD-ROM や USB メモリのようなリムーバブルメディアから\
             コンピュータを起動するオペレーティングシステムを意味します。",
            "System live oznacza zazwyczaj system operacyjny uruchamiany na komputerze z \
             nośnika wymiennego, takiego jak płyta CD lub pamięć USB.",
        ];
        for t in other {
            assert!(in_other_language(t), "{t}");
        }
        let english = [
            "Used batteries and accumulators go into the red box in the laboratory, never into \
             the general waste. The box is collected on the first Monday of the month.",
            "fn main() { let x = vec![1, 2, 3]; println!(\"{:?}\", x.iter().sum::<i32>()); }",
            "1970 2.03 4.53\n1971 1.92 4.54\n1972 1.72 4.12\n1973 1.54 4.07",
            "glp_intopt mip_gap tm_lim presolve msg_lev",
            "\\SetKwInput{Res}{R´esultat} \\SetKwInput{Entree}{Entr´ees} \\SetKwInput{Sortie}{Sorties} \
             \\SetKw{KwA}{`a} \\SetKw{Retour}{retourner} \\SetKwBlock{Deb}{d´ebut}{fin}",
            "curlyspace (option) . . . . . . 13, 50 curlystyle (option) . . . . . . 7, 14, 54 \
             \\DeclareOption . . . . . 631, 633 \\define@key 3",
            "",
        ];
        for t in english {
            assert!(!in_other_language(t), "{t}");
        }
    }
}
