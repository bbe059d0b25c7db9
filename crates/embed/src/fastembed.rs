//! [`FastEmbedder`]: the [`Embedder`] backed by fastembed and ONNX Runtime (all-MiniLM-L6-v2,
//! int8, runtime library loaded at run time from the model folder).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use ::fastembed::{
    InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel,
};

use super::{Embedder, ModelVariant, DIMENSIONS, MAX_SEQ_TOKENS, ORT_LIBRARY};
use crate::error::{Error, Result};

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
pub struct FastEmbedder {
    model: Mutex<TextEmbedding>,
    batch: usize,
    dir: PathBuf,
    variant: ModelVariant,
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder")
            .field("dir", &self.dir)
            .field("variant", &self.variant)
            .field("batch", &self.batch)
            .finish()
    }
}

impl FastEmbedder {
    /// Load `variant` of the model from `dir` (a folder as provisioned by
    /// `scripts/setup-models.py`); [`Embedder::embed`] runs the model on up to `batch` texts at
    /// a time (at least 1).
    pub fn load(dir: &Path, variant: ModelVariant, batch: usize) -> Result<Self> {
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
        if !dir.join(variant.file_name()).is_file() {
            return Err(err(format!(
                "{} (model variant {variant}) is missing: run `make models` (scripts/setup-models.py)",
                variant.file_name()
            )));
        }
        let mut model = UserDefinedEmbeddingModel::new(read(variant.file_name())?, files);
        // all-MiniLM-L6-v2 is trained with mean pooling; fastembed's default here is CLS.
        model.pooling = Some(Pooling::Mean);
        let options = InitOptionsUserDefined::new()
            .with_environment(environment)
            .with_max_length(MAX_SEQ_TOKENS);
        let embedding = TextEmbedding::try_new_from_user_defined(model, options)
            .map_err(|e| err(e.to_string()))?;
        Ok(FastEmbedder {
            model: Mutex::new(embedding),
            batch: batch.max(1),
            dir: dir.to_path_buf(),
            variant,
        })
    }
}

impl Embedder for FastEmbedder {
    /// L2-normalised 384-dimensional vectors, `batch` texts of similar length per model run
    /// (padding costs as much as text). Blocks while another thread is embedding.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        super::embed_longest_first(texts, |sorted| {
            let mut model = self
                .model
                .lock()
                .map_err(|_| Error::Embed("embedding model lock poisoned".into()))?;
            model
                .embed(sorted, Some(self.batch))
                .map_err(|e| Error::Embed(e.to_string()))
        })
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn max_tokens(&self) -> usize {
        MAX_SEQ_TOKENS
    }

    fn describe(&self) -> String {
        format!("{} on ONNX Runtime", self.variant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunker's tokenizer, loaded without the model, counts exactly as the model's.
    #[test]
    fn load_tokenizer_counts_tokens_as_the_model_does() {
        let dir = super::super::find_model_dir(None).expect("model provisioned: run `make models`");
        let light = super::super::load_tokenizer(&dir).unwrap();
        // The model's own tokenizer, with true lengths as the chunker needs them.
        let embedder = FastEmbedder::load(&dir, ModelVariant::BlockInt8, 4).unwrap();
        let mut model_tokenizer = embedder.model.lock().unwrap().tokenizer.clone();
        model_tokenizer.with_truncation(None).unwrap();
        model_tokenizer.with_padding(None);
        let heavy = &model_tokenizer;
        let long = "The survey boat anchored near buoy 17. ".repeat(200);
        let texts = [
            "",
            "hello world",
            "Quarterly revenue rose 12 % to EUR 4,2 Mio.; see § 3.1 (Anhang B).",
            "| station | observer | remark |\n| S1 | observer 1 | calm sea |\n",
            "Ünïcödé naïve café — 東京 ＡＢＣ 🙂 [CLS] [SEP] [PAD] [MASK] [UNK]",
            "tabs\tand\r\nwindows line ends   and    runs of spaces",
            "QmFzZTY0IGxvb2tpbmcgdGV4dCB3aXRob3V0IHNwYWNlcw+/QmFzZTY0",
            long.as_str(),
        ];
        for text in texts {
            for special in [false, true] {
                let a = light.encode(text, special).unwrap();
                let b = heavy.encode(text, special).unwrap();
                assert_eq!(a.get_ids(), b.get_ids(), "{text:?}");
                assert_eq!(a.get_offsets(), b.get_offsets(), "{text:?}");
            }
        }
        assert!(light.encode(long.as_str(), false).unwrap().len() > MAX_SEQ_TOKENS);
        assert_eq!(embedder.dimensions(), DIMENSIONS);
        assert_eq!(embedder.max_tokens(), MAX_SEQ_TOKENS);
        assert_eq!(embedder.embed(&["a", "b", "c", "d", "e"]).unwrap().len(), 5);
    }

    /// Texts are run longest first, in batches of similar length, but every vector comes back
    /// at its text's place: closest to the same text embedded alone. Every variant loads.
    /// (dynamic-int8 scales activations per model run, so a text's vector moves a little with
    /// its batch neighbours: cosine ≥ 0.98 here, where int8-weights and block-int8, whose
    /// scales stay within a text, give ≥ 0.999.)
    #[test]
    fn length_sorted_batches_keep_the_callers_order() {
        let dir = super::super::find_model_dir(None).expect("model provisioned: run `make models`");
        let dot = |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| x * y).sum() };
        for variant in ModelVariant::ALL {
            let embedder: Box<dyn Embedder> = if variant.on_openvino() {
                Box::new(
                    super::super::OpenVinoEmbedder::load_variant(
                        &dir,
                        variant,
                        2,
                        super::super::openvino::Precision::for_this_cpu(),
                    )
                    .unwrap(),
                )
            } else {
                Box::new(FastEmbedder::load(&dir, variant, 2).unwrap())
            };
            let long = "the lighthouse keeper wrote in the log every night ".repeat(8);
            let texts = [
                "short",
                long.as_str(),
                "a middle sized sentence about tides",
                "quarterly revenue table",
                "x",
            ];
            let together = embedder.embed(&texts).unwrap();
            let alone: Vec<Vec<f32>> = texts
                .iter()
                .map(|t| embedder.embed(&[t]).unwrap().remove(0))
                .collect();
            // Dynamic int8 scales each batch's activations by the batch's own range, so a
            // text's vector shifts with the texts beside it; how far depends on the CPU's
            // int8 kernels (0.9798 on an AMD EPYC without AVX-512 VNNI, above 0.98 on Intel).
            let floor = match variant {
                ModelVariant::DynamicInt8 => 0.97,
                ModelVariant::Int8Weights
                | ModelVariant::BlockInt8
                | ModelVariant::Bf16
                | ModelVariant::MultilingualE5Small => 0.999,
            };
            for (i, v) in together.iter().enumerate() {
                let cos: Vec<f32> = alone.iter().map(|a| dot(a, v)).collect();
                let best = (0..cos.len()).max_by(|&a, &b| cos[a].total_cmp(&cos[b]));
                assert_eq!(best, Some(i), "{variant}: text {i} {cos:?}");
                assert!(cos[i] > floor, "{variant}: text {i} cos {}", cos[i]);
            }
        }
    }
}
