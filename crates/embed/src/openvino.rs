//! [`OpenVinoEmbedder`]: the [`Embedder`] of [`ModelVariant::Bf16`]. OpenVINO runs the fp32
//! export of all-MiniLM-L6-v2 as it is, and computes it in bf16 on CPUs that have bf16
//! (AMX tiles, AVX512-BF16: the matrix products then run on AMX), in fp32 elsewhere. On this
//! machine kind that is 2.4–2.7× block-int8 on ONNX Runtime at a cosine of 0.99998 to fp32
//! (docs/EVALUATION.md).
//!
//! OpenVINO is reached through its C API, loaded at run time from the five libraries
//! `scripts/setup-models.py` provisions (`openvino/` in the model folder), as ONNX Runtime is:
//! nothing is linked at build time and a missing library is an error, not a crash. The few
//! calls needed are bound here by hand (a dozen functions); every `unsafe` block of the crate
//! is in this file, each with what makes it sound. Tokenizing (the model's `tokenizer.json`,
//! as fastembed configures it: truncation at 256 tokens, padding to the longest text of a run)
//! and mean pooling, which fastembed does for the ONNX Runtime variants, are done here.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{load_tokenizer, Embedder, ModelVariant, DIMENSIONS};
use crate::error::{Error, Result};

/// The folder of the OpenVINO libraries inside the model folder.
pub const OPENVINO_DIR: &str = "openvino";
/// The C API library (it loads the others from its own folder).
pub const OPENVINO_C_LIBRARY: &str = "libopenvino_c.so.2641";

/// `ov_element_type_e::I64` of the C API.
const ELEMENT_I64: c_int = 10;

/// `ov_shape_t`: a rank and its dimensions.
#[repr(C)]
struct OvShape {
    rank: i64,
    dims: *mut i64,
}

/// `ov_property_t` as `ov_core_compile_model_props` takes it: a key and its value.
#[repr(C)]
struct OvProperty {
    key: *const c_char,
    value: *const c_char,
}

type Handle = *mut c_void;
type Status = c_int;

/// The C API functions used, resolved once from the library.
struct Api {
    core_create: unsafe extern "C" fn(*mut Handle) -> Status,
    core_read_model:
        unsafe extern "C" fn(Handle, *const c_char, *const c_char, *mut Handle) -> Status,
    core_compile_model_props: unsafe extern "C" fn(
        Handle,
        Handle,
        *const c_char,
        usize,
        *const OvProperty,
        *mut Handle,
    ) -> Status,
    compiled_get_property: unsafe extern "C" fn(Handle, *const c_char, *mut *mut c_char) -> Status,
    compiled_create_request: unsafe extern "C" fn(Handle, *mut Handle) -> Status,
    shape_create: unsafe extern "C" fn(i64, *const i64, *mut OvShape) -> Status,
    shape_free: unsafe extern "C" fn(*mut OvShape) -> Status,
    tensor_from_host: unsafe extern "C" fn(c_int, OvShape, *mut c_void, *mut Handle) -> Status,
    tensor_shape: unsafe extern "C" fn(Handle, *mut OvShape) -> Status,
    tensor_data: unsafe extern "C" fn(Handle, *mut *mut c_void) -> Status,
    tensor_free: unsafe extern "C" fn(Handle),
    request_set_tensor: unsafe extern "C" fn(Handle, *const c_char, Handle) -> Status,
    request_infer: unsafe extern "C" fn(Handle) -> Status,
    request_output: unsafe extern "C" fn(Handle, usize, *mut Handle) -> Status,
    request_free: unsafe extern "C" fn(Handle),
    compiled_free: unsafe extern "C" fn(Handle),
    model_free: unsafe extern "C" fn(Handle),
    free: unsafe extern "C" fn(*mut c_char),
    error_info: unsafe extern "C" fn(Status) -> *const c_char,
    /// Keeps the library (and so every function above) loaded.
    _library: libloading::Library,
}

