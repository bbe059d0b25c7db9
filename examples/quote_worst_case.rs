//! `verify_quote`'s worst cases (issue 56; a measurement, not a test): a 2 000-word quote
//! (the most words 4 000 chars hold) against a text of 16 M chars (the largest file a quote
//! is checked in), for each shape of text that makes the search work hardest:
//!
//! ```sh
//! cargo run --release --locked --example quote_worst_case [-- SHAPE]
//! ```
//!
//! SHAPE (default: all): `long-words` (words of 1 000 chars, none in the quote: a window of
//! the quote's word count is 2 M chars), `quote-letters` (the quote's own one-letter words in
//! another order: every window shares all its words with the quote), `found-late` (the quote
//! itself at the very end of prose). Prints the seconds each search took.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::time::Instant;

const TEXT_CHARS: usize = 16_000_000;
const QUOTE_WORDS: usize = 2_000;

/// A shape of text: its name, and how to make it.
type Shape = (&'static str, Box<dyn Fn() -> String>);

fn letters(n: usize, seed: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let c = (b'a' + ((i * 7 + seed) % 26) as u8) as char;
            c.to_string()
        })
        .collect()
}

fn main() {
    let only = std::env::args().nth(1);
    let quote = letters(QUOTE_WORDS, 0).join(" ");
    assert!(quote.chars().count() <= ingest::tools::MAX_QUOTE_CHARS);
    let shapes: Vec<Shape> = vec![
        (
            "long-words",
            Box::new(|| {
                let word = "x".repeat(999);
                let mut t = String::with_capacity(TEXT_CHARS);
                while t.len() + 1000 <= TEXT_CHARS {
                    t.push_str(&word);
                    t.push(' ');
                }
                t
            }),
        ),
        (
            "quote-letters",
            Box::new(|| {
                let mut t = String::with_capacity(TEXT_CHARS);
                let mut i = 0usize;
                while t.len() + 2 <= TEXT_CHARS {
                    t.push((b'a' + ((i * 11 + i / 26) % 26) as u8) as char);
                    t.push(' ');
                    i += 1;
                }
                t
            }),
        ),
        (
            "found-late",
            Box::new(move || {
                let prose = "the keeper logs gusts of forty knots on thursday near the pier ";
                let mut t = String::with_capacity(TEXT_CHARS);
                while t.len() + prose.len() + 4000 <= TEXT_CHARS {
                    t.push_str(prose);
                }
                t.push_str(&letters(QUOTE_WORDS, 0).join(" "));
                t
            }),
        ),
    ];
    for (name, make) in shapes {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let text = make();
        let started = Instant::now();
        let answer = ingest::testing::quote_search(&text, &quote);
        println!(
            "{name}: {} chars of text, a quote of {QUOTE_WORDS} words ({} chars): {answer:?}, \
             {:.2} s",
            text.chars().count(),
            quote.chars().count(),
            started.elapsed().as_secs_f64()
        );
    }
}
