//! Identical chunk texts are embedded once a run: the embed stage remembers the vectors of
//! the texts it embedded (by a hash of what the model is given: the chunk's contextual
//! header and its text), and a chunk whose text comes again — a boilerplate page, a footer
//! repeated in every section, the same paragraph in two versions of a document — takes the
//! vector it had instead of a model run. The vectors are the same as the model would give
//! (the model is deterministic for one text), so nothing found changes.
//!
//! Bounded: at most [`MEMO_BYTES`] of vectors, the least recently used forgotten first, so a
//! run that lasts (an upload queue) keeps what repeats lately.

use hashlink::LruCache;

/// The bytes of vectors the memo holds at most (16 MiB: 10 922 vectors of 384 dimensions).
pub(super) const MEMO_BYTES: usize = 16 << 20;

/// What identifies an embedding text: its BLAKE3 hash.
pub(super) type TextKey = [u8; 32];

/// The key of `text`.
pub(super) fn key_of(text: &str) -> TextKey {
    *blake3::hash(text.as_bytes()).as_bytes()
}

/// The vectors of texts embedded before in this run.
pub(super) struct VectorMemo {
    /// Empty until the first vector tells the dimensions (and so the capacity).
    vectors: Option<LruCache<TextKey, Vec<f32>>>,
}

impl VectorMemo {
    pub(super) fn new() -> Self {
        VectorMemo { vectors: None }
    }

    /// The vector `key`'s text was given, if it is remembered.
    pub(super) fn get(&mut self, key: &TextKey) -> Option<Vec<f32>> {
        self.vectors.as_mut()?.get(key).cloned()
    }

    /// Remember `vector` for `key`'s text, forgetting the least recently used beyond the
    /// bound.
    pub(super) fn put(&mut self, key: TextKey, vector: &[f32]) {
        if vector.is_empty() {
            return;
        }
        let vectors = self.vectors.get_or_insert_with(|| {
            let capacity = (MEMO_BYTES / std::mem::size_of_val(vector)).max(1);
            LruCache::new(capacity)
        });
        vectors.insert(key, vector.to_vec());
    }

    /// How many vectors it holds.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.vectors.as_ref().map_or(0, |v| v.len())
    }
}

/// For texts in order, which to embed and where each one's vector comes from: the texts to
/// give the model (each distinct text once, none the memo holds), and per text its source.
pub(super) struct Plan {
    /// Indices (into the texts) of the ones the model embeds.
    pub(super) to_embed: Vec<usize>,
    /// Per text: where its vector comes from.
    pub(super) sources: Vec<Source>,
}

/// Where one text's vector comes from.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Source {
    /// The model's answer for `to_embed[i]`.
    Embedded(usize),
    /// The memo's, from an earlier batch.
    Remembered(Vec<f32>),
}

impl Plan {
    /// The plan for `keys` against what `memo` holds.
    pub(super) fn new(keys: &[TextKey], memo: &mut VectorMemo) -> Self {
        let mut to_embed = Vec::new();
        let mut first: std::collections::HashMap<TextKey, usize> = Default::default();
        let sources = keys
            .iter()
            .enumerate()
            .map(|(i, key)| {
                if let Some(v) = memo.get(key) {
                    return Source::Remembered(v);
                }
                let slot = *first.entry(*key).or_insert_with(|| {
                    to_embed.push(i);
                    to_embed.len() - 1
                });
                Source::Embedded(slot)
            })
            .collect();
        Plan { to_embed, sources }
    }

    /// How many texts take a vector without a model run of their own.
    pub(super) fn reused(&self) -> usize {
        self.sources.len() - self.to_embed.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_text_is_embedded_once_and_a_remembered_one_not_again() {
        let mut memo = VectorMemo::new();
        let keys: Vec<TextKey> = ["a", "b", "a", "c", "b"]
            .iter()
            .map(|t| key_of(t))
            .collect();
        let plan = Plan::new(&keys, &mut memo);
        assert_eq!(plan.to_embed, vec![0, 1, 3]);
        assert_eq!(
            plan.sources,
            vec![
                Source::Embedded(0),
                Source::Embedded(1),
                Source::Embedded(0),
                Source::Embedded(2),
                Source::Embedded(1)
            ]
        );
        assert_eq!(plan.reused(), 2);
        memo.put(key_of("a"), &[1.0, 2.0]);
        let plan = Plan::new(&[key_of("a"), key_of("d")], &mut memo);
        assert_eq!(plan.to_embed, vec![1]);
        assert_eq!(plan.sources[0], Source::Remembered(vec![1.0, 2.0]));
        assert_eq!(plan.reused(), 1);
    }

    #[test]
    fn the_memo_holds_at_most_its_bytes_of_vectors() {
        let mut memo = VectorMemo::new();
        let dims = 1024;
        let capacity = MEMO_BYTES / (dims * 4);
        for i in 0..capacity + 10 {
            memo.put(key_of(&i.to_string()), &vec![0.5; dims]);
        }
        assert_eq!(memo.len(), capacity);
        // The least recently used went first.
        assert!(memo.get(&key_of("0")).is_none());
        assert!(memo.get(&key_of(&(capacity + 9).to_string())).is_some());
    }
}