impl Api {
    fn load(path: &Path) -> std::result::Result<Api, String> {
        // SAFETY: loading a library runs its initialisers; this is OpenVINO's C API from the
        // sha256-checked wheel that setup-models.py provisioned, whose initialisers only set
        // up its own state.
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("loading {}: {e}", path.display()))?;
        macro_rules! symbol {
            ($name:literal) => {
                // SAFETY: the symbol is the C API function of that name, declared above with
                // the signature of OpenVINO's c_api headers (2024.0 and later).
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: {e}", $name))?
            };
        }
        Ok(Api {
            core_create: symbol!("ov_core_create"),
            core_read_model: symbol!("ov_core_read_model"),
            core_compile_model_props: symbol!("ov_core_compile_model_props"),
            compiled_get_property: symbol!("ov_compiled_model_get_property"),
            compiled_create_request: symbol!("ov_compiled_model_create_infer_request"),
            shape_create: symbol!("ov_shape_create"),
            shape_free: symbol!("ov_shape_free"),
            tensor_from_host: symbol!("ov_tensor_create_from_host_ptr"),
            tensor_shape: symbol!("ov_tensor_get_shape"),
            tensor_data: symbol!("ov_tensor_data"),
            tensor_free: symbol!("ov_tensor_free"),
            request_set_tensor: symbol!("ov_infer_request_set_tensor"),
            request_infer: symbol!("ov_infer_request_infer"),
            request_output: symbol!("ov_infer_request_get_output_tensor_by_index"),
            request_free: symbol!("ov_infer_request_free"),
            compiled_free: symbol!("ov_compiled_model_free"),
            model_free: symbol!("ov_model_free"),
            free: symbol!("ov_free"),
            error_info: symbol!("ov_get_error_info"),
            _library: library,
        })
    }

    /// `Ok` for status 0, else what failed and OpenVINO's words for the status.
    fn check(&self, status: Status, what: &str) -> std::result::Result<(), String> {
        if status == 0 {
            return Ok(());
        }
        // SAFETY: ov_get_error_info returns a pointer to a static string for any status.
        let info = unsafe { (self.error_info)(status) };
        let words = if info.is_null() {
            String::new()
        } else {
            // SAFETY: non-null, and a static NUL-terminated string (see above).
            unsafe { CStr::from_ptr(info) }
                .to_string_lossy()
                .into_owned()
        };
        Err(format!("{what}: status {status} {words}"))
    }
}

/// OpenVINO for the whole process: its C API and one core, made at first use and never freed
/// or unloaded. Freeing the core unloads the CPU plugin, and dropping the library unloads
/// OpenVINO and TBB, while TBB's worker threads can still be running in that code: a CLI run
/// that dropped its embedder at the end died by SIGSEGV now and then, after its last line
/// (seen in CI). Kept loaded, those threads end with the process.
struct Runtime {
    api: Api,
    /// `ov_core_t`; models are read and compiled under this lock.
    core: Mutex<Core>,
}

/// An `ov_core_t` handle.
struct Core(Handle);

// SAFETY: the core is only used under the runtime's mutex; OpenVINO's core may be used from
// any thread.
unsafe impl Send for Core {}

/// The runtime loaded from `library`, loading it (and making its core) on first use.
fn runtime(library: &Path) -> std::result::Result<&'static Runtime, String> {
    static LOADED: Mutex<Vec<(PathBuf, &'static Runtime)>> = Mutex::new(Vec::new());
    let mut loaded = LOADED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, runtime)) = loaded.iter().find(|(path, _)| path == library) {
        return Ok(runtime);
    }
    let api = Api::load(library)?;
    let mut core: Handle = std::ptr::null_mut();
    // SAFETY: `core` is an out-parameter the call fills in.
    api.check(
        unsafe { (api.core_create)(&mut core) },
        "creating the OpenVINO core",
    )?;
    let runtime: &'static Runtime = Box::leak(Box::new(Runtime {
        api,
        core: Mutex::new(Core(core)),
    }));
    loaded.push((library.to_path_buf(), runtime));
    Ok(runtime)
}

/// The compiled model and its one inference request: OpenVINO objects, used under the
/// embedder's lock only.
struct Session {
    api: &'static Api,
    model: Handle,
    compiled: Handle,
    request: Handle,
}

// SAFETY: the handles are only used while the embedder's mutex is held, so never from two
// threads at once; OpenVINO objects may move between threads.
unsafe impl Send for Session {}

impl Drop for Session {
    fn drop(&mut self) {
        // SAFETY: each handle was created by the matching create call, is non-null only if
        // that succeeded, and is freed once, in the reverse order of creation. The core and
        // the library stay (see [`Runtime`]).
        unsafe {
            if !self.request.is_null() {
                (self.api.request_free)(self.request);
            }
            if !self.compiled.is_null() {
                (self.api.compiled_free)(self.compiled);
            }
            if !self.model.is_null() {
                (self.api.model_free)(self.model);
            }
        }
    }
}

