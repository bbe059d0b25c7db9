#!/usr/bin/env python3
"""Cold CLI search: each search a new `ingest search` process (the page cache warm, nothing
else), as a person types one; wall time and peak RSS per process, p50/p99 over the questions.

    python3 benches/cold_search.py DATA_DIR QUESTIONS.tsv [--bin NAME=PATH ...] [--rounds N]

Every binary given (default: target/release/ingest as `this`) is measured in the same run,
interleaved question by question, in three settings: the default (the multilingual model
loaded when the index holds chunks in other languages), `--no-multilingual` (what an index
without such chunks costs) and `--mode keyword` (no model). Prints the CPU it ran on.
"""

import argparse
import os
import statistics
import time


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def questions(path, n):
    out = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            q = line.split("\t", 1)[0].strip()
            if q and q != "question":
                out.append(q)
    return out[:n]


def run(binary, data_dir, extra, question):
    """Wall seconds and peak RSS (MiB) of one search process."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(binary, [binary, "search", "--data-dir", data_dir, "-n", "10", *extra, question])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{binary} search exited {code} on {question!r}")
    return wall, usage.ru_maxrss / 1024


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data_dir")
    ap.add_argument("questions")
    ap.add_argument("--bin", action="append", default=[])
    ap.add_argument("--n", type=int, default=30, help="questions used")
    args = ap.parse_args()
    bins = [b.split("=", 1) for b in args.bin] or [["this", "target/release/ingest"]]
    settings = [("default", []), ("--no-multilingual", ["--no-multilingual"]),
                ("--mode keyword", ["--mode", "keyword"])]
    qs = questions(args.questions, args.n)
    print(f"cold CLI search on {args.data_dir}, {len(qs)} questions, CPU: {cpu_name()}, "
          f"{os.cpu_count()} cores")
    results = {}
    # Warm the page cache (and any model cache) once per binary and setting.
    for name, path in bins:
        for label, extra in settings:
            run(path, args.data_dir, extra, qs[0])
    for q in qs:
        for name, path in bins:
            for label, extra in settings:
                results.setdefault((name, label), []).append(run(path, args.data_dir, extra, q))
    print(f"| binary | setting | p50 ms | p99 ms | peak RSS p50 MiB | max MiB |")
    print("|---|---|---|---|---|---|")
    for (name, label), rs in results.items():
        walls = [w * 1000 for w, _ in rs]
        rss = [r for _, r in rs]
        print(f"| {name} | {label} | {pct(walls, 50):.0f} | {pct(walls, 99):.0f} | "
              f"{statistics.median(rss):.0f} | {max(rss):.0f} |")


if __name__ == "__main__":
    main()
