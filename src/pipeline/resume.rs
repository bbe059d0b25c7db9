//! Resuming a file whose embedding was interrupted: the vectors of its chunks embedded so far
//! are kept beside the index, checkpointed after every batch, so the next run embeds only the
//! rest of it instead of starting the file from zero.
//!
//! `partial/<content hash>.vec` in the data directory: a header line
//! (`{"model": NAME, "dims": N}`) and then, chunk after chunk from the first, the blake3 of the
//! chunk's embedding text (8 bytes) and its vector (N little-endian f32). A vector is used
//! again only for a chunk at the same place whose embedding text has that hash, with the same
//! model, so a file under another name (its title and card differ) or another recipe embeds
//! what changed. A file is removed once its content is stored, and any left older than
//! [`MAX_AGE`] when a run starts (a file that never came back). What a stopped run had upserted
//! of a file it did not finish is deleted from the store (`store.rs`): the index holds no file
//! by halves.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::index::StoredChunk;

/// Files not touched for this long are deleted when a run starts.
const MAX_AGE: Duration = Duration::from_secs(7 * 24 * 3600);
/// The largest file read back (a 10 000-chunk file of 1 024-dimension vectors fits).
const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The checkpointed vectors of contents being embedded.
pub(super) struct VectorCheckpoints {
    dir: PathBuf,
    model: String,
    /// Chunks checkpointed so far per content (the files' lengths, in chunks).
    written: HashMap<String, usize>,
}

/// The hash that identifies a chunk's embedding text.
fn text_hash(chunk: &StoredChunk) -> [u8; 8] {
    let hash = blake3::hash(chunk.chunk.embedding_text().as_bytes());
    let mut out = [0u8; 8];
    out.copy_from_slice(hash.as_bytes().get(..8).unwrap_or(&[0; 8]));
    out
}

fn header(model: &str, dims: usize) -> String {
    format!("{}\n", serde_json::json!({ "model": model, "dims": dims }))
}

impl VectorCheckpoints {
    /// The checkpoints of `data_dir` for vectors of `model`; old files are swept.
    pub(super) fn open(data_dir: &Path, model: &str) -> Self {
        let dir = crate::DataDir::at(data_dir).partial();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let old = e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age > MAX_AGE);
                if old {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        VectorCheckpoints {
            dir,
            model: model.to_string(),
            written: HashMap::new(),
        }
    }

    fn path(&self, hash: &str) -> Option<PathBuf> {
        // Content hashes are hex; anything else never names a file.
        hash.chars()
            .all(|c| c.is_ascii_hexdigit())
            .then(|| self.dir.join(format!("{hash}.vec")))
    }

    /// Give the first chunks of content `hash` the vectors checkpointed for them, as far as
    /// they match; returns how many. Nothing is read past the first mismatch.
    pub(super) fn restore(&mut self, hash: &str, chunks: &mut [StoredChunk]) -> usize {
        let Some(path) = self.path(hash) else {
            return 0;
        };
        let Ok(bytes) =
            std::fs::File::open(&path).and_then(|f| crate::unpack::read_at_most(f, MAX_FILE_BYTES))
        else {
            return 0;
        };
        let Some(newline) = bytes.iter().position(|b| *b == b'\n') else {
            return 0;
        };
        let (head, body) = bytes.split_at(newline + 1);
        let Ok(head) = serde_json::from_slice::<serde_json::Value>(head) else {
            return 0;
        };
        let field = |key: &str| head.get(key).cloned().unwrap_or_default();
        let dims = field("dims").as_u64().unwrap_or(0) as usize;
        if field("model").as_str() != Some(self.model.as_str()) || dims == 0 {
            let _ = std::fs::remove_file(&path);
            return 0;
        }
        let record = 8 + dims * 4;
        let mut restored = 0;
        for (chunk, rec) in chunks.iter_mut().zip(body.chunks_exact(record)) {
            let (h, v) = rec.split_at(8);
            if h != text_hash(chunk) {
                break;
            }
            chunk.vector = v
                .chunks_exact(4)
                .filter_map(|f| <[u8; 4]>::try_from(f).ok().map(f32::from_le_bytes))
                .collect();
            restored += 1;
        }
        // From here on the file is rewritten from what matched.
        self.written.insert(hash.to_string(), 0);
        let _ = std::fs::remove_file(&path);
        if let Some(kept) = chunks.get(..restored).filter(|k| !k.is_empty()) {
            self.append(hash, kept);
        }
        restored
    }

    /// Checkpoint the vectors of `chunks`, the next chunks of content `hash` in order.
    pub(super) fn append(&mut self, hash: &str, chunks: &[StoredChunk]) {
        let Some(path) = self.path(hash) else { return };
        let Some(dims) = chunks.first().map(|c| c.vector.len()) else {
            return;
        };
        let written = self.written.entry(hash.to_string()).or_insert(0);
        let mut out = Vec::with_capacity(chunks.len() * (8 + dims * 4) + 64);
        if *written == 0 {
            out.extend_from_slice(header(&self.model, dims).as_bytes());
        }
        for c in chunks {
            if c.vector.len() != dims {
                return;
            }
            out.extend_from_slice(&text_hash(c));
            for f in &c.vector {
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        let result = crate::perms::create_dir(&self.dir).and_then(|()| {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| crate::error::Error::io(&path, e))?;
            f.write_all(&out)
                .map_err(|e| crate::error::Error::io(&path, e))
        });
        match result {
            Ok(()) => *written += chunks.len(),
            Err(e) => tracing::debug!("vector checkpoint: {e}"),
        }
    }

    /// Content `hash` is stored: its checkpoint goes.
    pub(super) fn done(&mut self, hash: &str) {
        if self.written.remove(hash).is_some() {
            if let Some(path) = self.path(hash) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}