/// Whether this CPU computes bf16 natively (AMX tiles or AVX512-BF16), from `/proc/cpuinfo`.
pub fn cpu_has_bf16() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|info| {
        info.lines()
            .filter(|l| l.starts_with("flags"))
            .take(1)
            .any(|l| {
                l.split_whitespace()
                    .any(|f| f == "amx_bf16" || f == "avx512_bf16")
            })
    })
}

/// The precision OpenVINO is asked to compute in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// bf16 products accumulated in fp32: AMX tiles or AVX512-BF16.
    Bf16,
    /// fp32 throughout: the fallback on CPUs without bf16.
    F32,
}

impl Precision {
    /// bf16 where [`cpu_has_bf16`], else fp32.
    pub fn for_this_cpu() -> Precision {
        if cpu_has_bf16() {
            Precision::Bf16
        } else {
            Precision::F32
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::F32 => "f32",
        }
    }
}

impl Session {
    fn open(
        dir: &Path,
        model_path: &Path,
        threads: usize,
        precision: Precision,
    ) -> std::result::Result<(Session, String), String> {
        let runtime = runtime(&dir.join(OPENVINO_DIR).join(OPENVINO_C_LIBRARY))?;
        let mut s = Session {
            api: &runtime.api,
            model: std::ptr::null_mut(),
            compiled: std::ptr::null_mut(),
            request: std::ptr::null_mut(),
        };
        let cstr = |t: &str| CString::new(t).map_err(|e| e.to_string());
        let model_path = cstr(&model_path.to_string_lossy())?;
        let precision = precision.hint();
        let (threads, hint, pinning) = (cstr(&threads.to_string())?, cstr("LATENCY")?, cstr("NO")?);
        let precision_c = cstr(precision)?;
        let keys = [
            cstr("INFERENCE_PRECISION_HINT")?,
            cstr("INFERENCE_NUM_THREADS")?,
            cstr("PERFORMANCE_HINT")?,
            cstr("ENABLE_CPU_PINNING")?,
        ];
        let values = [&precision_c, &threads, &hint, &pinning];
        let props: Vec<OvProperty> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| OvProperty {
                key: k.as_ptr(),
                value: v.as_ptr(),
            })
            .collect();
        let device = cstr("CPU")?;
        let precision_key = cstr("INFERENCE_PRECISION_HINT")?;
        let mut chosen: *mut c_char = std::ptr::null_mut();
        let core = runtime
            .core
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // SAFETY: every pointer passed is valid for the call (out-parameters point at fields
        // of `s` or locals; strings are NUL-terminated and outlive the calls); the model path
        // names the fp32 export whose weights file lies beside it.
        unsafe {
            s.api.check(
                (s.api.core_read_model)(
                    core.0,
                    model_path.as_ptr(),
                    std::ptr::null(),
                    &mut s.model,
                ),
                "reading the model",
            )?;
            s.api.check(
                (s.api.core_compile_model_props)(
                    core.0,
                    s.model,
                    device.as_ptr(),
                    props.len(),
                    props.as_ptr(),
                    &mut s.compiled,
                ),
                "compiling the model for the CPU",
            )?;
            s.api.check(
                (s.api.compiled_create_request)(s.compiled, &mut s.request),
                "creating an inference request",
            )?;
            if (s.api.compiled_get_property)(s.compiled, precision_key.as_ptr(), &mut chosen) == 0
                && !chosen.is_null()
            {
                let got = CStr::from_ptr(chosen).to_string_lossy().into_owned();
                (s.api.free)(chosen);
                return Ok((s, got));
            }
        }
        Ok((s, precision.to_string()))
    }

    /// Run the model on one padded batch (`rows` texts of `cols` tokens): the last hidden
    /// state, `rows × cols × DIMENSIONS` values.
    fn run(
        &mut self,
        ids: &mut [i64],
        mask: &mut [i64],
        types: &mut [i64],
        rows: usize,
        cols: usize,
    ) -> std::result::Result<Vec<f32>, String> {
        let dims = [rows as i64, cols as i64];
        for (name, data) in [
            ("input_ids", &mut *ids),
            ("attention_mask", &mut *mask),
            ("token_type_ids", &mut *types),
        ] {
            if data.len() != rows * cols {
                return Err(format!("{name}: {} values for {rows}×{cols}", data.len()));
            }
            let name = CString::new(name).map_err(|e| e.to_string())?;
            let mut shape = OvShape {
                rank: 0,
                dims: std::ptr::null_mut(),
            };
            let mut tensor: Handle = std::ptr::null_mut();
            // SAFETY: `dims` holds `rank` values; the tensor wraps `data` (rows × cols i64,
            // checked above) without copying and is freed before `data` can move or be
            // dropped: the request copies what it needs when the tensor is set, and the
            // inference below runs before this function returns.
            unsafe {
                self.api.check(
                    (self.api.shape_create)(2, dims.as_ptr(), &mut shape),
                    "shape",
                )?;
                let made = (self.api.tensor_from_host)(
                    ELEMENT_I64,
                    OvShape {
                        rank: shape.rank,
                        dims: shape.dims,
                    },
                    data.as_mut_ptr().cast(),
                    &mut tensor,
                );
                (self.api.shape_free)(&mut shape);
                self.api.check(made, "input tensor")?;
                let set = (self.api.request_set_tensor)(self.request, name.as_ptr(), tensor);
                (self.api.tensor_free)(tensor);
                self.api.check(set, "setting an input")?;
            }
        }
        let mut out: Handle = std::ptr::null_mut();
        let mut shape = OvShape {
            rank: 0,
            dims: std::ptr::null_mut(),
        };
        let mut data: *mut c_void = std::ptr::null_mut();
        // SAFETY: the inputs set above stay alive (the host buffers are borrowed by this
        // call); the output tensor and its shape are read, copied out and freed here.
        unsafe {
            self.api
                .check((self.api.request_infer)(self.request), "inference")?;
            self.api.check(
                (self.api.request_output)(self.request, 0, &mut out),
                "the output",
            )?;
            let shaped = (self.api.tensor_shape)(out, &mut shape);
            let got = (self.api.tensor_data)(out, &mut data);
            let result = (|| {
                self.api.check(shaped, "the output's shape")?;
                self.api.check(got, "the output's data")?;
                let rank = usize::try_from(shape.rank).map_err(|e| e.to_string())?;
                let dims = std::slice::from_raw_parts(shape.dims, rank);
                let want = [rows as i64, cols as i64, DIMENSIONS as i64];
                if dims != want {
                    return Err(format!("output shape {dims:?}, expected {want:?}"));
                }
                let n = rows * cols * DIMENSIONS;
                Ok(std::slice::from_raw_parts(data.cast::<f32>(), n).to_vec())
            })();
            (self.api.shape_free)(&mut shape);
            (self.api.tensor_free)(out);
            result
        }
    }
}

