#!/usr/bin/env python3
"""Sanity check only: score a ranked JSONL file (llamaindex_peer.py's output) against its
question set roughly as `ingest eval` does (docs/EVALUATION.md). The real scoring is
`ingest eval --ranked FILE.jsonl`; this is for reading the peer's numbers without it.

- recall@k: a hit among the first k whose file part (before '#') is an expected path, or ends
  with '/' + it; with --manifest (the peer's WORK_DIR/manifest.json), a hit also counts when
  its file holds the same bytes as an expected file (ingest's `also_in`);
- page@k (page questions only): such a hit whose #page=N is an expected page (#page=A-B: any);
- MRR: 1 / rank of the first hit in an expected file over all hits (10), 0 when none;
- absent sets (expected `-`): the share of questions answered with no hit at all.

Usage: score.py QUESTIONS.tsv RANKED.jsonl [--k 5] [--manifest WORK/manifest.json] [--misses]
"""
import argparse
import json
import sys
from collections import defaultdict


def parse_expected(field):
    out = []
    for alt in field.split(" | "):
        alt = alt.strip()
        if alt == "-" or not alt:
            continue
        path, _, frag = alt.partition("#")
        pages = None
        if frag.startswith("page="):
            a, _, b = frag[5:].partition("-")
            pages = set(range(int(a), int(b or a) + 1))
        out.append((path, pages))
    return out


def read_set(path):
    qs = []
    for line in open(path, encoding="utf-8"):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if cols[0].strip().lower() == "question":
            continue
        qs.append((cols[0], parse_expected(cols[1] if len(cols) > 1 else "-"),
                   cols[2].split(",") if len(cols) > 2 and cols[2] else []))
    return qs


def same_file(file, path):
    return file == path or (file.endswith(path) and file[: -len(path)].endswith("/"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("questions")
    ap.add_argument("ranked")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--manifest")
    ap.add_argument("--misses", action="store_true")
    a = ap.parse_args()

    copies = {}
    if a.manifest:
        by_hash = defaultdict(list)
        for f in json.load(open(a.manifest))["files"]:
            by_hash[f["sha256"]].append(f["locator"])
        for locs in by_hash.values():
            for loc in locs:
                copies[loc] = locs

    qs = read_set(a.questions)
    ranked = [json.loads(l) for l in open(a.ranked, encoding="utf-8") if l.strip()]
    ranked = [r for r in ranked if "question" in r]  # skip the {"source": …, "read": […]} header
    if len(ranked) != len(qs):
        sys.exit(f"{a.ranked}: {len(ranked)} lines for {len(qs)} questions")

    n = found = page_n = page_found = absent_n = absent_empty = 0
    rr = 0.0
    tags = defaultdict(lambda: [0, 0])
    misses = []
    for (q, expected, qtags), r in zip(qs, ranked):
        if r["question"] != q:
            sys.exit(f"question mismatch: {r['question']!r} != {q!r}")
        hits = r["hits"]
        if not expected:
            absent_n += 1
            absent_empty += not hits
            continue
        file_rank = page_rank = None
        for i, h in enumerate(hits):
            file, _, frag = h.partition("#")
            page = int(frag[5:]) if frag.startswith("page=") else None
            files = copies.get(file, [file])
            for path, pages in expected:
                if any(same_file(f, path) for f in files):
                    file_rank = file_rank or i + 1
                    if pages and page in pages:
                        page_rank = page_rank or i + 1
        has_page = any(p for _, p in expected)
        n += 1
        ok = file_rank is not None and file_rank <= a.k
        found += ok
        rr += 1 / file_rank if file_rank else 0
        if has_page:
            page_n += 1
            page_found += page_rank is not None and page_rank <= a.k
        for t in qtags:
            tags[t][0] += 1
            tags[t][1] += ok
        if not ok or (has_page and not (page_rank and page_rank <= a.k)):
            misses.append((q, expected, file_rank, page_rank, hits[: a.k]))

    name = a.ranked.rsplit("/", 1)[-1]
    if n:
        print(f"{name}: {n} questions  recall@{a.k} {found / n:.3f}  "
              f"page@{a.k} {page_found / page_n if page_n else 0:.3f} ({page_n} page questions)  "
              f"MRR {rr / n:.3f}")
        print("  by tag: " + ", ".join(f"{t} {v[1]}/{v[0]}" for t, v in sorted(tags.items())))
    if absent_n:
        print(f"{name}: {absent_n} absent questions, answered with no hit: {absent_empty}/{absent_n}")
    if a.misses:
        for q, exp, fr, pr, hits in misses:
            print(f"- {q}\n  expected {exp}  file rank {fr}  page rank {pr}\n  got {hits}")


if __name__ == "__main__":
    main()
