//! [`Ingestor`]: the facade a caller opens on a data directory — its [`Services`] (catalog,
//! model, store, extractors, run slots) and the workflows' records — with the entry points
//! that run the pipeline: ingest, import. Searches, repair, export and stats are the
//! services' own (an `Ingestor` derefs to its [`Services`]).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use extractors::Scope;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::pipeline::Input;
use crate::report::{FileReport, IngestReport};
use crate::services::{Services, EXPORT_FORMAT};

/// Points per write when importing.
const IMPORT_BATCH: usize = 512;

/// The long-lived ingestion runtime: configuration, catalog, and (loaded on first use) the
/// embedding model and the vector store. `Send + Sync`: share one per process.
///
/// An ingest call waits while another one of the same scope runs (runs of different scopes
/// go at once); searches never wait. For uploads that must not block their caller, see
/// [`crate::Uploads`].
pub struct Ingestor {
    services: Services,
    /// The workflows' records, turns and sweeps (`crate::workflow`).
    pub(crate) workflow_records: crate::workflow::WorkflowRecords,
}

impl std::fmt::Debug for Ingestor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingestor")
            .field("data_dir", &self.config().data_dir)
            .finish()
    }
}

/// An ingestor is its services plus the workflows' records: what the services offer
/// (search, repair, export, stats, the catalog) is called on it directly.
impl std::ops::Deref for Ingestor {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.services
    }
}

impl Ingestor {
    /// Validate `config`, create the data directory and load the catalog. The model and the
    /// store are opened on first use, so opening is cheap.
    pub fn open(config: Config) -> Result<Self> {
        Self::open_as(config, false)
    }

    /// Open the data directory to [`Ingestor::reindex`] it, with `config.model_variant`
    /// (when given) replacing the model the index records: the reindex embeds every
    /// content with it and records it.
    pub fn open_for_reindex(config: Config) -> Result<Self> {
        Self::open_as(config, true)
    }

    /// [`Ingestor::open`] with `models` in place of the provisioned ones (unit tests: the
    /// fake model).
    #[cfg(test)]
    pub(crate) fn open_with_models(
        config: Config,
        models: crate::services::GivenModels,
    ) -> Result<Self> {
        Self::open_as_with(config, false, models)
    }

    fn open_as(config: Config, model_change: bool) -> Result<Self> {
        Self::open_as_with(
            config,
            model_change,
            crate::services::GivenModels::default(),
        )
    }

    fn open_as_with(
        config: Config,
        model_change: bool,
        models: crate::services::GivenModels,
    ) -> Result<Self> {
        let services = Services::open(config, model_change, models)?;
        let workflow_records = crate::workflow::WorkflowRecords::new(
            services.data_dir(),
            services.config().catalog.as_ref(),
        );
        let ingestor = Ingestor {
            services,
            workflow_records,
        };
        match ingestor.workflows().import_legacy() {
            Ok(0) => {}
            Ok(n) => tracing::info!("moved {n} workflow records into workflows.sqlite"),
            Err(e) => tracing::warn!("workflow records of the earlier layout not moved: {e}"),
        }
        Ok(ingestor)
    }