/// A loaded [`ModelVariant::Bf16`]. `embed` takes `&self` and is safe to call from any
/// thread; calls are serialized, one inference already uses every core.
pub struct OpenVinoEmbedder {
    session: Mutex<Session>,
    tokenizer: tokenizers::Tokenizer,
    batch: usize,
    dir: PathBuf,
    precision: String,
    variant: ModelVariant,
}

impl std::fmt::Debug for OpenVinoEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenVinoEmbedder")
            .field("dir", &self.dir)
            .field("precision", &self.precision)
            .field("batch", &self.batch)
            .finish()
    }
}

impl OpenVinoEmbedder {
    /// Load the model from `dir` (a folder as provisioned by `scripts/setup-models.py`);
    /// [`Embedder::embed`] runs it on up to `batch` texts at a time (at least 1), with as many
    /// threads as the machine has cores, in bf16 where the CPU has it, else in fp32.
    pub fn load(dir: &Path, batch: usize) -> Result<Self> {
        Self::load_in(dir, batch, Precision::for_this_cpu())
    }

    /// [`OpenVinoEmbedder::load`] computing in `precision` (fp32 on any CPU; bf16 where the
    /// CPU lacks it is emulated by OpenVINO, slowly, or refused by it).
    pub fn load_in(dir: &Path, batch: usize, precision: Precision) -> Result<Self> {
        Self::load_variant(dir, ModelVariant::Bf16, batch, precision)
    }

