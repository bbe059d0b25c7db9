//! Embedding: the [`Embedder`] contract the pipeline and search use, where the provisioned
//! model lives, its tokenizer, and the token-aware [`Chunker`](chunk::Chunker) that cuts text
//! to the model's window.
//!
//! - `fastembed.rs`: [`FastEmbedder`], the fastembed/ONNX Runtime implementation
//!   (all-MiniLM-L6-v2, int8). No network: the model and the runtime come from the folder that
//!   `scripts/setup-models.py` provisions.
//! - `openvino.rs`: [`OpenVinoEmbedder`], the default variant: the fp32 export run by
//!   OpenVINO in bf16 (AMX) where the CPU has it, through OpenVINO's C API loaded at run time.
//! - `variant.rs`: [`ModelVariant`], which of the provisioned ONNX files runs, and the record
//!   of it in a data directory (an index is searched with the model that embedded it).
//! - `chunk.rs`: [`Chunker`](chunk::Chunker), built once from [`load_tokenizer`] and shared;
//!   it does not need the ONNX model, so chunking never waits for the model to load.

// The base layer, under the names the modules here have always used.
pub(crate) use ingest_base::error;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

pub mod card;
pub mod chunk;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
mod fastembed;
pub mod junk;
pub mod language;
mod openvino;
pub mod recipe;
mod variant;

pub use self::chunk::{Chunk, ChunkKind, Chunker, ChunkingConfig, TooManyChunks, WINDOW_BYTES};
pub use self::fastembed::FastEmbedder;
pub use self::openvino::OpenVinoEmbedder;
pub use self::recipe::Recipe;
pub use self::variant::ModelVariant;

/// Turns texts into vectors: the seam behind which a model sits. The pipeline's embed stage
/// and `ingest::Ingestor::search` call it; another model (a faster or multilingual one, a
/// remote service) plugs in by implementing it.
///
/// Implementations are shared between threads (`&self`); they may serialise calls inside.
pub trait Embedder: Send + Sync {
    /// One vector per text, in order, each [`Embedder::dimensions`] long (L2-normalised, so a
    /// dot product is the cosine similarity). An empty slice gives an empty result. Texts
    /// longer than [`Embedder::max_tokens`] are truncated by the model: the
    /// [`Chunker`](chunk::Chunker) keeps them shorter.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// The vector of a search query: [`Embedder::embed`] of it, unless the model embeds
    /// queries differently from passages (E5's `query: ` prefix).
    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed(&[query])?
            .pop()
            .ok_or_else(|| Error::Embed("no vector for the query".into()))
    }
    /// Length of every vector [`Embedder::embed`] returns.
    fn dimensions(&self) -> usize;
    /// The model's input window in tokens, special tokens included.
    fn max_tokens(&self) -> usize;
    /// Which model runs where, for the run summary: variant, runtime and the precision it
    /// computes in (`bf16 on OpenVINO, computing in bf16 (AMX)`).
    fn describe(&self) -> String {
        String::new()
    }
}

/// The [`Embedder`] of `variant` from the provisioned folder `dir`, running `batch` texts at a
/// time: [`OpenVinoEmbedder`] for [`ModelVariant::Bf16`], [`FastEmbedder`] (ONNX Runtime) for
/// the others.
pub fn load_embedder(
    dir: &Path,
    variant: ModelVariant,
    batch: usize,
) -> Result<std::sync::Arc<dyn Embedder>> {
    Ok(if variant.on_openvino() {
        std::sync::Arc::new(OpenVinoEmbedder::load_variant(
            dir,
            variant,
            batch,
            openvino::Precision::for_this_cpu(),
        )?)
    } else {
        std::sync::Arc::new(FastEmbedder::load(dir, variant, batch)?)
    })
}

