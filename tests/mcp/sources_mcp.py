"""The agent's source tools through the official Python MCP client (`ingest mcp` over stdio).

usage: sources_mcp.py BIN DATA_DIR CONFIG SECRET

CONFIG (passed as INGEST_CONFIG) registers two sources on one S3 server: `alice-docs`
(private to alice in mandate acme) and `acme-shared` (shared within acme), each holding
`docs/` (under the prefixes `alice/` and `shared/`), with `docs/reports/keeper.txt` holding
the phrase below. The credentials are in the
file only (SECRET is the secret key): no answer may show it.

As alice (acme): list_sources shows both; browse_source walks `docs` page by page within
small budgets (every entry once, `not indexed`); pull_source of one file indexes it and says
it is searchable; search_documents with `source` finds it first; browse shows it `indexed`;
pull_source of the folder indexes the rest. As bob (acme): only the shared source. As
mallory (mandate globex): no source, and every source tool and a search naming alice's
source answer exactly as for a made-up name; a search without `source` finds no byte of
alice's text. Every answer is within its max_chars.

Prints one line per check; exits 1 with a `FAILED:` line on the first failure.
"""

import asyncio
import contextlib
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PHRASE = "brass anemometer logbook"
KEEPER = "docs/reports/keeper.txt"
KEEPER_TEXT = "anemometer"


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(ok, message):
    if not ok:
        fail(message)