    /// [`OpenVinoEmbedder::load_in`] for another model OpenVINO runs (see
    /// [`ModelVariant::on_openvino`]): its ONNX file, tokenizer, window and prefixes.
    pub fn load_variant(
        dir: &Path,
        variant: ModelVariant,
        batch: usize,
        precision: Precision,
    ) -> Result<Self> {
        let err = |reason: String| Error::ModelLoad {
            dir: dir.to_path_buf(),
            reason,
        };
        for needed in [
            variant.file_name().to_string(),
            format!("{OPENVINO_DIR}/{OPENVINO_C_LIBRARY}"),
        ] {
            if !dir.join(&needed).is_file() {
                return Err(err(format!(
                    "{needed} (model variant {variant}) is missing: run `make models` \
                     (scripts/setup-models.py)"
                )));
            }
        }
        let mut tokenizer = load_tokenizer(&variant.tokenizer_dir(dir))?;
        let (pad_token, pad_id) = ["[PAD]", "<pad>"]
            .iter()
            .find_map(|t| tokenizer.token_to_id(t).map(|id| (t.to_string(), id)))
            .unwrap_or_else(|| ("[PAD]".into(), 0));
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: variant.window_tokens(),
                ..Default::default()
            }))
            .map_err(|e| err(e.to_string()))?;
        tokenizer.with_padding(Some(tokenizers::PaddingParams {
            strategy: tokenizers::PaddingStrategy::BatchLongest,
            pad_id,
            pad_token,
            ..Default::default()
        }));
        let threads = std::thread::available_parallelism().map_or(2, usize::from);
        let model = dir.join(variant.file_name());
        let (session, precision) = Session::open(dir, &model, threads, precision).map_err(err)?;
        tracing::info!(precision = %precision, threads, %variant, "embedding model compiled by OpenVINO");
        Ok(OpenVinoEmbedder {
            session: Mutex::new(session),
            tokenizer,
            batch: batch.max(1),
            dir: dir.to_path_buf(),
            precision,
            variant,
        })
    }

    /// Embed `texts`, each behind `prefix`.
    fn embed_with(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let prefixed: Vec<String>;
        let texts: Vec<&str> = if prefix.is_empty() {
            texts.to_vec()
        } else {
            prefixed = texts.iter().map(|t| format!("{prefix}{t}")).collect();
            prefixed.iter().map(String::as_str).collect()
        };
        super::embed_longest_first(&texts, |sorted| {
            let mut session = self
                .session
                .lock()
                .map_err(|_| Error::Embed("embedding model lock poisoned".into()))?;
            let mut vectors = Vec::with_capacity(sorted.len());
            for run in sorted.chunks(self.batch) {
                vectors.extend(self.run(&mut session, run)?);
            }
            Ok(vectors)
        })
    }

    /// One run of texts of similar length: tokenized, padded, inferred, mean-pooled over the
    /// real tokens and L2-normalised.
    fn run(&self, session: &mut Session, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| Error::Embed(format!("tokenizing: {e}")))?;
        let rows = encodings.len();
        let cols = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(rows * cols);
        let mut mask = Vec::with_capacity(rows * cols);
        for e in &encodings {
            ids.extend(e.get_ids().iter().map(|&i| i64::from(i)));
            mask.extend(e.get_attention_mask().iter().map(|&m| i64::from(m)));
        }
        let mut types = vec![0i64; rows * cols];
        let hidden = session
            .run(&mut ids, &mut mask, &mut types, rows, cols)
            .map_err(Error::Embed)?;
        let mut out = Vec::with_capacity(rows);
        for r in 0..rows {
            let mut v = vec![0f32; DIMENSIONS];
            let mut n = 0f32;
            for c in 0..cols {
                if mask.get(r * cols + c) != Some(&1) {
                    continue;
                }
                n += 1.0;
                let at = (r * cols + c) * DIMENSIONS;
                let token = hidden.get(at..at + DIMENSIONS).unwrap_or_default();
                for (acc, x) in v.iter_mut().zip(token) {
                    *acc += x;
                }
            }
            // The mean over the real tokens, then unit length: dividing by their count is
            // undone by the normalisation, so only the sum's length matters.
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            if n == 0.0 || norm == 0.0 {
                return Err(Error::Embed("a text gave no tokens to pool".into()));
            }
            for x in &mut v {
                *x /= norm;
            }
            out.push(v);
        }
        Ok(out)
    }
}

