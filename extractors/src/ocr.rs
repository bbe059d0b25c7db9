//! OCR of scanned PDF pages and raster images with the `tesseract` program.
//!
//! Extraction runs in isolated worker processes under memory and time limits; OCR runs inside
//! the extraction of its file, so it is bounded the same way: the child programs inherit the
//! worker's address-space limit, each run has a wall-clock timeout (the child is killed when
//! it overruns), and a file's OCR stops starting pages once its time budget is spent. PDF
//! pages are rasterised with `pdftoppm` (poppler-utils). Programs are started directly (no
//! shell) with their files in a private temporary folder that is removed afterwards.
//!
//! A missing program is not a failed file: the file is indexed without OCR text and its
//! objects say why (`ocr_error`).

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How (and whether) scanned pages and pictures are OCR'd.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct OcrOptions {
    /// Run OCR at all (default true).
    pub enabled: bool,
    /// Tesseract languages, `+`-joined (default `eng+deu`).
    pub languages: String,
    /// Image-only PDF pages OCR'd per file; pages past it are listed in `ocr_pages_skipped`.
    pub max_pages_per_file: u32,
    /// Wall-clock time one page (or one picture) may take, rasterising included.
    pub page_timeout: Duration,
    /// The tesseract program (looked up on `PATH` when it has no `/`).
    pub tesseract: PathBuf,
    /// The pdftoppm program (poppler-utils), for rasterising PDF pages.
    pub pdftoppm: PathBuf,
    /// Rasterising resolution for PDF pages (lowered for very large pages).
    pub dpi: u32,
    /// Tesseract page segmentation mode (3: fully automatic).
    pub psm: u8,
    /// Wall-clock time the OCR of one file may take, counted from the start of its
    /// extraction: pages are not started past it (the worker pool sets it below its job
    /// deadline, so a long scan loses OCR pages, not the whole file).
    pub file_budget: Option<Duration>,
}

impl Default for OcrOptions {
    fn default() -> Self {
        OcrOptions {
            enabled: true,
            languages: "eng+deu".into(),
            max_pages_per_file: 50,
            page_timeout: Duration::from_secs(60),
            tesseract: PathBuf::from("tesseract"),
            pdftoppm: PathBuf::from("pdftoppm"),
            dpi: 300,
            psm: 3,
            file_budget: None,
        }
    }
}

impl OcrOptions {
    /// Why these options cannot work, if they cannot.
    pub fn check(&self) -> Result<(), OcrError> {
        let ok = !self.languages.is_empty()
            && self.languages.len() <= 200
            && !self.languages.starts_with('+')
            && self
                .languages
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '+');
        if !ok {
            return Err(OcrError::BadLanguages(self.languages.clone()));
        }
        if self.page_timeout.is_zero() || !(50..=1200).contains(&self.dpi) || self.psm > 13 {
            return Err(OcrError::Failed {
                program: "ocr".into(),
                reason: "page_timeout must be positive, dpi within 50-1200, psm within 0-13".into(),
            });
        }
        Ok(())
    }
}

/// Settings that reach every extractor (they travel to the worker processes with each job).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExtractOptions {
    pub ocr: OcrOptions,
    /// PDFium (`libpdfium.so`) for PDF page text; without it (or when it cannot open a file)
    /// PDF text comes from pdf-extract. The `ingest` library fills it from the model folder.
    /// Bound once per process: the first path given wins.
    pub pdfium_library: Option<PathBuf>,
    /// Render a page image instead of extracting (`render_page`): the answer is one image
    /// object holding the PNG (see `crate::render`).
    pub render: Option<crate::render::RenderRequest>,
}

impl ExtractOptions {
    /// The defaults (OCR on), for callers that have no configuration.
    pub fn defaults() -> &'static ExtractOptions {
        static DEFAULTS: OnceLock<ExtractOptions> = OnceLock::new();
        DEFAULTS.get_or_init(ExtractOptions::default)
    }

    /// The defaults without OCR (no external programs are started).
    pub fn without_ocr() -> &'static ExtractOptions {
        static NO_OCR: OnceLock<ExtractOptions> = OnceLock::new();
        NO_OCR.get_or_init(|| ExtractOptions {
            ocr: OcrOptions {
                enabled: false,
                ..OcrOptions::default()
            },
            ..ExtractOptions::default()
        })
    }
}

