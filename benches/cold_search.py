#!/usr/bin/env python3
"""Cold CLI search: each search a new `ingest search` process (the page cache warm, nothing
else), as a person types one; wall time and peak RSS per process, p50/p99 over the questions.

    python3 benches/cold_search.py DATA_DIR QUESTIONS.tsv [--bin NAME=PATH ...] [--rounds N]

Every binary given (default: target/release/ingest as `this`) is measured in the same run,
interleaved question by question, in three settings: the default (the multilingual model
loaded when the index holds chunks in other languages), `--no-multilingual` (what an index
without such chunks costs) and `--mode keyword` (no model) — each process cold, with
`--linger 0` for a binary that has the lingering reader. Then, for each binary that has it,
the searches as a person runs them by default: the first leaves a reader behind, the next
ones are answered by it (its peak RSS reported apart, then it is stopped). Prints the CPU it
ran on.
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
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
    _, status, usage = os.wait4(pid, 0)  # the reader it may leave is not its child's usage
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{binary} search exited {code} on {question!r}")
    return wall, usage.ru_maxrss / 1024


def lingers(binary):
    """Whether `binary` has the lingering reader (`--linger`)."""
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    return "--linger" in out


def reader(binary, data_dir):
    """The pid of the lingering reader holding `data_dir`, or None."""
    out = subprocess.run([binary, "status", "--json", "--data-dir", data_dir],
                         capture_output=True, text=True).stdout
    try:
        d = json.loads(out.strip().splitlines()[-1]).get("daemon") or {}
    except (ValueError, IndexError):
        return None
    return d.get("pid") if d.get("lingering") else None


def peak_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def stop(pid):
    os.kill(pid, signal.SIGTERM)
    for _ in range(200):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


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
    cold = {name: (["--linger", "0"] if lingers(path) else []) for name, path in bins}
    for name, path in bins:
        if cold[name] and (pid := reader(path, args.data_dir)):
            stop(pid)
    results = {}
    # Warm the page cache (and any model cache) once per binary and setting.
    for name, path in bins:
        for label, extra in settings:
            run(path, args.data_dir, cold[name] + extra, qs[0])
    for q in qs:
        for name, path in bins:
            for label, extra in settings:
                results.setdefault((name, label), []).append(
                    run(path, args.data_dir, cold[name] + extra, q))
    readers = {}
    for name, path in bins:
        if not cold[name]:
            continue
        key = (name, "default, the first leaving a reader (`--linger 120`)")
        for q in qs:
            results.setdefault(key, []).append(run(path, args.data_dir, [], q))
        pid = reader(path, args.data_dir)
        if pid:
            readers[name] = peak_mib(pid)
            stop(pid)
    print(f"| binary | setting | p50 ms | p99 ms | peak RSS p50 MiB | max MiB |")
    print("|---|---|---|---|---|---|")
    for (name, label), rs in results.items():
        walls = [w * 1000 for w, _ in rs]
        rss = [r for _, r in rs]
        print(f"| {name} | {label} | {pct(walls, 50):.0f} | {pct(walls, 99):.0f} | "
              f"{statistics.median(rss):.0f} | {max(rss):.0f} |")
    for name, mib in readers.items():
        print(f"{name}: the lingering reader's peak RSS {mib:.0f} MiB")


if __name__ == "__main__":
    main()
