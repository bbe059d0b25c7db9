"""Upload UPLOADS small documents round-robin to the nodes, CONC at a time, each polled
until its job is `indexed`; print uploads/s and upload-to-searchable latency p50/p95/max.
Then check that every node finds one of them by search."""
import concurrent.futures as cf, json, sys, time, urllib.error, urllib.request

key, uploads, conc, urls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
H = {"Authorization": f"Bearer {key}"}
WORDS = "harbour glacier ledger turbine orchard lantern quarry meadow furnace compass".split()

refused = 0

def call(method, url, body=None, ctype=None):
    """One request; a 429/503 (a per-key or queue bound) is waited out as Retry-After says."""
    global refused
    while True:
        req = urllib.request.Request(url, data=body, method=method, headers=dict(H, **({"Content-Type": ctype} if ctype else {})))
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code not in (429, 503):
                raise
            refused += 1
            time.sleep(float(e.headers.get("Retry-After") or 0.2))

def doc(i):
    text = "\n\n".join(f"Report {i}, part {p}: the {WORDS[(i+p)%10]} near the {WORDS[(i*7+p)%10]} was logged with code Q{i}Z{p}." * 4 for p in range(6))
    return text.encode()

def one(i):
    url = urls[i % len(urls)]
    t0 = time.monotonic()
    job = call("POST", f"{url}/v1/files?name=bench/doc-{i:05}.txt", doc(i), "application/octet-stream")["job"]
    while True:
        st = call("GET", f"{url}/v1/jobs/{job}")
        if st["state"] in ("indexed", "failed"):
            assert st["state"] == "indexed", st
            return time.monotonic() - t0
        time.sleep(0.05)

t0 = time.monotonic()
with cf.ThreadPoolExecutor(conc) as ex:
    lat = sorted(ex.map(one, range(uploads)))
wall = time.monotonic() - t0
q = lambda p: lat[min(len(lat) - 1, int(p * (len(lat) - 1) + 0.5))]
print(f"{len(urls)} node(s): {uploads} uploads in {wall:.1f} s = {uploads / wall:.2f} uploads/s; "
      f"upload-to-searchable p50 {q(0.5):.2f} s, p95 {q(0.95):.2f} s, max {lat[-1]:.2f} s "
      f"({refused} answers 429/503 waited out)")
for u in urls:
    hits = call("POST", f"{u}/v1/search", json.dumps({"query": "Q7Z3", "limit": 3, "mode": "keyword"}).encode(), "application/json")["hits"]
    assert any("doc-00007" in h["locator"] for h in hits), (u, hits)
print(f"every node finds doc-00007 by search")