/// Why OCR gave no text.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum OcrError {
    #[error("{program} not found: install it (Debian: tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu poppler-utils) or turn OCR off")]
    Missing { program: String },
    #[error("{program} ran longer than {seconds} s and was killed")]
    Timeout { program: String, seconds: f64 },
    #[error("{program} failed: {reason}")]
    Failed { program: String, reason: String },
    #[error("OCR temporary files: {0}")]
    Io(String),
    #[error("invalid OCR languages {0:?} (letters, digits, _ and +)")]
    BadLanguages(String),
}

impl OcrError {
    /// A missing program: no use trying further pages.
    pub fn is_missing(&self) -> bool {
        matches!(self, OcrError::Missing { .. })
    }
}

/// Text recognised on one page or picture.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OcrText {
    pub text: String,
    /// Mean word confidence (0-100) from tesseract's TSV output.
    pub confidence: Option<f64>,
    /// Word-like tokens in `text`.
    pub words: usize,
    pub seconds: f64,
    /// What tesseract read: `picture`, `page JPEG` (a scan's own JPEG), `rendered page`.
    pub input: &'static str,
    /// Tesseract's words with their boxes in the picture's pixels (origin top-left).
    pub boxes: Vec<crate::positions::Word>,
    /// The picture's width and height in pixels, as tesseract saw it.
    pub image_size: Option<[f32; 2]>,
}

impl OcrText {
    /// The words' boxes on a page of `size` (PDF points, origin bottom-left) that the
    /// picture covers whole.
    pub fn words_on_page(&self, size: [f32; 2]) -> Vec<crate::positions::Word> {
        let Some([w, h]) = self.image_size.filter(|s| s[0] > 0.0 && s[1] > 0.0) else {
            return Vec::new();
        };
        let (sx, sy) = (size[0] / w, size[1] / h);
        self.boxes
            .iter()
            .map(|word| crate::positions::Word {
                counted: word.counted,
                bbox: word.bbox.map(|[x0, y0, x1, y1]| {
                    [x0 * sx, size[1] - y1 * sy, x1 * sx, size[1] - y0 * sy]
                }),
            })
            .collect()
    }

    /// Metadata of the text object holding this text.
    pub fn metadata(&self, opts: &OcrOptions) -> serde_json::Value {
        let mut m = serde_json::json!({
            "ocr": true,
            "ocr_lang": opts.languages,
            "text_source": "ocr",
            "ocr_input": self.input,
        });
        if let (Some(c), Some(map)) = (self.confidence, m.as_object_mut()) {
            map.insert("ocr_confidence".into(), serde_json::json!(c));
        }
        m
    }
}

/// Fewer word-like tokens than this is noise (specks, rules, a logo), not text.
const MIN_WORDS: usize = 3;
/// Pictures larger than this many pixels are not OCR'd (a decompression bomb, or a poster
/// whose OCR would not fit the worker's memory).
pub(crate) const MAX_PIXELS: f64 = 60_000_000.0;
/// Pictures smaller than this (either side) hold no readable line of type.
pub(crate) const MIN_SIDE: f64 = 16.0;
/// The longest side of a rasterised PDF page, in pixels.
const MAX_RASTER_SIDE: f64 = 7000.0;

/// One file's OCR: its options, its private temporary folder and its time budget.
pub(crate) struct OcrSession<'a> {
    opts: &'a OcrOptions,
    dir: tempfile::TempDir,
    deadline: Option<Instant>,
    pdf_written: bool,
}

