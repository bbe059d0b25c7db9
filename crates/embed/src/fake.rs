//! A model for unit tests: a word-level tokenizer (one token per word or punctuation run)
//! and an embedder that hashes words into the vector, so texts sharing words are near and
//! the pipeline, the tools and the uploads can be tested without the real model. Integration
//! tests keep the real one.

use std::sync::Arc;

use super::{Chunker, Embedder};
use crate::error::Result;
use crate::ChunkingConfig;

/// Vectors as long as the real model's, so a store made in a test is like a real one.
pub const FAKE_DIMENSIONS: usize = 384;

/// A tokenizer without vocabulary: every word (and every run of punctuation) is one token.
pub fn fake_tokenizer() -> tokenizers::Tokenizer {
    const SPEC: &str = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
        "normalizer":null,"pre_tokenizer":{"type":"Whitespace"},"post_processor":null,
        "decoder":null,"model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;
    match SPEC.parse() {
        Ok(t) => t,
        #[allow(clippy::panic)] // A constant: fails every test at once or never.
        Err(e) => panic!("the fake tokenizer's spec: {e}"),
    }
}

/// The chunker of the fake model, with `config`'s sizes.
pub fn fake_chunker(config: &ChunkingConfig) -> Arc<Chunker> {
    Arc::new(Chunker::new(
        fake_tokenizer(),
        config,
        super::MAX_SEQ_TOKENS,
    ))
}

/// Deterministic vectors from the words of a text: each lower-cased word adds 1 to a
/// dimension chosen by its hash; L2-normalised. Counts its calls.
#[derive(Default)]
pub struct FakeEmbedder {
    pub calls: std::sync::atomic::AtomicUsize,
}

impl FakeEmbedder {
    fn vector(text: &str) -> Vec<f32> {
        let mut v = vec![0f32; FAKE_DIMENSIONS];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let [a, b, ..] = *blake3::hash(word.to_lowercase().as_bytes()).as_bytes();
            let i = usize::from(u16::from_le_bytes([a, b])) % FAKE_DIMENSIONS;
            if let Some(x) = v.get_mut(i) {
                *x += 1.0;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        } else if let Some(x) = v.first_mut() {
            *x = 1.0;
        }
        v
    }
}

impl Embedder for FakeEmbedder {
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(texts.iter().map(|t| Self::vector(t)).collect())
    }

    fn dimensions(&self) -> usize {
        FAKE_DIMENSIONS
    }

    fn max_tokens(&self) -> usize {
        super::MAX_SEQ_TOKENS
    }

    fn describe(&self) -> String {
        "the fake test model".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_sharing_words_are_near_and_each_word_is_a_token() {
        let e = FakeEmbedder::default();
        let v = e
            .embed(&["pump priming valve", "priming the pump valve", "tax law"])
            .unwrap();
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(dot(&v[0], &v[1]) > 0.8);
        assert!(dot(&v[0], &v[2]) < 0.3);
        assert!(v.iter().all(|x| x.len() == FAKE_DIMENSIONS));
        let c = fake_chunker(&ChunkingConfig::default());
        assert_eq!(c.count_tokens("Open the bleed screw, then fill."), 8);
    }
}