impl Embedder for OpenVinoEmbedder {
    /// L2-normalised 384-dimensional vectors, `batch` texts of similar length per model run,
    /// in the callers' order. Blocks while another thread is embedding.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_with(self.variant.prefixes().1, texts)
    }

    fn embed_query(&self, query: &str) -> Result<Vec<f32>> {
        self.embed_with(self.variant.prefixes().0, &[query])?
            .pop()
            .ok_or_else(|| Error::Embed("no vector for the query".into()))
    }

    fn dimensions(&self) -> usize {
        DIMENSIONS
    }

    fn max_tokens(&self) -> usize {
        self.variant.window_tokens()
    }

    fn describe(&self) -> String {
        let path = if self.precision == "bf16" {
            "bf16 (AMX/AVX512-BF16 kernels)"
        } else if cpu_has_bf16() {
            "fp32 (asked for)"
        } else {
            "fp32 (this CPU has no bf16)"
        };
        format!("{} on OpenVINO, computing in {path}", self.variant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FastEmbedder;

    /// The same model as the ONNX Runtime variants: its vectors point where theirs do, each
    /// text nearest to itself, and a text's vector does not depend on its batch.
    #[test]
    fn openvino_vectors_agree_with_onnx_runtime_and_with_themselves() {
        let dir = crate::find_model_dir(None).expect("model provisioned: run `make models`");
        let ov = OpenVinoEmbedder::load(&dir, 16).unwrap();
        let ort = FastEmbedder::load(&dir, ModelVariant::BlockInt8, 16).unwrap();
        assert!(
            ov.describe().starts_with("bf16 on OpenVINO"),
            "{}",
            ov.describe()
        );
        let long = "The ferry to the outer islands leaves at dawn in summer. ".repeat(30);
        let texts = [
            "Who kept the lighthouse on Skerry Point?",
            "Quarterly revenue rose 12 % to EUR 4,2 Mio.; see § 3.1 (Anhang B).",
            "Ünïcödé naïve café — 東京 ＡＢＣ 🙂",
            long.as_str(),
            "x",
        ];
        let a = ov.embed(&texts).unwrap();
        let b = ort.embed(&texts).unwrap();
        let dot = |x: &[f32], y: &[f32]| -> f32 { x.iter().zip(y).map(|(p, q)| p * q).sum() };
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(x.len(), DIMENSIONS);
            assert!((dot(x, x) - 1.0).abs() < 1e-4, "unit length");
            assert!(dot(x, y) > 0.995, "text {i}: cosine {}", dot(x, y));
            let alone = ov.embed(&[texts[i]]).unwrap().remove(0);
            assert!(dot(x, &alone) > 0.9999, "text {i} moves with its batch");
        }
        assert!(ov.embed(&[]).unwrap().is_empty());
    }

    /// The fallback of CPUs without bf16: the same model in fp32, which the summary names,
    /// gives the same vectors within bf16's rounding.
    #[test]
    fn the_fp32_fallback_gives_the_same_vectors_and_says_so() {
        let dir = crate::find_model_dir(None).expect("model provisioned: run `make models`");
        let f32 = OpenVinoEmbedder::load_in(&dir, 16, Precision::F32).unwrap();
        assert!(
            f32.describe().contains("computing in fp32"),
            "{}",
            f32.describe()
        );
        let ours = OpenVinoEmbedder::load(&dir, 16).unwrap();
        let texts = [
            "Who kept the lighthouse on Skerry Point?",
            "Quarterly revenue rose 12 % to EUR 4,2 Mio.; see § 3.1 (Anhang B).",
        ];
        let a = f32.embed(&texts).unwrap();
        let b = ours.embed(&texts).unwrap();
        for (x, y) in a.iter().zip(&b) {
            let cos: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            assert!(cos > 0.999, "fp32 against this CPU's path: cosine {cos}");
        }
    }

    /// Embedders come and go (a CLI run drops its one at the end, tests load many) while
    /// OpenVINO stays: one runtime per library for the process, and the process lives on
    /// after each drop with TBB's threads still around (unloading OpenVINO here used to
    /// kill the process by SIGSEGV now and then).
    #[test]
    fn openvino_stays_loaded_while_embedders_come_and_go() {
        let dir = crate::find_model_dir(None).expect("model provisioned: run `make models`");
        let library = dir.join(OPENVINO_DIR).join(OPENVINO_C_LIBRARY);
        let first: *const Runtime = runtime(&library).unwrap();
        let mut last = Vec::new();
        for round in 0..4 {
            let embedder = OpenVinoEmbedder::load(&dir, 4).unwrap();
            let text = format!("round {round}: the ferry leaves at dawn");
            last = embedder.embed(&[text.as_str()]).unwrap().remove(0);
            drop(embedder);
            // TBB's workers spin for a while after a run: give them the time to touch
            // whatever an unload would have taken away.
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert_eq!(last.len(), DIMENSIONS);
        assert!(std::ptr::eq(first, runtime(&library).unwrap()));
    }
}