impl<'a> OcrSession<'a> {
    /// A session for one file whose extraction began at `started`.
    pub fn new(opts: &'a OcrOptions, started: Instant) -> Result<Self, OcrError> {
        opts.check()?;
        let dir = tempfile::Builder::new()
            .prefix("ingest-ocr-")
            .tempdir()
            .map_err(|e| OcrError::Io(e.to_string()))?;
        Ok(OcrSession {
            opts,
            dir,
            deadline: opts.file_budget.map(|b| started + b),
            pdf_written: false,
        })
    }

    /// Time left for this file's OCR, `None` once the budget is spent.
    pub fn time_left(&self) -> Option<Duration> {
        let timeout = self.opts.page_timeout;
        match self.deadline {
            None => Some(timeout),
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                (left >= Duration::from_secs(1)).then(|| left.min(timeout))
            }
        }
    }

    /// OCR a picture file's bytes (`ext` names its format for the temporary file).
    pub fn image(&self, bytes: &[u8], ext: &str) -> Result<Option<OcrText>, OcrError> {
        self.image_at(bytes, ext, None)
    }

    /// OCR a picture at a known resolution (a scan's own JPEG taken out of a PDF page).
    pub fn image_at(
        &self,
        bytes: &[u8],
        ext: &str,
        dpi: Option<u32>,
    ) -> Result<Option<OcrText>, OcrError> {
        let started = Instant::now();
        let timeout = self.time_left().ok_or_else(|| OcrError::Timeout {
            program: "ocr".into(),
            seconds: 0.0,
        })?;
        let path = self.dir.path().join(format!("image.{ext}"));
        std::fs::write(&path, bytes).map_err(|e| OcrError::Io(e.to_string()))?;
        let result = self.tesseract(&path, dpi, timeout, started);
        let _ = std::fs::remove_file(&path);
        result
    }

    /// OCR page `page` (1-based) of the PDF `pdf`, whose media box is `size_pt` points.
    pub fn pdf_page(
        &mut self,
        pdf: &[u8],
        page: u32,
        size_pt: Option<(f64, f64)>,
    ) -> Result<Option<OcrText>, OcrError> {
        let started = Instant::now();
        let Some(timeout) = self.time_left() else {
            return Err(OcrError::Timeout {
                program: "ocr".into(),
                seconds: 0.0,
            });
        };
        let input = self.dir.path().join("input.pdf");
        if !self.pdf_written {
            std::fs::write(&input, pdf).map_err(|e| OcrError::Io(e.to_string()))?;
            self.pdf_written = true;
        }
        let long_side = size_pt.map_or(0.0, |(w, h)| w.abs().max(h.abs()));
        let mut dpi = f64::from(self.opts.dpi);
        if long_side * dpi / 72.0 > MAX_RASTER_SIDE {
            dpi = (MAX_RASTER_SIDE * 72.0 / long_side).floor().max(36.0);
        }
        let dpi = dpi as u32;
        let prefix = self.dir.path().join("page");
        let n = page.to_string();
        let args: Vec<OsString> = vec![
            "-r".into(),
            dpi.to_string().into(),
            "-f".into(),
            n.clone().into(),
            "-l".into(),
            n.into(),
            "-gray".into(),
            "-png".into(),
            "-singlefile".into(),
            input.into(),
            prefix.clone().into(),
        ];
        run(&self.opts.pdftoppm, &args, timeout, self.dir.path())?;
        let png = prefix.with_extension("png");
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            let _ = std::fs::remove_file(&png);
            return Err(OcrError::Timeout {
                program: program_name(&self.opts.pdftoppm),
                seconds: timeout.as_secs_f64(),
            });
        }
        let result = self.tesseract(&png, Some(dpi), left, started);
        let _ = std::fs::remove_file(&png);
        result.map(|t| {
            t.map(|t| OcrText {
                input: "rendered page",
                ..t
            })
        })
    }

    fn tesseract(
        &self,
        image: &Path,
        dpi: Option<u32>,
        timeout: Duration,
        started: Instant,
    ) -> Result<Option<OcrText>, OcrError> {
        let out = self.dir.path().join("out");
        let mut args: Vec<OsString> = vec![
            image.into(),
            out.clone().into(),
            "-l".into(),
            self.opts.languages.clone().into(),
            "--psm".into(),
            self.opts.psm.to_string().into(),
        ];
        if let Some(dpi) = dpi {
            args.push("--dpi".into());
            args.push(dpi.to_string().into());
        }
        args.push("txt".into());
        args.push("tsv".into());
        run(&self.opts.tesseract, &args, timeout, self.dir.path())?;
        let txt = out.with_extension("txt");
        let tsv = out.with_extension("tsv");
        let text = read_limited(&txt, 4 * 1024 * 1024);
        let tsv_text = read_limited(&tsv, 16 * 1024 * 1024);
        let confidence = tsv_text.as_deref().and_then(mean_confidence);
        let (image_size, boxes) = tsv_text.as_deref().map(word_boxes).unwrap_or_default();
        let _ = std::fs::remove_file(&txt);
        let _ = std::fs::remove_file(&tsv);
        let text = tidy(&text.unwrap_or_default());
        let words = word_count(&text);
        if words < MIN_WORDS {
            return Ok(None);
        }
        Ok(Some(OcrText {
            text,
            confidence,
            words,
            seconds: started.elapsed().as_secs_f64(),
            input: if dpi.is_some() {
                "page JPEG"
            } else {
                "picture"
            },
            boxes,
            image_size,
        }))
    }
}

