#!/usr/bin/env python3
"""Kreuzberg's side of benches/e2e.rs: extract every file given, with Kreuzberg's default
configuration, on THREADS threads (one extract_file_sync per file, as the e2e bench runs one
extraction per file and core); print one JSON line with the seconds and how many files gave
text, none, or an error (Kreuzberg panics on some inputs: counted as errors).

Usage: kreuzberg_extract.py THREADS FILE...
"""
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import kreuzberg
from kreuzberg import ExtractionConfig, extract_file_sync

THREADS = int(sys.argv[1])
FILES = sys.argv[2:]
CONFIG = ExtractionConfig()


def one(path):
    try:
        result = extract_file_sync(path, config=CONFIG)
    except BaseException:  # pyo3 panics are BaseException
        return "error"
    return "text" if (result.content or "").strip() else "empty"


started = time.perf_counter()
with ThreadPoolExecutor(THREADS) as pool:
    outcomes = list(pool.map(one, FILES))
seconds = time.perf_counter() - started
print(json.dumps({
    "version": kreuzberg.__version__,
    "files": len(FILES),
    "seconds": seconds,
    "text": outcomes.count("text"),
    "empty": outcomes.count("empty"),
    "error": outcomes.count("error"),
}))
