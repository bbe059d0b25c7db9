#!/usr/bin/env python3
"""Generate legal but huge-in-one-piece inputs and (with --run) measure ingesting each one.

    scripts/heavy-inputs.py OUTDIR [--scale S]                 generate the cases at scale S
    scripts/heavy-inputs.py OUTDIR --run [--scale S] [--bin B] generate full and half size
                                                               (S and S/2), ingest each with
                                                               the release binary, print a table

The cases (sizes at scale 1):
  text     a 100 MB text file with no newline (English-like words)
  json     a 30 MB JSON file whose one string value is base64 (no whitespace)
  csv      a CSV whose one cell holds 40 MB of words
  html     HTML nested 200 000 elements deep, a sentence every 1000 levels
  xml      an XML element with 1 000 000 attributes, then some text
  tar      a tar.gz of 300 000 symlink headers (and one text member)
  zip      a ZIP with 60 000 (empty) members

Output is deterministic (seeded generator, fixed timestamps) and streamed to disk, never held
whole in memory. Generated files belong in OUTDIR only: never commit them.

--run ingests every file with `BIN --json --data-dir <fresh dir> FILE` under
`/usr/bin/time -v` and `timeout` (600 s by default), samples the main process's VmHWM from
/proc while it runs, and prints: case, size, seconds, peak RSS of the whole process tree
(time -v: the largest of the main process and its extraction workers), peak RSS of the main
process, exit code, and the file's ledger status and reason; plus the run's busy seconds per
stage (unpack/extract/chunk/embed, from the summary): with the per-file chunk limit, chunking
stops at the limit, so extraction is the part that must grow linearly with size. BIN defaults to
$CARGO_TARGET_DIR/release/ingest (else ~/.cache/ingest-target/release/ingest).
"""

import argparse
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile

MB = 1000 * 1000
CHUNK = 1 << 20  # bytes written per call

WORDS = (
    "the harbour tide boat keeper lighthouse north south wind weather station survey buoy "
    "anchor channel pier storm calm sea light signal record morning evening crew ferry "
    "island coast rock current depth chart mile knot fog bell gull net fish market rope"
).split()


def words(rng, n_bytes):
    """Yield str blocks of English-like words totalling about n_bytes, no newline."""
    written = 0
    while written < n_bytes:
        block = " ".join(rng.choice(WORDS) for _ in range(20000)) + " "
        block = block[: n_bytes - written]
        written += len(block)
        yield block


def write_stream(path, blocks):
    with open(path, "w", encoding="utf-8", newline="") as f:
        for b in blocks:
            f.write(b)


def gen_text(path, scale, rng):
    write_stream(path, words(rng, int(100 * MB * scale)))