fn program_name(p: &Path) -> String {
    p.display().to_string()
}

/// Run `program` with `args` (no shell), in `dir`, killing it past `timeout`.
fn run(program: &Path, args: &[OsString], timeout: Duration, dir: &Path) -> Result<(), OcrError> {
    let name = program_name(program);
    let stderr_path = dir.join("stderr.txt");
    let stderr = File::create(&stderr_path).map_err(|e| OcrError::Io(e.to_string()))?;
    let spawned = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr))
        // One thread per page: the pool already runs one worker per core.
        .env("OMP_THREAD_LIMIT", "1")
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(OcrError::Missing { program: name })
        }
        Err(e) => {
            return Err(OcrError::Failed {
                program: name,
                reason: format!("cannot start: {e}"),
            })
        }
    };
    let started = Instant::now();
    let mut pause = Duration::from_millis(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(OcrError::Timeout {
                    program: name,
                    seconds: timeout.as_secs_f64(),
                });
            }
            Ok(None) => {
                std::thread::sleep(pause.min(timeout.saturating_sub(started.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(OcrError::Failed {
                    program: name,
                    reason: e.to_string(),
                });
            }
        }
    };
    if status.success() {
        return Ok(());
    }
    let said = read_limited(&stderr_path, 64 * 1024).unwrap_or_default();
    let last = said
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect::<String>();
    Err(OcrError::Failed {
        program: name,
        reason: format!("{status}: {last}"),
    })
}

/// A file's text, at most `max` bytes of it (lossy UTF-8).
fn read_limited(path: &Path, max: u64) -> Option<String> {
    let mut bytes = Vec::new();
    std::io::copy(&mut File::open(path).ok()?.take(max), &mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The picture's size (the level 1 row) and the words with their boxes (level 5 rows, pixels,
/// origin top-left) in tesseract's TSV output.
fn word_boxes(tsv: &str) -> (Option<[f32; 2]>, Vec<crate::positions::Word>) {
    let mut size = None;
    let mut words = Vec::new();
    for line in tsv.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let number = |i: usize| cols.get(i).and_then(|v| v.trim().parse::<f32>().ok());
        let (Some(level), Some(l), Some(t), Some(w), Some(h)) =
            (cols.first(), number(6), number(7), number(8), number(9))
        else {
            continue;
        };
        match *level {
            "1" if size.is_none() => size = Some([w, h]),
            "5" => {
                let text = cols.get(11).copied().unwrap_or("");
                let counted = text
                    .chars()
                    .filter(|c| crate::positions::counted(*c))
                    .count();
                if counted > 0 {
                    words.push(crate::positions::Word {
                        counted: u32::try_from(counted).unwrap_or(u32::MAX),
                        bbox: Some([l, t, l + w, t + h]),
                    });
                }
            }
            _ => {}
        }
    }
    (size, words)
}

/// Mean confidence of the words in tesseract's TSV output (level 5 rows), one decimal.
fn mean_confidence(tsv: &str) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0u32);
    for line in tsv.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (Some(level), Some(conf), Some(text)) = (cols.first(), cols.get(10), cols.get(11))
        else {
            continue;
        };
        if *level != "5" || text.trim().is_empty() {
            continue;
        }
        if let Ok(c) = conf.trim().parse::<f64>() {
            if c >= 0.0 {
                sum += c;
                n += 1;
            }
        }
    }
    (n > 0).then(|| (sum / f64::from(n) * 10.0).round() / 10.0)
}

