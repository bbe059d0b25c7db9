//! Local text embedding with fastembed (all-MiniLM-L6-v2, int8, ONNX Runtime loaded at run
//! time). No network: the model and the runtime come from the folder that
//! `scripts/setup-models.py` provisions.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use crate::error::{Error, Result};

/// The folder name inside a models root.
pub const MODEL_NAME: &str = "all-minilm-l6-v2-int8";
/// The ONNX Runtime library file provisioned beside the model.
pub const ORT_LIBRARY: &str = "libonnxruntime.so.1.31.1";
/// Output dimension of the model.
pub const DIMENSIONS: usize = 384;
/// The model's input window in tokens, special tokens included (`max_seq_length`).
pub const MAX_SEQ_TOKENS: usize = 256;

const REQUIRED_FILES: &[&str] = &[
    "model.onnx",
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
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(".models"));
    roots
}

fn is_complete(dir: &Path) -> bool {
    REQUIRED_FILES.iter().all(|f| dir.join(f).is_file())
}

/// The provisioned model folder: `explicit` if given (it must be complete), else the first
/// complete candidate of [`model_search_path`].
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

/// ONNX Runtime allows one environment per process, and ort panics when the library is
/// missing: load it once, from an explicit path, and keep the outcome.
fn ort_environment(library: &Path) -> Result<ort::environment::Environment, String> {
    static ENV: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        if !library.is_file() {
            return Err(format!("{} not found", library.display()));
        }
        ort::init_from(library)
            .map_err(|e| e.to_string())?
            .with_name("ingest")
            .build()
            .map_err(|e| e.to_string())
    })
    .clone()
}

/// A loaded embedding model. `embed` takes `&self` and is safe to call from any thread; calls
/// are serialized, because one ONNX session already uses every core.
pub struct Embedder {
    model: Mutex<TextEmbedding>,
    tokenizer: tokenizers::Tokenizer,
    dir: PathBuf,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("dir", &self.dir).finish()
    }
}

impl Embedder {
    /// Load the model from `dir` (a folder as provisioned by `scripts/setup-models.py`).
    pub fn load(dir: &Path) -> Result<Self> {
        let err = |reason: String| Error::ModelLoad {
            dir: dir.to_path_buf(),
            reason,
        };
        let read =
            |name: &str| std::fs::read(dir.join(name)).map_err(|e| err(format!("{name}: {e}")));
        let environment = ort_environment(&dir.join(ORT_LIBRARY)).map_err(err)?;
        let files = TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        };
        let mut model = UserDefinedEmbeddingModel::new(read("model.onnx")?, files);
        // all-MiniLM-L6-v2 is trained with mean pooling; fastembed's default here is CLS.
        model.pooling = Some(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(MAX_SEQ_TOKENS);
        let embedding = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| err(e.to_string()))?;
        let mut tokenizer = embedding.tokenizer.clone();
        // The chunker needs true lengths: no truncation, no padding.
        tokenizer
            .with_truncation(None)
            .map_err(|e| err(e.to_string()))?;
        tokenizer.with_padding(None);
        Ok(Embedder {
            model: Mutex::new(embedding),
            tokenizer,
            dir: dir.to_path_buf(),
        })
    }

    /// The model's tokenizer, untruncated, for token-aware chunking.
    pub fn tokenizer(&self) -> &tokenizers::Tokenizer {
        &self.tokenizer
    }

    /// Embed `texts` into L2-normalised 384-dimensional vectors. Blocks while another thread
    /// is embedding.
    pub fn embed(&self, texts: &[&str], batch: usize) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut model = self
            .model
            .lock()
            .map_err(|_| Error::Embed("embedding model lock poisoned".into()))?;
        let vectors = model
            .embed(texts, Some(batch))
            .map_err(|e| Error::Embed(e.to_string()))?;
        if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != DIMENSIONS) {
            return Err(Error::Embed(format!(
                "model returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }
}
