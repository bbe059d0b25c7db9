//! Counters of the upload service, rendered in the Prometheus text format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use super::jobs::JobStatus;
use crate::lock;
use crate::report::{FileReport, Summary};

/// Counters since the process started.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    inner: Mutex<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    /// Ledger lines by status.
    files: BTreeMap<&'static str, u64>,
    /// Ended jobs by final state.
    jobs: BTreeMap<&'static str, u64>,
    /// Accepted uploads and their bytes.
    uploads: u64,
    upload_bytes: u64,
    /// Uploads refused, by cause.
    refused: BTreeMap<&'static str, u64>,
    chunks_embedded: u64,
    chunks_reused: u64,
    /// Busy seconds per stage, summed over ended runs.
    stage_seconds: BTreeMap<&'static str, f64>,
    /// Seconds from acceptance to the end, summed over ended jobs.
    job_seconds: f64,
}

/// What the runner knows at the moment of a scrape.
pub(crate) struct Gauges {
    pub queued: usize,
    pub open_jobs: usize,
    pub receiving: usize,
    pub catalog: crate::CatalogStats,
    pub workflows: crate::workflow::WorkflowStats,
}

impl Metrics {
    pub fn file(&self, r: &FileReport) {
        *lock(&self.inner)
            .files
            .entry(r.status.as_str())
            .or_default() += 1;
    }

    pub fn accepted(&self, bytes: u64) {
        let mut c = lock(&self.inner);
        c.uploads += 1;
        c.upload_bytes += bytes;
    }

    pub fn refused(&self, cause: &'static str) {
        *lock(&self.inner).refused.entry(cause).or_default() += 1;
    }

    pub fn job_ended(&self, status: &JobStatus) {
        let mut c = lock(&self.inner);
        *c.jobs.entry(status.state.as_str()).or_default() += 1;
        if let Some(end) = status.finished_at {
            c.job_seconds += (end - status.submitted_at).max(0.0);
        }
    }

    pub fn add_run(&self, s: &Summary) {
        let mut c = lock(&self.inner);
        c.chunks_embedded += s.chunks_embedded;
        c.chunks_reused += s.chunks_reused;
        let t = &s.seconds;
        for (stage, secs) in [
            ("unpack", t.unpack),
            ("extract", t.extract),
            ("chunk", t.chunk),
            ("embed", t.embed),
            ("store", t.store),
            ("optimize", t.optimize),
        ] {
            *c.stage_seconds.entry(stage).or_default() += secs;
        }
    }

    /// The Prometheus text exposition of the counters and `gauges`.
    pub fn render(&self, gauges: &Gauges) -> String {
        let c = lock(&self.inner);
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, rows: Vec<(String, String)>| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in rows {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let labelled = |label: &str, m: &BTreeMap<&'static str, u64>| {
            m.iter()
                .map(|(k, v)| (format!("{{{label}=\"{k}\"}}"), v.to_string()))
                .collect::<Vec<_>>()
        };
        let one = |v: String| vec![(String::new(), v)];
        family(
            "ingest_files_total",
            "counter",
            "Ledger lines of uploads and deletes since start, by status.",
            labelled("status", &c.files),
        );
        family(
            "ingest_jobs_total",
            "counter",
            "Jobs ended since start, by final state.",
            labelled("state", &c.jobs),
        );
        family(
            "ingest_jobs_open",
            "gauge",
            "Jobs accepted and not ended (queued or running).",
            one(gauges.open_jobs.to_string()),
        );
        family(
            "ingest_queue_depth",
            "gauge",
            "Jobs waiting for a pipeline run.",
            one(gauges.queued.to_string()),
        );
        family(
            "ingest_uploads_receiving",
            "gauge",
            "Upload bodies being received now.",
            one(gauges.receiving.to_string()),
        );
        family(
            "ingest_uploads_total",
            "counter",
            "Uploads accepted since start.",
            one(c.uploads.to_string()),
        );
        family(
            "ingest_upload_bytes_total",
            "counter",
            "Bytes of the uploads accepted since start.",
            one(c.upload_bytes.to_string()),
        );
        family(
            "ingest_uploads_refused_total",
            "counter",
            "Uploads refused since start, by cause (too_large, busy, queue_full).",
            labelled("cause", &c.refused),
        );
        family(
            "ingest_chunks_embedded_total",
            "counter",
            "Chunks embedded by ended runs since start.",
            one(c.chunks_embedded.to_string()),
        );
        family(
            "ingest_chunks_reused_total",
            "counter",
            "Chunks of ended runs whose text was embedded before in their run: the vector taken again, no model run.",
            one(c.chunks_reused.to_string()),
        );
        family(
            "ingest_stage_seconds_total",
            "counter",
            "Busy seconds per pipeline stage, summed over ended runs since start.",
            c.stage_seconds
                .iter()
                .map(|(k, v)| (format!("{{stage=\"{k}\"}}"), format!("{v:.3}")))
                .collect(),
        );
        family(
            "ingest_job_seconds_total",
            "counter",
            "Seconds from acceptance to end, summed over jobs ended since start.",
            one(format!("{:.3}", c.job_seconds)),
        );
        let cat = &gauges.catalog;
        family(
            "ingest_index_files",
            "gauge",
            "Files in the catalog (every scope), by status.",
            [
                ("indexed", cat.indexed),
                ("failed", cat.failed),
                ("skipped", cat.skipped),
                ("archive", cat.containers),
            ]
            .iter()
            .map(|(k, v)| (format!("{{status=\"{k}\"}}"), v.to_string()))
            .collect(),
        );
        family(
            "ingest_index_chunks",
            "gauge",
            "Chunks the catalog's files have in the index (every scope).",
            one(cat.chunks.to_string()),
        );
        let w = &gauges.workflows;
        family(
            "ingest_workflows",
            "gauge",
            "Workflows (agent runs) holding data.",
            one(w.workflows.to_string()),
        );
        family(
            "ingest_workflow_items",
            "gauge",
            "Items the workflows hold, by kind.",
            [
                ("tool_result", w.results),
                ("entity", w.entities),
                ("summary", w.summaries),
            ]
            .iter()
            .map(|(k, v)| (format!("{{kind=\"{k}\"}}"), v.to_string()))
            .collect(),
        );
        family(
            "ingest_workflow_result_bytes",
            "gauge",
            "Raw bytes of the tool results the workflows hold.",
            one(w.result_bytes.to_string()),
        );
        out
    }
}
