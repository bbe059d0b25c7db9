#!/usr/bin/env python3
"""The LlamaIndex retrieval peer: what a Python user would build instead of `ingest`.

LlamaIndex with hybrid BM25 + dense retrieval fused by reciprocal rank, 256-token chunks, the
same MiniLM model as ingest, archives unpacked by hand:

- archives (zip, tar, tar.gz/tgz, tar.bz2, tar.xz, single-file .gz) are unpacked by hand,
  recursively, into a temporary folder; every unpacked file keeps an ingest-style locator
  (`archives/x.zip!/inner/path.md`, `a.zip!/b.tar.gz!/c.txt`, `f.txt.gz!/f.txt`);
- every file is read by LlamaIndex's SimpleDirectoryReader with its default file extractors
  (llama-index-readers-file: PDF per page via pypdf, docx, pptx, xls/xlsx, csv, epub, ...),
  plus the package's own HTMLTagReader for .html/.htm (text of <body>); a file with no
  extractor is read as UTF-8 text, as SimpleDirectoryReader does, unless it is binary (a NUL
  byte in its first 8 KiB), which is skipped; files whose reader fails, needs a package that
  is not installed (images need torch/transformers, audio/video whisper) or gives no text are
  skipped and counted;
- SentenceSplitter(chunk_size=256, chunk_overlap=20) counting tokens with the model's own
  tokenizer (tokenizer.json), metadata-aware as LlamaIndex does (the file path and page label
  are part of what is embedded and what BM25 indexes);
- dense: a BaseEmbedding running the fp32 ONNX export of all-MiniLM-L6-v2 that ingest ships
  (.models/all-minilm-l6-v2-int8/fp32/model.onnx) on ONNX Runtime (CPU): truncation at 256
  tokens, padding to the longest text of a batch, mean pooling over the attention mask, L2
  normalisation, batches of 32; VectorStoreIndex on the default SimpleVectorStore;
- keyword: BM25Retriever (llama-index-retrievers-bm25, bm25s with the English stemmer);
- fusion: QueryFusionRetriever(mode="reciprocal_rerank", num_queries=1: no LLM query
  generation) over the vector retriever (top 10) and BM25 (top 10), top 10.

The built index is persisted under WORK_DIR (index/ and bm25/ as LlamaIndex persists them, plus
manifest.json) so questions can be asked again without embedding again.

Usage:
  llamaindex_peer.py --corpus DIR --work WORK_DIR [--out OUT_DIR] [--rebuild] QUESTIONS.tsv...

Writes OUT_DIR/<name of the question file without .tsv>.jsonl: one line per question, in file
order: {"question": "...", "hits": ["<locator>[#page=N]", ...]} (at most 10 hits, best first).
"""
import argparse
import gzip
import hashlib
import json
import logging
import os
import shutil
import statistics
import sys
import tarfile
import tempfile
import time
import warnings
import zipfile
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any, List

import numpy as np

REPO = Path(__file__).resolve().parents[2]
MODEL_DIR = REPO / ".models" / "all-minilm-l6-v2-int8"
MAX_TOKENS = 256
CHUNK_SIZE = 256
CHUNK_OVERLAP = 20
TOP_K = 10
EMBED_BATCH = 32
MANIFEST_VERSION = 1

# Unpacking limits (the corpus may hold hostile archives).
MAX_DEPTH = 8
MAX_MEMBER_BYTES = 1 << 30
MAX_ARCHIVE_TOTAL = 4 << 30

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tbz", ".tar.xz", ".txz")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Archives, unpacked by hand
# --------------------------------------------------------------------------------------------

def archive_kind(name: str):
    n = name.lower()
    if n.endswith(".zip"):
        return "zip"
    if n.endswith(TAR_SUFFIXES):
        return "tar"
    if n.endswith(".gz"):
        return "gz"
    return None


