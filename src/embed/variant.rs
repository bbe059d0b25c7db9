//! [`ModelVariant`]: which ONNX file of the provisioned model runs, and the record of it in a
//! data directory, so an index is always searched and extended with the model that made it.

use std::path::Path;

use crate::error::{Error, Result};

/// Which ONNX file of the provisioned all-MiniLM-L6-v2 folder runs. Both give 384-dim vectors
/// of the same model (cosine 0.99 to each other) but not identical ones, so an index keeps
/// the variant it was embedded with (see [`crate::Config::model_variant`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ModelVariant {
    /// `model.onnx`: int8 weights that are converted back to fp32 before every product. The
    /// default: `DynamicInt8` has not yet passed the retrieval-quality gate (docs/EVALUATION.md).
    #[default]
    Int8Weights,
    /// `model-dynamic-int8.onnx`: quantized by ONNX Runtime's `quantize_dynamic` from the fp32
    /// export, with int8 weights (one scale per output channel) and int8 matrix products.
    /// About 2× the throughput of [`ModelVariant::Int8Weights`] on this machine kind; on
    /// `eval/dev.tsv` (same chunks) hybrid recall@5 +1.5 points, page@5 equal, MRR −1.9.
    DynamicInt8,
}

impl ModelVariant {
    /// Every variant, default first.
    pub const ALL: [ModelVariant; 2] = [ModelVariant::Int8Weights, ModelVariant::DynamicInt8];

    /// The ONNX file inside the model folder.
    pub fn file_name(self) -> &'static str {
        match self {
            ModelVariant::DynamicInt8 => "model-dynamic-int8.onnx",
            ModelVariant::Int8Weights => "model.onnx",
        }
    }

    /// The name used on the command line, in config files and in the data directory.
    pub fn name(self) -> &'static str {
        match self {
            ModelVariant::DynamicInt8 => "dynamic-int8",
            ModelVariant::Int8Weights => "int8-weights",
        }
    }
}

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
            .ok_or_else(|| format!("unknown model variant {s:?} (dynamic-int8 or int8-weights)"))
    }
}

/// The file in a data directory that names the [`ModelVariant`] its vectors came from.
pub(crate) const VARIANT_FILE: &str = "embedding-model";

/// The variant to embed and search `data_dir` with: the one it records; for an index from
/// before the record existed (`has_content`, no record) [`ModelVariant::Int8Weights`], the
/// only model then; for a new index `configured`, else the default. A `configured` variant
/// that differs from the index's is refused: its vectors would not be comparable.
pub(crate) fn index_variant(
    data_dir: &Path,
    configured: Option<ModelVariant>,
    has_content: bool,
) -> Result<ModelVariant> {
    let path = data_dir.join(VARIANT_FILE);
    let recorded = match std::fs::read_to_string(&path) {
        Ok(text) => Some(
            text.trim()
                .parse::<ModelVariant>()
                .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            has_content.then_some(ModelVariant::Int8Weights)
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let variant = match (recorded, configured) {
        (Some(r), Some(c)) if r != c => {
            return Err(Error::Config(format!(
                "{} was embedded with model variant {r}; searching or adding to it with {c} would mix two models' vectors (use {r}, or another data dir)",
                data_dir.display()
            )))
        }
        (Some(r), _) => r,
        (None, c) => c.unwrap_or_default(),
    };
    if !path.is_file() {
        crate::perms::write_file(&path, format!("{}\n", variant.name()).as_bytes())?;
    }
    Ok(variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_index_keeps_the_variant_that_embedded_it() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        // A new index: the configured variant, else the default; recorded either way.
        assert_eq!(
            index_variant(data, Some(ModelVariant::DynamicInt8), false).unwrap(),
            ModelVariant::DynamicInt8
        );
        assert_eq!(
            std::fs::read_to_string(data.join(VARIANT_FILE)).unwrap(),
            "dynamic-int8\n"
        );
        // Later calls follow the record, and refuse the other variant by name.
        assert_eq!(
            index_variant(data, None, true).unwrap(),
            ModelVariant::DynamicInt8
        );
        let refused = index_variant(data, Some(ModelVariant::Int8Weights), true).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("embedded with model variant dynamic-int8"),
            "{refused}"
        );
        // An index from before the record holds int8-weights vectors.
        let old = tempfile::tempdir().unwrap();
        assert_eq!(
            index_variant(old.path(), None, true).unwrap(),
            ModelVariant::Int8Weights
        );
        assert!(index_variant(old.path(), Some(ModelVariant::DynamicInt8), true).is_err());
        // Without a choice, a new index gets the default.
        let chosen = tempfile::tempdir().unwrap();
        assert_eq!(
            index_variant(chosen.path(), None, false).unwrap(),
            ModelVariant::Int8Weights
        );
        assert_eq!("int8-weights".parse(), Ok(ModelVariant::Int8Weights));
        assert!("fp16".parse::<ModelVariant>().is_err());
    }
}