/// Embeds `texts` through `run`, longest first, and gives the vectors back in the callers'
/// order. Every model run pads its texts to the longest one, so texts of similar length go
/// together; `run` gets them sorted and must return one vector per text, in that order.
pub fn embed_longest_first(
    texts: &[&str],
    run: impl FnOnce(&[&str]) -> Result<Vec<Vec<f32>>>,
) -> Result<Vec<Vec<f32>>> {
    if texts.is_empty() {
        return Ok(Vec::new());
    }
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(texts.get(i).map_or(0, |t| t.len())));
    let sorted: Vec<&str> = order
        .iter()
        .filter_map(|&i| texts.get(i).copied())
        .collect();
    let vectors = run(&sorted)?;
    if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != DIMENSIONS) {
        return Err(Error::Embed(format!(
            "model returned {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    let mut out = vec![Vec::new(); texts.len()];
    for (&i, v) in order.iter().zip(vectors) {
        if let Some(slot) = out.get_mut(i) {
            *slot = v;
        }
    }
    Ok(out)
}

/// The folder name inside a models root.
pub const MODEL_NAME: &str = "all-minilm-l6-v2-int8";

/// The ONNX Runtime library file provisioned beside the model.
pub const ORT_LIBRARY: &str = "libonnxruntime.so.1.31.1";
/// PDFium, provisioned beside the model (optional: PDF text falls back to pdf-extract).
pub const PDFIUM_LIBRARY: &str = "libpdfium.so";
/// Output dimension of the model.
pub const DIMENSIONS: usize = 384;
/// The model's input window in tokens, special tokens included (`max_seq_length`).
pub const MAX_SEQ_TOKENS: usize = 256;

/// Files every variant needs, besides its own ONNX file.
const REQUIRED_FILES: &[&str] = &[
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    ORT_LIBRARY,
];

/// Where to look for the model, in order: `$INGEST_MODEL_DIR`, `./.models`, `.models` beside
/// the executable or any of its parent folders, and the source tree the binary was built from.
pub fn model_search_path() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(dir) = std::env::var_os("INGEST_MODEL_DIR") {
        roots.push(PathBuf::from(dir));
    }
    if let Ok(cwd) = std::env::current_dir() {
        roots.push(cwd.join(".models"));
    }
    if let Ok(exe) = std::env::current_exe() {
        roots.extend(exe.ancestors().skip(1).map(|a| a.join(".models")));
    }
    // The source tree's (this crate is `crates/embed/` in it).
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.models"));
    roots
}

fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
        && ModelVariant::ALL
            .iter()
            .any(|v| dir.join(v.file_name()).is_file())
}

/// The provisioned model folder: `explicit` if given (it must be complete), else the first
/// complete candidate of `model_search_path`. Complete means the tokenizer files, the ONNX
/// Runtime library and at least one [`ModelVariant`]'s file; whether the variant a run wants
/// is there is checked when it loads ([`FastEmbedder::load`]).
pub fn find_model_dir(explicit: Option<&Path>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match explicit {
        Some(d) => vec![d.to_path_buf(), d.join(MODEL_NAME)],
        None => model_search_path()
            .into_iter()
            .flat_map(|root| [root.join(MODEL_NAME), root])
            .collect(),
    };
    candidates
        .iter()
        .find(|d| is_complete(d))
        .cloned()
        .ok_or_else(|| Error::ModelMissing {
            searched: match explicit {
                Some(d) => d.display().to_string(),
                None => {
                    "$INGEST_MODEL_DIR, ./.models, .models beside the binary and the source tree"
                        .to_string()
                }
            },
        })
}

/// PDFium in the model folder ([`find_model_dir`] of `explicit`), if it is provisioned there;
/// absolute, since extraction workers load it.
pub fn find_pdfium(explicit: Option<&Path>) -> Option<PathBuf> {
    let lib = find_model_dir(explicit).ok()?.join(PDFIUM_LIBRARY);
    let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
    lib.is_file().then_some(lib)
}

/// The model's tokenizer from `model_dir` (as [`find_model_dir`] returns it), configured as
/// [`FastEmbedder`] configures its own (`tokenizer.json` plus the special tokens of
/// `special_tokens_map.json`), but without truncation or padding: the chunker needs true
/// lengths. Loading it takes milliseconds and no ONNX Runtime, so chunking can start while
/// the model still loads; load it once and share it (it is `Send + Sync`).
pub fn load_tokenizer(model_dir: &Path) -> Result<tokenizers::Tokenizer> {
    let err = |reason: String| Error::ModelLoad {
        dir: model_dir.to_path_buf(),
        reason,
    };
    let mut tokenizer = tokenizers::Tokenizer::from_file(model_dir.join("tokenizer.json"))
        .map_err(|e| err(format!("tokenizer.json: {e}")))?;
    let map = std::fs::read(model_dir.join("special_tokens_map.json"))
        .map_err(|e| err(format!("special_tokens_map.json: {e}")))?;
    let map: serde_json::Value =
        serde_json::from_slice(&map).map_err(|e| err(format!("special_tokens_map.json: {e}")))?;
    // As fastembed does (`common::load_tokenizer`): every special token named in the map, as
    // a string or as a full description.
    let specials = map
        .as_object()
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(special_token);
    tokenizer
        .add_special_tokens(specials)
        .map_err(|e| err(e.to_string()))?;
    tokenizer
        .with_truncation(None)
        .map_err(|e| err(e.to_string()))?;
    tokenizer.with_padding(None);
    Ok(tokenizer)
}

/// One entry of `special_tokens_map.json`, read the way fastembed reads it.
fn special_token(value: &serde_json::Value) -> Option<tokenizers::AddedToken> {
    if let Some(content) = value.as_str() {
        return Some(tokenizers::AddedToken {
            content: content.into(),
            special: true,
            ..Default::default()
        });
    }
    let field = |name: &str| value.get(name).and_then(serde_json::Value::as_bool);
    Some(tokenizers::AddedToken {
        content: value.get("content")?.as_str()?.into(),
        special: true,
        single_word: field("single_word")?,
        lstrip: field("lstrip")?,
        rstrip: field("rstrip")?,
        normalized: field("normalized")?,
    })
}