def safe_member(name: str):
    """The member's path as safe relative parts, or None (absolute, `..`, empty)."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".", "/")]
    if not parts or any(p == ".." for p in parts):
        return None
    return parts


class Unpacker:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.n = 0
        self.archives_ok = 0
        self.archives_failed: List[str] = []
        self.members_skipped: List[str] = []

    def _dir(self) -> Path:
        self.n += 1
        d = self.tmp / f"a{self.n}"
        d.mkdir()
        return d

    def expand(self, path: Path, locator: str, depth: int = 0):
        """Yield (real path, locator) of every leaf file under `path` (a file)."""
        kind = archive_kind(path.name)
        if kind is None:
            yield path, locator
            return
        if depth >= MAX_DEPTH:
            self.archives_failed.append(f"{locator} (nested too deep)")
            return
        try:
            members = list(self._unpack(kind, path, locator))
        except Exception as e:  # corrupt or unsupported archive
            self.archives_failed.append(f"{locator} ({type(e).__name__}: {e})")
            return
        self.archives_ok += 1
        for real, member in members:
            yield from self.expand(real, f"{locator}!/{member}", depth + 1)

    def _unpack(self, kind: str, path: Path, locator: str):
        out = self._dir()
        if kind == "gz":
            name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
            name = name or "data"
            dest = out / name
            with gzip.open(path, "rb") as src, open(dest, "wb") as dst:
                copied = 0
                while True:
                    buf = src.read(1 << 20)
                    if not buf:
                        break
                    copied += len(buf)
                    if copied > MAX_MEMBER_BYTES:
                        raise ValueError("member too large")
                    dst.write(buf)
            yield dest, name
            return
        if kind == "zip":
            with zipfile.ZipFile(path) as z:
                entries = [(i.filename, i.file_size, lambda i=i: z.open(i))
                           for i in z.infolist() if not i.is_dir()]
                yield from self._copy_members(entries, out, locator)
            return
        with tarfile.open(path, "r:*") as t:
            entries = [(m.name, m.size, lambda m=m: t.extractfile(m))
                       for m in t if m.isfile()]
            yield from self._copy_members(entries, out, locator)

    def _copy_members(self, entries, out: Path, locator: str):
        """Copy each member (name, size, opener) of one archive into `out` under the size
        limits, skipping (and recording) unsafe names, oversized and unreadable members."""
        total = 0
        for name, size, opener in entries:
            parts = safe_member(name)
            if parts is None:
                self.members_skipped.append(f"{locator}!/{name} (unsafe name)")
                continue
            if size > MAX_MEMBER_BYTES or total + size > MAX_ARCHIVE_TOTAL:
                self.members_skipped.append(f"{locator}!/{name} (too large)")
                continue
            dest = out.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                with opener() as src, open(dest, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            except Exception as e:  # encrypted, bad CRC, unsupported method
                dest.unlink(missing_ok=True)
                self.members_skipped.append(f"{locator}!/{name} ({type(e).__name__}: {e})")
                continue
            total += size
            yield dest, "/".join(parts)


def corpus_files(corpus: Path):
    for root, dirs, files in os.walk(corpus):
        dirs.sort()
        for f in sorted(files):
            p = Path(root) / f
            if p.is_file():
                yield p, p.relative_to(corpus).as_posix()


def sha256_file(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for buf in iter(lambda: f.read(1 << 20), b""):
            h.update(buf)
    return h.hexdigest()


# --------------------------------------------------------------------------------------------
# The model: all-MiniLM-L6-v2, fp32 ONNX export, on ONNX Runtime
# --------------------------------------------------------------------------------------------

def load_tokenizer(truncate: bool):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    if truncate:
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest text of a batch
    else:
        tok.no_truncation()
        tok.no_padding()
    return tok


def make_embedding(threads: int):
    import onnxruntime as ort
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from pydantic import PrivateAttr

    class MiniLMOnnxEmbedding(BaseEmbedding):
        """all-MiniLM-L6-v2 (fp32 ONNX) on ONNX Runtime, mean pooled, L2-normalised."""

        _session: Any = PrivateAttr()
        _tok: Any = PrivateAttr()
        _input_names: Any = PrivateAttr()
        _seconds: float = PrivateAttr(default=0.0)
        _texts: int = PrivateAttr(default=0)

        @property
        def seconds(self) -> float:
            return self._seconds

        @property
        def texts(self) -> int:
            return self._texts

        def __init__(self, model_path: str, threads: int, **kw):
            super().__init__(model_name="all-MiniLM-L6-v2 fp32 onnx", **kw)
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            self._session = ort.InferenceSession(
                model_path, so, providers=["CPUExecutionProvider"])
            self._input_names = {i.name for i in self._session.get_inputs()}
            self._tok = load_tokenizer(truncate=True)

        def embed(self, texts: List[str]) -> np.ndarray:
            t0 = time.perf_counter()
            enc = self._tok.encode_batch(list(texts))
            ids = np.array([e.ids for e in enc], dtype=np.int64)
            mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = self._session.run(None, feeds)[0]  # (batch, seq, 384)
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
            pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            self._seconds += time.perf_counter() - t0
            before = self._texts
            self._texts += len(texts)
            if self._texts // 1000 > before // 1000:
                log(f"  embedded {self._texts} texts, {self._texts / self._seconds:.1f}/s")
            return pooled

        def _get_query_embedding(self, query: str) -> List[float]:
            return self.embed([query])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> List[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> List[float]:
            return self.embed([text])[0].tolist()

        def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
            return self.embed(texts).tolist()

    model = MODEL_DIR / "fp32" / "model.onnx"
    return MiniLMOnnxEmbedding(str(model), threads, embed_batch_size=EMBED_BATCH)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------

def looks_binary(p: Path) -> bool:
    with open(p, "rb") as f:
        return b"\0" in f.read(8192)


def read_files(corpus: Path, tmp: Path):
    from llama_index.core import SimpleDirectoryReader
    from llama_index.readers.file import HTMLTagReader

    default_exts = set(SimpleDirectoryReader.supported_suffix_fn().keys())
    extractors = {".html": HTMLTagReader(tag="body"), ".htm": HTMLTagReader(tag="body")}
    unpacker = Unpacker(tmp)
    documents = []
    read, skipped, files = [], [], []
    for path, rel in corpus_files(corpus):
        for real, locator in unpacker.expand(path, rel):
            ext = real.suffix.lower() or "(none)"
            info = {"locator": locator, "sha256": sha256_file(real)}
            files.append(info)
            if real.stat().st_size == 0:
                skipped.append((locator, ext, "empty file"))
                continue
            if ext not in default_exts and ext not in extractors and looks_binary(real):
                skipped.append((locator, ext, "binary, no reader"))
                continue
            meta = {"file_path": locator, "file_name": real.name}
            reader = SimpleDirectoryReader(
                input_files=[str(real)],
                file_extractor=extractors,
                file_metadata=lambda _p, meta=meta: dict(meta),
                raise_on_error=True,
            )
            try:
                docs = reader.load_data()
            except ImportError as e:
                skipped.append((locator, ext, f"reader needs a package: {str(e)[:120]}"))
                continue
            except Exception as e:
                cause = e.__cause__ or e
                skipped.append((locator, ext, f"reader failed: {type(cause).__name__}: {str(cause)[:120]}"))
                continue
            is_pdf = ext == ".pdf"
            kept = []
            for i, d in enumerate(docs):
                d.metadata["peer_locator"] = locator
                if is_pdf:  # PDFReader: one Document per page, in physical page order
                    d.metadata["peer_page"] = i + 1
                for key in ("peer_locator", "peer_page"):
                    d.excluded_embed_metadata_keys.append(key)
                    d.excluded_llm_metadata_keys.append(key)
                if d.text and d.text.strip():
                    kept.append(d)
            if not kept:
                skipped.append((locator, ext, "no text"))
                continue
            info["documents"] = len(kept)
            read.append(locator)
            documents.extend(kept)
    return documents, read, skipped, files, unpacker


# --------------------------------------------------------------------------------------------
# Build and query
# --------------------------------------------------------------------------------------------

def configure_settings():
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # per-font and per-object notes
    warnings.filterwarnings("ignore", category=UserWarning, module="openpyxl")
    logging.getLogger("llama_index").setLevel(logging.WARNING)
    from llama_index.core import Settings
    from llama_index.core.llms import MockLLM

    split_tok = load_tokenizer(truncate=False)
    tokenize = lambda text: split_tok.encode(text, add_special_tokens=False).ids  # noqa: E731
    Settings.tokenizer = tokenize  # never tiktoken (it would download its vocabulary)
    Settings.llm = MockLLM()  # no LLM anywhere: num_queries=1 never asks one
    return tokenize


def build(corpus: Path, work: Path, threads: int):
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    tokenize = configure_settings()
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="peer-unpack-") as tmp:
        t0 = time.perf_counter()
        documents, read, skipped, files, unpacker = read_files(corpus, Path(tmp))
        read_s = time.perf_counter() - t0
    log(f"read {len(read)} files ({len(documents)} documents) in {read_s:.1f}s; skipped {len(skipped)}")

    t0 = time.perf_counter()
    splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP, tokenizer=tokenize)
    nodes = splitter.get_nodes_from_documents(documents, show_progress=False)
    nodes = [n for n in nodes if n.get_content().strip()]
    split_s = time.perf_counter() - t0
    log(f"{len(nodes)} chunks in {split_s:.1f}s; embedding (batches of {EMBED_BATCH}, {threads} threads)")

    embed_model = make_embedding(threads)
    t0 = time.perf_counter()
    index = VectorStoreIndex(nodes, embed_model=embed_model, show_progress=False,
                             insert_batch_size=4096)
    index_s = time.perf_counter() - t0
    embed_s = embed_model.seconds
    log(f"embedded {embed_model.texts} chunks in {embed_s:.1f}s ({embed_model.texts / max(embed_s, 1e-9):.1f} chunks/s)")

    t0 = time.perf_counter()
    bm25 = BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=TOP_K)
    bm25_s = time.perf_counter() - t0

    if work.exists():
        for sub in ("index", "bm25"):
            shutil.rmtree(work / sub, ignore_errors=True)
        (work / "manifest.json").unlink(missing_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    index.storage_context.persist(persist_dir=str(work / "index"))
    (work / "bm25").mkdir()
    bm25.persist(str(work / "bm25"), show_progress=False)
    persist_s = time.perf_counter() - t0

    by_ext = Counter(ext for _, ext, _ in skipped)
    manifest = {
        "version": MANIFEST_VERSION,
        "corpus": str(corpus.resolve()),
        "model": str(MODEL_DIR / "fp32" / "model.onnx"),
        "chunk_size": CHUNK_SIZE,
        "chunk_overlap": CHUNK_OVERLAP,
        "files_read": len(read),
        "documents": len(documents),
        "files_skipped": len(skipped),
        "skipped_by_extension": dict(sorted(by_ext.items())),
        "skipped": [{"locator": l, "ext": e, "reason": r} for l, e, r in skipped],
        "archives_unpacked": unpacker.archives_ok,
        "archives_failed": unpacker.archives_failed,
        "archive_members_skipped": unpacker.members_skipped,
        "chunks": len(nodes),
        "seconds": {
            "read": round(read_s, 1), "split": round(split_s, 1), "embed": round(embed_s, 1),
            "index": round(index_s, 1), "bm25": round(bm25_s, 1), "persist": round(persist_s, 1),
            "total": round(time.perf_counter() - t_start, 1),
        },
        "chunks_per_second": round(embed_model.texts / max(embed_s, 1e-9), 2),
        "threads": threads,
        "files": files,
    }
    (work / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def read_questions(path: Path):
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        q = line.split("\t")[0]
        if q.strip().lower() == "question":
            continue
        out.append(q)
    return out


def hit_locator(node) -> str:
    md = node.metadata
    loc = md.get("peer_locator") or md.get("file_path")
    page = md.get("peer_page")
    return f"{loc}#page={page}" if page else loc


def ask(work: Path, question_files: List[Path], out_dir: Path, threads: int):
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.core.llms import MockLLM
    from llama_index.core.retrievers import QueryFusionRetriever
    from llama_index.retrievers.bm25 import BM25Retriever

    configure_settings()
    t0 = time.perf_counter()
    embed_model = make_embedding(threads)
    storage = StorageContext.from_defaults(persist_dir=str(work / "index"))
    index = load_index_from_storage(storage, embed_model=embed_model)
    bm25 = BM25Retriever.from_persist_dir(str(work / "bm25"))
    bm25.similarity_top_k = TOP_K
    fusion = QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=TOP_K), bm25],
        similarity_top_k=TOP_K,
        num_queries=1,  # no generated queries: no LLM
        mode="reciprocal_rerank",
        use_async=False,
        llm=MockLLM(),
        verbose=False,
    )
    log(f"loaded the index in {time.perf_counter() - t0:.1f}s")
    fusion.retrieve("warm up")

    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {}
    for qf in question_files:
        questions = read_questions(qf)
        name = qf.name[:-4] if qf.name.endswith(".tsv") else qf.stem
        times = []
        out_path = out_dir / f"{name}.jsonl"
        with open(out_path, "w", encoding="utf-8") as f:
            # The header `ingest eval --ranked` reads: whose lists, and the files it could
            # read (so questions about the others are scored apart, tag peer-readable).
            f.write(json.dumps({"source": "llamaindex-hybrid", "read": read_locators(work)},
                               ensure_ascii=False) + "\n")
            for q in questions:
                t = time.perf_counter()
                results = fusion.retrieve(q)
                times.append((time.perf_counter() - t) * 1000)
                hits = [hit_locator(r.node) for r in results[:TOP_K]]
                f.write(json.dumps({"question": q, "hits": hits}, ensure_ascii=False) + "\n")
        times.sort()
        p50 = statistics.median(times) if times else 0.0
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))] if times else 0.0
        summary[name] = {"questions": len(questions), "p50_ms": round(p50, 1), "p95_ms": round(p95, 1),
                         "output": str(out_path)}
        log(f"{name}: {len(questions)} questions -> {out_path}  p50 {p50:.0f} ms, p95 {p95:.0f} ms")
    return summary


def read_locators(work: Path):
    """The locators of the files the build read (at least one document), from its manifest."""
    manifest = json.loads((work / "manifest.json").read_text())
    return sorted(f["locator"] for f in manifest.get("files", []) if f.get("documents", 0) > 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, type=Path)
    ap.add_argument("--work", required=True, type=Path, help="where the built index is kept")
    ap.add_argument("--out", type=Path, help="where the JSONL files go (default: --work)")
    ap.add_argument("--rebuild", action="store_true", help="build even when WORK holds an index of CORPUS")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="ONNX Runtime threads")
    ap.add_argument("questions", nargs="*", type=Path)
    a = ap.parse_args()

    corpus = a.corpus.resolve()
    if not corpus.is_dir():
        sys.exit(f"no corpus folder {corpus}")
    if not (MODEL_DIR / "fp32" / "model.onnx").exists():
        sys.exit(f"no model at {MODEL_DIR / 'fp32'}: run `make models` first")

    manifest_path = a.work / "manifest.json"
    manifest = None
    if manifest_path.exists() and not a.rebuild:
        m = json.loads(manifest_path.read_text())
        if m.get("version") == MANIFEST_VERSION and m.get("corpus") == str(corpus):
            manifest = m
            log(f"using the index in {a.work} (built before; --rebuild to build again)")
    if manifest is None:
        manifest = build(corpus, a.work, a.threads)

    s = manifest["seconds"]
    print(f"files read: {manifest['files_read']}  (documents: {manifest['documents']})")
    print(f"files skipped: {manifest['files_skipped']}  by extension: "
          + ", ".join(f"{k} {v}" for k, v in manifest["skipped_by_extension"].items()))
    print(f"archives unpacked: {manifest['archives_unpacked']}, failed: {len(manifest['archives_failed'])}, "
          f"members skipped: {len(manifest['archive_members_skipped'])}")
    print(f"chunks: {manifest['chunks']}")
    print(f"embed time: {s['embed']} s ({manifest['chunks_per_second']} chunks/s, {manifest['threads']} threads); "
          f"build total {s['total']} s")

    if a.questions:
        summary = ask(a.work, a.questions, a.out or a.work, a.threads)
        for name, v in summary.items():
            print(f"{name}: {v['questions']} questions, query p50 {v['p50_ms']} ms, p95 {v['p95_ms']} ms -> {v['output']}")
        qpath = (a.out or a.work).joinpath("queries.json")
        try:  # keep the figures of sets asked before
            summary = {**json.loads(qpath.read_text()), **summary}
        except (OSError, ValueError):
            pass
        qpath.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
