//! Where an object's text is on its page: the boxes of its lines.
//!
//! A text engine gives boxes per glyph (PDFium) or per word (tesseract); the object's text is
//! what the pipeline made of those glyphs (lines tidied, words hyphenated across a line break
//! joined). The two are tied by the characters both keep in the same order: everything but
//! white space, hyphens and control codes (*counted* characters). An engine's words are runs
//! of counted characters with a box each; a line of the final text covers a run of counted
//! characters, and its box is the union of the boxes of the words it takes characters from.
//! So a joined word's line box reaches down to the next printed line, where its tail was.

use serde::{Deserialize, Serialize};

/// Where an object is on its page or picture (opt-in in the read tools: the lines of a page
/// cost ~50 bytes each).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Positions {
    /// `pt` (PDF points, 1/72 inch) or `px` (pixels of a picture).
    pub unit: String,
    /// Where `(0, 0)` is: `bottom-left` (PDF user space: `y` grows upwards) or `top-left`
    /// (a picture: `y` grows downwards). Boxes are `[x0, y0, x1, y1]` with `x0 <= x1` and
    /// `y0 <= y1` in that system.
    pub origin: String,
    /// Width and height of the page or picture, in `unit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<[f64; 2]>,
    /// The whole object: the union of its lines, or an image's own box.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "box")]
    pub bbox: Option<[f64; 4]>,
    /// The object's lines with text, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineBox>,
}

/// One line of an object's text and its box.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineBox {
    /// Where the line starts in the object's text, in chars (Unicode scalar values).
    pub start: u32,
    /// Where it ends (exclusive, before the line break), in chars.
    pub end: u32,
    #[serde(rename = "box")]
    pub bbox: [f64; 4],
}

/// PDF points, origin at the page's bottom-left corner.
pub(crate) const PDF_POINTS: (&str, &str) = ("pt", "bottom-left");
/// Pixels, origin at the picture's top-left corner.
pub(crate) const PIXELS: (&str, &str) = ("px", "top-left");

/// Whether `c` is a character both an engine's boxes and the final text keep, in order.
pub(crate) fn counted(c: char) -> bool {
    !(c.is_whitespace() || c.is_control() || matches!(c, '-' | '\u{2010}' | '\u{ad}'))
}

/// A run of counted characters an engine placed, and its box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Word {
    /// Counted characters in the run.
    pub counted: u32,
    /// `None` when the engine gave none of them a box.
    pub bbox: Option<[f32; 4]>,
}

/// Rounded to hundredths of a unit: boxes are JSON, and a 0.01 pt error is invisible.
pub(crate) fn round_box(b: [f32; 4]) -> [f64; 4] {
    b.map(round)
}

fn round(v: f32) -> f64 {
    (f64::from(v) * 100.0).round() / 100.0
}

pub(crate) fn union(a: Option<[f32; 4]>, b: [f32; 4]) -> [f32; 4] {
    match a {
        None => b,
        Some(a) => [
            a[0].min(b[0]),
            a[1].min(b[1]),
            a[2].max(b[2]),
            a[3].max(b[3]),
        ],
    }
}

/// Gives the lines of consecutive texts (a page's objects, in order) the boxes of the words
/// they hold. The texts must keep the words' counted characters in order (see the module).
pub(crate) struct Aligner<'a> {
    words: &'a [Word],
    /// The word holding the next counted character, and how many of its characters came
    /// before it.
    word: usize,
    into_word: u32,
}

impl<'a> Aligner<'a> {
    pub(crate) fn new(words: &'a [Word]) -> Self {
        Aligner {
            words,
            word: 0,
            into_word: 0,
        }
    }

    /// The box of the next `n` counted characters, `None` past the words' end.
    fn take(&mut self, mut n: u32) -> Option<[f32; 4]> {
        let mut out = None;
        while n > 0 {
            let w = self.words.get(self.word)?;
            let here = (w.counted - self.into_word).min(n);
            if let (true, Some(b)) = (here > 0, w.bbox) {
                out = Some(union(out, b));
            }
            n -= here;
            self.into_word += here;
            if self.into_word >= w.counted {
                self.word += 1;
                self.into_word = 0;
            }
        }
        out
    }

    /// The boxes of the lines of `text` that hold counted characters; the next call goes on
    /// from where this text ended.
    pub(crate) fn lines(&mut self, text: &str) -> Vec<LineBox> {
        let mut out = Vec::new();
        let mut at = 0u32;
        for line in text.split('\n') {
            let chars = u32::try_from(line.chars().count()).unwrap_or(u32::MAX);
            let n = u32::try_from(line.chars().filter(|c| counted(*c)).count()).unwrap_or(0);
            if let Some(bbox) = self.take(n) {
                // Leading and trailing white space is not part of the line's place.
                let lead = line.chars().take_while(|c| c.is_whitespace()).count() as u32;
                let trail = line.chars().rev().take_while(|c| c.is_whitespace()).count() as u32;
                out.push(LineBox {
                    start: at + lead,
                    end: (at + chars).saturating_sub(trail).max(at + lead),
                    bbox: round_box(bbox),
                });
            }
            at = at.saturating_add(chars).saturating_add(1);
        }
        out
    }
}

/// The positions of an object whose lines are `lines`, in `system` ([`PDF_POINTS`] or
/// [`PIXELS`]).
pub(crate) fn of_lines(
    lines: Vec<LineBox>,
    system: (&str, &str),
    page_size: Option<[f32; 2]>,
) -> Option<Positions> {
    if lines.is_empty() {
        return None;
    }
    let bbox = lines.iter().fold(None, |b: Option<[f64; 4]>, l| {
        Some(match b {
            None => l.bbox,
            Some(b) => [
                b[0].min(l.bbox[0]),
                b[1].min(l.bbox[1]),
                b[2].max(l.bbox[2]),
                b[3].max(l.bbox[3]),
            ],
        })
    });
    Some(Positions {
        unit: system.0.into(),
        origin: system.1.into(),
        page_size: page_size.map(|s| s.map(round)),
        bbox,
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(counted: u32, x: f32, y: f32) -> Word {
        Word {
            counted,
            bbox: Some([x, y, x + 10.0, y + 5.0]),
        }
    }

    #[test]
    fn lines_take_the_boxes_of_their_words_across_joins_and_pieces() {
        // Printed: "portabil-" / "ity; and" / "more", one word box each run.
        let words = [
            word(8, 0.0, 100.0), // portabil
            word(4, 0.0, 90.0),  // ity;
            word(3, 20.0, 90.0), // and
            word(4, 0.0, 80.0),  // more
        ];
        let mut a = Aligner::new(&words);
        // The join moved "ity;" up; the object is cut after "and".
        let first = a.lines("portability;\n  and \n");
        assert_eq!(
            first,
            vec![
                LineBox {
                    start: 0,
                    end: 12,
                    bbox: [0.0, 90.0, 10.0, 105.0]
                },
                LineBox {
                    start: 15,
                    end: 18,
                    bbox: [20.0, 90.0, 30.0, 95.0]
                },
            ]
        );
        let second = a.lines("more");
        assert_eq!(
            second,
            vec![LineBox {
                start: 0,
                end: 4,
                bbox: [0.0, 80.0, 10.0, 85.0]
            }]
        );
        // Past the words' end: no box rather than a wrong one.
        assert!(a.lines("extra").is_empty());
    }

    #[test]
    fn hyphens_white_space_and_controls_are_not_counted() {
        assert!(counted('a') && counted(';') && counted('ﬁ'));
        assert!(!counted('-') && !counted('\u{ad}') && !counted(' ') && !counted('\u{2}'));
    }
}