class Agent:
    def __init__(self, bin_, data_dir, config, user, mandate, secret):
        self.args = ["mcp", "--data-dir", data_dir, "--user", user, "--mandate", mandate]
        self.env = {k: v for k, v in os.environ.items()
                    if k in ("INGEST_MODEL_DIR", "RUST_LOG", "RUST_BACKTRACE", "HOME", "PATH")}
        self.env["INGEST_CONFIG"] = config
        self.bin, self.user, self.secret = bin_, user, secret

    @contextlib.asynccontextmanager
    async def running(self):
        params = StdioServerParameters(command=self.bin, args=self.args, env=self.env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                self.session = session
                await session.initialize()
                yield self

    async def call(self, tool, args):
        res = await self.session.call_tool(tool, args)
        check(len(res.content) == 1 and res.content[0].type == "text",
              f"{tool} as {self.user}: one text content expected")
        raw = res.content[0].text
        budget = args.get("max_chars", 4000)
        check(len(raw.encode()) <= budget,
              f"{tool}({args}) as {self.user}: {len(raw.encode())} bytes > max_chars {budget}")
        check(self.secret not in raw, f"{tool} as {self.user} shows the source's secret")
        return json.loads(raw), bool(res.is_error)

    async def ok(self, tool, args):
        answer, is_error = await self.call(tool, args)
        check(not is_error, f"{tool}({args}) as {self.user}: {answer}")
        return answer


async def browse_all(agent, source, path, max_chars):
    """Every entry of a folder, following cursors."""
    entries, cursor, calls = [], None, 0
    while True:
        args = {"source": source, "path": path, "max_chars": max_chars}
        if cursor:
            args["cursor"] = cursor
        answer = await agent.ok("browse_source", args)
        entries += answer["entries"]
        calls += 1
        cursor = answer.get("cursor")
        check(calls < 500, "browse_source: the cursor never ends")
        if not cursor:
            return entries, calls


async def alice(bin_, data_dir, config, secret):
    async with Agent(bin_, data_dir, config, "alice", "acme", secret).running() as a:
        listed = await a.ok("list_sources", {})
        names = sorted(s["name"] for s in listed["sources"])
        check(names == ["acme-shared", "alice-docs"], f"alice's sources: {listed}")
        mine = next(s for s in listed["sources"] if s["name"] == "alice-docs")
        check(mine["provider"] == "s3" and mine["indexed_files"] == 0, f"{mine}")
        print(f"alice: list_sources {names}")

        top = await a.ok("browse_source", {"source": "alice-docs"})
        check([e["name"] for e in top["entries"]] == ["docs/"], f"root: {top}")
        whole, _ = await browse_all(a, "alice-docs", "docs", 4000)
        for budget in (300, 700):
            paged, calls = await browse_all(a, "alice-docs", "docs", budget)
            check(paged == whole, f"browse at {budget}: {len(paged)} entries, {len(whole)} whole")
            check(calls > 1, f"browse at {budget} fit in one answer")
        folders = [e["name"] for e in whole if e["kind"] == "folder"]
        check("reports/" in folders, f"docs/: {whole}")
        files = [e for e in whole if e["kind"] == "file"]
        check(files and all(e["indexed"] == "not indexed" for e in files), f"{files}")
        print(f"alice: browse docs/ {len(whole)} entries, the same at budgets 300 and 700")

        pulled = await a.ok("pull_source", {"source": "alice-docs", "path": KEEPER})
        check(pulled["files"]["indexed"] == 1, f"pull one file: {pulled}")
        check("search_documents" in pulled["searchable"], f"{pulled}")
        found = await a.ok("search_documents", {"query": PHRASE, "source": "alice-docs"})
        hit = found["hits"][0]["locator"].split("#", 1)[0]
        check(hit.endswith("/" + KEEPER.split("docs/", 1)[1]) and hit.startswith("s3://"),
              f"search after pull: {found}")
        check(KEEPER_TEXT in json.dumps(found), f"{found}")
        reports = await a.ok("browse_source", {"source": "alice-docs", "path": "docs/reports"})
        keeper = next(e for e in reports["entries"] if e["name"] == "keeper.txt")
        check(keeper["indexed"] == "indexed", f"after pull: {keeper}")
        print(f"alice: pull {KEEPER} -> search finds {hit}")

        folder = await a.ok("pull_source", {"source": "alice-docs", "path": "docs",
                                            "max_chars": 1000})
        check(folder["files"]["failed"] == 0 and folder["files"]["indexed"] >= len(files),
              f"pull docs: {folder}")
        listed = await a.ok("list_sources", {})
        mine = next(s for s in listed["sources"] if s["name"] == "alice-docs")
        check(mine["indexed_files"] >= len(files) + 1, f"after the folder pull: {mine}")
        # Searching another source finds nothing of this one.
        shared = next(s for s in listed["sources"] if s["name"] == "acme-shared")
        other = await a.ok("search_documents", {"query": PHRASE, "source": "acme-shared",
                                                "min_score": 0})
        check(all(h["locator"].startswith(shared["locator"] + "/") for h in other["hits"]),
              f"search in acme-shared: {other}")
        print(f"alice: pull docs -> {folder['files']}")
        return hit


async def bob(bin_, data_dir, config, secret):
    async with Agent(bin_, data_dir, config, "bob", "acme", secret).running() as b:
        listed = await b.ok("list_sources", {})
        names = [s["name"] for s in listed["sources"]]
        check(names == ["acme-shared"], f"bob's sources: {listed}")
        check(listed["sources"][0].get("owner"), f"a colleague's source says whose: {listed}")
        print(f"bob: list_sources {names}")


def same_but_name(a, b, name_a, name_b):
    return json.dumps(a).replace(name_a, "NAME") == json.dumps(b).replace(name_b, "NAME")


async def mallory(bin_, data_dir, config, secret, hit):
    async with Agent(bin_, data_dir, config, "mallory", "globex", secret).running() as m:
        listed = await m.ok("list_sources", {})
        check(listed["sources"] == [], f"mallory's sources: {listed}")
        for tool, args in (("browse_source", {}), ("pull_source", {"path": KEEPER}),
                           ("search_documents", {"query": PHRASE})):
            real, real_err = await m.call(tool, {**args, "source": "alice-docs"})
            fake, fake_err = await m.call(tool, {**args, "source": "zz-made-up"})
            check(real_err and fake_err, f"{tool}: {real} / {fake}")
            check(same_but_name(real, fake, "alice-docs", "zz-made-up"),
                  f"{tool}: another mandate's source {real} differs from a missing one {fake}")
        found = await m.ok("search_documents", {"query": PHRASE, "min_score": 0})
        check(all(KEEPER_TEXT not in json.dumps(h) and not h["locator"].startswith("s3://")
                  for h in found["hits"]), f"mallory's search: {found}")
        browsed = await m.ok("browse_container", {})
        check("s3://" not in json.dumps(browsed), f"mallory's top level: {browsed}")
        print("mallory: no source; alice's answered as a made-up one; no byte found")


async def main():
    bin_, data_dir, config, secret = sys.argv[1:5]
    hit = await alice(bin_, data_dir, config, secret)
    await bob(bin_, data_dir, config, secret)
    await mallory(bin_, data_dir, config, secret, hit)
    print("OK")


asyncio.run(main())