    /// The workflow layer: tool results, entities and summaries of agent runs, and
    /// `gather_context` over all three layers.
    pub fn workflows(&self) -> crate::workflow::Workflows<'_> {
        crate::workflow::Workflows::new(&self.services, &self.workflow_records)
    }

    /// Ingest a file or folder (archives included). Blocks until done.
    pub fn ingest_path(&self, path: impl AsRef<Path>, scope: &Scope) -> Result<IngestReport> {
        self.ingest(
            vec![Input::Path(path.as_ref().to_path_buf())],
            scope,
            &|_| {},
        )
    }

    /// Ingest bytes received from elsewhere (an upload) under `name`; archives are unpacked.
    pub fn ingest_bytes(&self, name: &str, bytes: Vec<u8>, scope: &Scope) -> Result<IngestReport> {
        self.ingest(
            vec![Input::Bytes {
                name: name.to_string(),
                bytes,
            }],
            scope,
            &|_| {},
        )
    }

    /// Move an index into the store `config` names (`config.server`; none: the store the
    /// data dir records, the embedded shard for a new one): add the points of an
    /// [`Services::export`] read from `input` (nothing is embedded: vectors come with them)
    /// and record that `config.data_dir`'s catalog now describes that store, so the next
    /// sync skips what is unchanged. Idempotent: importing the same points again rewrites
    /// the same ids. Returns the number of points.
    pub fn import(mut config: Config, input: &mut dyn std::io::BufRead) -> Result<u64> {
        let mut first = String::new();
        input
            .read_line(&mut first)
            .map_err(|e| Error::io("import", e))?;
        let header: serde_json::Value = serde_json::from_str(&first).unwrap_or_default();
        if header.get("format").and_then(|f| f.as_str()) != Some(EXPORT_FORMAT) {
            return Err(Error::Import(
                "not a file written by `ingest export` (no header line)".into(),
            ));
        }
        // The vectors are this model's: the index must be searched with it.
        let variant = header
            .get("model_variant")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .parse::<crate::ModelVariant>()
            .map_err(|e| Error::Import(e.to_string()))?;
        if config.model_variant.is_some_and(|v| v != variant) {
            return Err(Error::Import(format!(
                "the points were embedded with model variant {variant}, not the one asked for"
            )));
        }
        config.model_variant = Some(variant);
        config.validate()?;
        let data = crate::DataDir::at(&config.data_dir);
        data.prepare()?;
        // A store given moves the index there; none keeps the recorded one (or, for a new
        // data dir, the embedded shard).
        if let Some(server) = &config.server {
            crate::records::record_store(&config.data_dir, Some(server))?;
        }
        let ingestor = Ingestor::open(config)?;
        let _whole_index = ingestor.runs().exclusive();
        let store = ingestor.store()?;
        let mut batch = Vec::with_capacity(IMPORT_BATCH);
        let mut imported = 0u64;
        for (n, line) in std::io::BufRead::lines(&mut *input).enumerate() {
            let line = line.map_err(|e| Error::io("import", e))?;
            let n = n + 1; // after the header
            if line.trim().is_empty() {
                continue;
            }
            let point: crate::ExportedPoint = serde_json::from_str(&line).map_err(|e| {
                Error::Import(format!("line {}: not an exported point: {e}", n + 1))
            })?;
            if point.vector.len() != crate::embed::DIMENSIONS {
                return Err(Error::Config(format!(
                    "import line {}: a vector of {} dimensions, the model's have {}",
                    n + 1,
                    point.vector.len(),
                    crate::embed::DIMENSIONS
                )));
            }
            batch.push(point);
            if batch.len() == IMPORT_BATCH {
                store.import_points(&batch)?;
                imported += batch.len() as u64;
                batch.clear();
            }
        }
        store.import_points(&batch)?;
        imported += batch.len() as u64;
        store.flush();
        store.optimize()?;
        Ok(imported)
    }

    /// Ingest `inputs`, calling `observer` with each file's report as it is decided. Blocks
    /// until every file is stored or reported.
    pub fn ingest(
        &self,
        inputs: Vec<Input>,
        scope: &Scope,
        observer: &(dyn Fn(&FileReport) + Sync),
    ) -> Result<IngestReport> {
        self.ingest_until(inputs, scope, observer, &AtomicBool::new(false))
    }

    /// [`Ingestor::ingest`], ending early once `stop` is set: files not started by then are
    /// left for the next run (nothing is removed on the strength of an unfinished walk), files
    /// in flight are stored. Blocks until done.
    pub fn ingest_until(
        &self,
        inputs: Vec<Input>,
        scope: &Scope,
        observer: &(dyn Fn(&FileReport) + Sync),
        stop: &AtomicBool,
    ) -> Result<IngestReport> {
        self.run_inputs(Box::new(inputs.into_iter()), scope, &observer, stop, true)
    }

    /// One pipeline run over `inputs` (a list, or a feed), once `scope` has no other run
    /// going ([`crate::pipeline::run_in_turn`]).
    pub(crate) fn run_inputs(
        &self,
        inputs: crate::pipeline::Inputs<'_>,
        scope: &Scope,
        progress: &dyn crate::pipeline::RunObserver,
        stop: &AtomicBool,
        keep_lines: bool,
    ) -> Result<IngestReport> {
        crate::pipeline::run_in_turn(&self.services, inputs, scope, progress, stop, keep_lines)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::find_model_dir;

    /// PDFium provisioned in the model folder reaches every extraction (absolute: workers
    /// load it); a model folder without it leaves PDF text to pdf-extract.
    #[test]
    fn pdfium_in_the_model_folder_reaches_the_extractors() {
        let dir = tempfile::tempdir().unwrap();
        let ingestor = Ingestor::open(Config::new(dir.path().join("data"))).unwrap();
        let lib = ingestor
            .extract_options()
            .pdfium_library
            .clone()
            .expect("libpdfium.so in the model folder: run `make models`");
        assert!(
            lib.is_absolute() && lib.ends_with("libpdfium.so"),
            "{lib:?}"
        );

        let bare = dir.path().join("bare-model");
        std::fs::create_dir_all(&bare).unwrap();
        let model = find_model_dir(None).unwrap();
        for f in std::fs::read_dir(&model).unwrap() {
            let f = f.unwrap().path();
            if f.file_name().is_some_and(|n| n != "libpdfium.so") {
                std::os::unix::fs::symlink(&f, bare.join(f.file_name().unwrap())).unwrap();
            }
        }
        let mut config = Config::new(dir.path().join("data2"));
        config.model_dir = Some(bare);
        let ingestor = Ingestor::open(config).unwrap();
        assert_eq!(ingestor.extract_options().pdfium_library, None);
    }
}