def gen_json(path, scale, rng):
    import base64

    n = int(30 * MB * scale)

    def blocks():
        yield '{"id": 7, "name": "attachment", "payload": "'
        done = 0
        while done < n:
            raw = rng.randbytes(min(3 * CHUNK // 4, (n - done) * 3 // 4 + 3))
            b = base64.b64encode(raw).decode()[: n - done]
            done += len(b)
            yield b
        yield '"}\n'

    write_stream(path, blocks())


def gen_csv(path, scale, rng):
    n = int(40 * MB * scale)

    def blocks():
        yield "id,station,notes\n"
        for i in range(1, 50):
            yield f"{i},S{i},calm sea and light wind\n"
        yield '50,S50,"'
        yield from words(rng, n)
        yield '"\n'
        for i in range(51, 100):
            yield f"{i},S{i},fog at dawn\n"

    write_stream(path, blocks())


def gen_html(path, scale, rng):
    depth = int(200_000 * scale)

    def blocks():
        yield "<!DOCTYPE html>\n<html><head><title>Deep</title></head><body>\n"
        buf = io.StringIO()
        for i in range(depth):
            buf.write("<div>")
            if i % 1000 == 0:
                buf.write(f"Level {i} of the deep page records the tide at pier {i % 97}.\n")
            if buf.tell() > CHUNK:
                yield buf.getvalue()
                buf = io.StringIO()
        buf.write("</div>" * depth)
        yield buf.getvalue()
        yield "\n</body></html>\n"

    write_stream(path, blocks())


def gen_xml(path, scale, rng):
    attrs = int(1_000_000 * scale)

    def blocks():
        yield '<?xml version="1.0" encoding="UTF-8"?>\n<record'
        buf = io.StringIO()
        for i in range(attrs):
            buf.write(f' a{i}="v{i}"')
            if buf.tell() > CHUNK:
                yield buf.getvalue()
                buf = io.StringIO()
        yield buf.getvalue()
        yield ">\n  <note>The station on the north pier logged a calm sea.</note>\n</record>\n"

    write_stream(path, blocks())


def gen_tar(path, scale, rng):
    n = int(300_000 * scale)
    with tarfile.open(path, "w:gz", compresslevel=6, format=tarfile.GNU_FORMAT) as t:
        text = b"The symlink farm keeps one real file about the harbour ferry.\n"
        info = tarfile.TarInfo("real.txt")
        info.size = len(text)
        info.mtime = 1672531200
        t.addfile(info, io.BytesIO(text))
        for i in range(n):
            info = tarfile.TarInfo(f"links/l{i:07d}")
            info.type = tarfile.SYMTYPE
            info.linkname = "../real.txt"
            info.mtime = 1672531200
            t.addfile(info)


def gen_zip(path, scale, rng):
    n = int(60_000 * scale)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for i in range(n):
            z.writestr(zipfile.ZipInfo(f"m/{i:06d}.txt", (2023, 1, 1, 0, 0, 0)), b"")


CASES = [
    ("text", "long-line.txt", gen_text),
    ("json", "long-string.json", gen_json),
    ("csv", "giant-cell.csv", gen_csv),
    ("html", "deep.html", gen_html),
    ("xml", "many-attributes.xml", gen_xml),
    ("tar", "symlinks.tar.gz", gen_tar),
    ("zip", "members.zip", gen_zip),
]


def generate(outdir, scale, only=None):
    os.makedirs(outdir, exist_ok=True)
    made = []
    for case, name, gen in CASES:
        if only and case not in only:
            continue
        path = os.path.join(outdir, name)
        if not os.path.exists(path):
            t = time.time()
            gen(path + ".part", scale, random.Random(f"{case}-{scale}"))
            os.replace(path + ".part", path)
            print(
                f"generated {path} ({os.path.getsize(path) / MB:.1f} MB) in {time.time() - t:.1f} s",
                file=sys.stderr,
            )
        made.append((case, path))
    return made


def default_bin():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.expanduser("~/.cache/ingest-target")
    return os.path.join(target, "release", "ingest")


def vm_hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def measure(binary, path, limit):
    data = tempfile.mkdtemp(prefix="heavy-data-")
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    cmd = ["/usr/bin/time", "-v", "timeout", str(limit), binary, "--json", "--data-dir", data, path]
    started = time.time()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err)
    main_pid, main_hwm = None, 0
    while proc.poll() is None:
        if main_pid is None:
            main_pid = find_ingest_pid(proc.pid, binary)
        if main_pid is not None:
            main_hwm = max(main_hwm, vm_hwm_kib(main_pid) or 0)
        time.sleep(0.1)
    seconds = time.time() - started
    out.seek(0)
    err.seek(0)
    stdout = out.read().decode(errors="replace")
    stderr = err.read().decode(errors="replace")
    shutil.rmtree(data, ignore_errors=True)
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", stderr)
    tree_rss = int(m.group(1)) / 1024 if m else float("nan")
    m = re.search(r"Exit status: (\d+)", stderr)
    code = int(m.group(1)) if m else proc.returncode
    name = os.path.basename(path)
    status, reason, summary = "-", "", None
    for line in stdout.splitlines():
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if "summary" in v:
            summary = v["summary"]
        elif str(v.get("locator", "")).endswith(name):
            status, reason = v.get("status", "-"), v.get("reason") or ""
    if code == 124:
        status, reason = "timeout", f"killed after {limit} s"
    if summary and (status in ("indexed", "-")):
        counts = ", ".join(
            f"{k} {summary[k]}"
            for k in ("indexed", "skipped", "failed")
            if summary.get(k)
        )
        reason = (reason + "; " if reason else "") + counts + f"; chunks {summary.get('chunks_embedded', 0)}"
    if status == "-" and stderr.strip():
        reason = stderr.strip().splitlines()[0][:80]
    stages = (summary or {}).get("seconds") or {}
    busy = "/".join(f"{stages.get(k, 0):.1f}" for k in ("unpack", "extract", "chunk", "embed"))
    return seconds, tree_rss, main_hwm / 1024, code, status, reason, busy


def find_ingest_pid(time_pid, binary):
    """The ingest process under time -> timeout -> ingest."""
    try:
        kids = open(f"/proc/{time_pid}/task/{time_pid}/children").read().split()
        for k in kids:
            grand = open(f"/proc/{k}/task/{k}/children").read().split()
            for g in grand:
                if os.path.realpath(f"/proc/{g}/exe") == os.path.realpath(binary):
                    return int(g)
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--run", action="store_true", help="generate full and half size, ingest, print a table")
    ap.add_argument("--bin", default=default_bin())
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--only", nargs="*", help="case names to generate/run (default: all)")
    args = ap.parse_args()
    if not args.run:
        generate(args.outdir, args.scale, args.only)
        return
    if not os.path.isfile(args.bin):
        sys.exit(f"no binary at {args.bin}: build with `cargo build --release`")
    sizes = [("full", args.scale), ("half", args.scale / 2)]
    files = {}
    for label, scale in sizes:
        for case, path in generate(os.path.join(args.outdir, label), scale, args.only):
            files[(case, label)] = path
    header = (
        f"{'case':<5} {'size':>5} {'MB':>7} {'seconds':>8} {'unpack/extract/chunk/embed s':>29}"
        f" {'tree RSS MiB':>12} {'main RSS MiB':>12} {'exit':>4}  ledger"
    )
    print(header)
    print("-" * len(header))
    for case, _, _ in CASES:
        for label, _ in sizes:
            path = files.get((case, label))
            if not path:
                continue
            secs, tree, main_rss, code, status, reason, busy = measure(args.bin, path, args.timeout)
            mb = os.path.getsize(path) / MB
            print(
                f"{case:<5} {label:>5} {mb:>7.1f} {secs:>8.1f} {busy:>29} {tree:>12.0f} {main_rss:>12.0f} {code:>4}  {status}: {reason}",
                flush=True,
            )


if __name__ == "__main__":
    main()