/// Trim lines, drop the form feed tesseract ends a page with, collapse blank runs.
fn tidy(text: &str) -> String {
    crate::tidy::tidy_lines(text, |line| {
        line.trim_matches(|c: char| c.is_whitespace() || c == '\u{c}')
    })
}

/// Tokens that look like words: two or more letters, and mostly letters or digits.
pub(crate) fn word_count(text: &str) -> usize {
    text.split_whitespace()
        .filter(|t| {
            let letters = t.chars().filter(|c| c.is_alphabetic()).count();
            let alnum = t.chars().filter(|c| c.is_alphanumeric()).count();
            let all = t.chars().count();
            letters >= 2 && alnum * 3 >= all * 2
        })
        .count()
}

/// The temporary-file extension tesseract (leptonica) recognises a picture by, for the
/// formats it reads; `None` for formats it cannot read (SVG, HEIC, AVIF, icons).
pub(crate) fn image_extension(mime: &str) -> Option<&'static str> {
    Some(match mime {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/tiff" => "tif",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/bmp" | "image/x-ms-bmp" => "bmp",
        "image/jp2" => "jp2",
        "image/x-portable-anymap"
        | "image/x-portable-pixmap"
        | "image/x-portable-graymap"
        | "image/x-portable-bitmap" => "pnm",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_like_tokens_are_counted_and_noise_is_not() {
        assert_eq!(word_count("| — ~ ,, 1 a"), 0);
        assert_eq!(
            word_count("Wasserstandsmeldung der Hafenmeisterei: 3,5 m"),
            3
        );
        assert_eq!(tidy("  one  \n\n\n\ntwo\n\u{c}"), "one\n\ntwo");
    }

    #[test]
    fn confidence_is_the_mean_of_word_rows() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
                   1\t1\t0\t0\t0\t0\t0\t0\t10\t10\t-1\t\n\
                   5\t1\t1\t1\t1\t1\t0\t0\t5\t5\t90.5\tTide\n\
                   5\t1\t1\t1\t1\t2\t0\t0\t5\t5\t80.5\tgauge\n";
        assert_eq!(mean_confidence(tsv), Some(85.5));
        assert_eq!(mean_confidence("header only"), None);
    }

    #[test]
    fn languages_are_checked() {
        let mut o = OcrOptions::default();
        assert!(o.check().is_ok());
        for bad in ["", "-l", "eng deu", "+eng", "eng;rm"] {
            o.languages = bad.into();
            assert!(o.check().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_missing_program_is_a_missing_error_and_an_overrun_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let e = run(
            Path::new("/nonexistent/tesseract"),
            &[],
            Duration::from_secs(5),
            dir.path(),
        )
        .unwrap_err();
        assert!(e.is_missing(), "{e}");
        let started = Instant::now();
        let e = run(
            Path::new("sleep"),
            &["30".into()],
            Duration::from_millis(200),
            dir.path(),
        )
        .unwrap_err();
        assert!(matches!(e, OcrError::Timeout { .. }), "{e}");
        // A hang guard, not a timing assertion: the child did not run its 30 s.
        assert!(started.elapsed() < Duration::from_secs(20));
    }
}
