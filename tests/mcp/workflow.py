#!/usr/bin/env python3
"""Play an agent's workflow of several rounds through `ingest mcp` with the official Python
MCP client (PyPI `mcp`, pinned in tests/mcp/requirements.txt).

    workflow.py --bin BIN --data-dir DIR --own-phrase P --shared-phrase S --query Q

The data directory must hold a document of alice (feature instance `chat`, mandate `acme`)
containing P, and a document bob (same mandate) shared containing S
(tests/integration/workflow.rs prepares it). Servers run one at a time (each holds the data
directory while it runs): alice, bob, alice in mandate `globex`, alice again.

Checks (exit 1 with `FAILED: <what>` on the first that fails, 0 and a last line `OK`):
  - every answer: one text content, a JSON object of at most max_chars UTF-8 bytes,
    `size.chars` its own length, `is_error` exactly when it is {"error": ...};
  - the six workflow tools are listed with descriptions, object schemas and read-only hints
    (recall_tool_result and gather_context only);
  - round 1: a 200 KB tool result is stored with max_chars 1000: the answer fits, holds a
    handle and a head + tail preview of the result with the omitted count; recall_tool_result
    follows cursors at several budgets and rebuilds the result byte for byte; `lines` gives
    exactly those lines; entities are remembered (one by key twice: replaced), and found by
    rules in a second result (an IBAN, an amount, a date, an e-mail address, an invoice id);
  - round 2: a summary is stored; gather_context returns the own document's passage, the
    shared document's passage, entities, the summary and tool-result passages, each with its
    locator, key, summary id or handle (a locator is then read, a handle recalled); within
    small budgets it names what it left out and its cursor pages give the same items;
  - walls: another workflow of alice, bob (same mandate) and alice in another mandate recall
    the handle exactly as a made-up one and see nothing of the workflow in gather_context or
    search_documents;
  - end_workflow deletes it: the handle is then answered as made-up, gather_context has no
    workflow item, and search finds nothing of it.
Figures (answer sizes, calls, milliseconds) are printed, never asserted.
"""
import argparse
import asyncio
import contextlib
import json
import os
import sys
import time

CALL_TIMEOUT_S = 600
WORKFLOW_TOOLS = {
    "store_tool_result": False, "recall_tool_result": True, "remember": False,
    "store_summary": False, "gather_context": True, "end_workflow": False,
}
SECRET = "Quartermaster Ingrid keeps the spare ledger in locker 47B"
IBAN = "DE89 3704 0044 0532 0130 00"


class Failed(Exception):
    pass


def fail(what):
    # Printed here: inside the client's task groups the exception arrives wrapped.
    print(f"FAILED: {what}", flush=True)
    raise Failed(what)


def check(cond, what):
    if not cond:
        fail(what() if callable(what) else what)


def utf8_len(s):
    return len(s.encode("utf-8"))


def big_result(n_bytes):
    """Numbered lines of an export: multi-byte text, quotes and a secret in the middle."""
    lines, i, size = [], 0, 0
    while size < n_bytes:
        line = (f"row {i}: order {7000 + i} for \"Fjordline AS\" — {i % 13} pallets, Zürich dock {i % 7}\n"
                if i != 1500 else f"row {i}: {SECRET}.\n")
        lines.append(line)
        size += utf8_len(line)
        i += 1
    return "".join(lines)


class Server:
    def __init__(self, opts, user, mandate):
        self.opts, self.user, self.mandate = opts, user, mandate
        self.calls = 0

    @contextlib.asynccontextmanager
    async def running(self):
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client
        args = ["mcp", "--data-dir", self.opts.data_dir, "--user", self.user,
                "--feature-instance", "chat", "--mandate", self.mandate,
                "--max-answer-chars", "100000"]
        env = {k: v for k, v in os.environ.items()
               if k in ("INGEST_MODEL_DIR", "RUST_LOG", "RUST_BACKTRACE")}
        params = StdioServerParameters(command=self.opts.bin, args=args, env=env, cwd=os.getcwd())
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=None) as session:
                self.session = session
                await session.initialize()
                yield self

    async def call(self, tool, args):
        """The answer's JSON, its raw text and whether it is an error; its form checked."""
        budget = max(args.get("max_chars", 4000), 200)
        started = time.monotonic()
        res = await self.session.call_tool(tool, args,
                                           read_timeout_seconds=CALL_TIMEOUT_S)
        self.ms = (time.monotonic() - started) * 1000
        self.calls += 1
        where = f"{tool} as {self.user}@{self.mandate}"
        check(len(res.content) == 1 and res.content[0].type == "text",
              f"{where}: expected one text content")
        raw = res.content[0].text
        check(utf8_len(raw) <= budget, lambda: f"{where}: {utf8_len(raw)} bytes > max_chars {budget}")
        obj = json.loads(raw)
        check(isinstance(obj, dict), f"{where}: not an object")
        check(bool(res.is_error) == ("error" in obj), f"{where}: is_error does not match {raw[:300]}")
        if not res.is_error:
            check(obj.get("size", {}).get("chars") == utf8_len(raw), f"{where}: size.chars")
        return obj, raw, bool(res.is_error)

    async def ok(self, tool, args):
        obj, raw, err = await self.call(tool, args)
        check(not err, lambda: f"{tool} as {self.user}: error {raw[:500]}")
        return obj

    async def recall_all(self, workflow, handle, max_chars, lines=None):
        """Follow recall_tool_result's cursors: the text rebuilt and the number of calls."""
        text, cursor, calls = "", None, 0
        while True:
            args = {"workflow": workflow, "handle": handle, "max_chars": max_chars}
            if lines:
                args["lines"] = lines
            if cursor:
                args["cursor"] = cursor
            page = await self.ok("recall_tool_result", args)
            calls += 1
            start = page.get("selection", [0, 0])[0]
            check(page["offset"] == start + len(text),
                  f"recall: offset {page['offset']} after {len(text)} chars from {start}")
            text += page["text"]
            cursor = page.get("cursor")
            if not cursor:
                return text, calls
            check(isinstance(page.get("more"), str), "recall: a cursor without `more`")
            check(calls < 5000, "recall: the cursor never ends")

    async def gather_pages(self, args):
        """Follow gather_context's cursors: every item of every page."""
        items, cursor, pages = [], None, 0
        while True:
            a = dict(args)
            if cursor:
                a["cursor"] = cursor
            page = await self.ok("gather_context", a)
            pages += 1
            items += page["items"]
            cursor = page.get("cursor")
            if not cursor:
                return items, pages
            check(page.get("left_out_count", 0) > 0 and isinstance(page.get("more"), str),
                  f"gather_context: a cursor without left_out_count and more: {page}")
            check(pages < 500, "gather_context: the cursor never ends")


def ref(item):
    return (item["layer"], item.get("locator") or item.get("handle") or item.get("key")
            or item.get("summary"))


async def main(opts):
    result = big_result(200 * 1024)
    wf = "wf-harbour-1"
    alice = Server(opts, "alice", "acme")
    secrets = [SECRET, "Fjordline AS", "locker 47B", "Harbour summary of rounds 1-2"]

    async with alice.running() as a:
        tools = {t.name: t for t in (await a.session.list_tools()).tools}
        for name, read_only in WORKFLOW_TOOLS.items():
            check(name in tools, f"list_tools lacks {name}")
            t = tools[name]
            check(len(t.description or "") > 150, f"{name}: description too short")
            check(t.input_schema.get("type") == "object" and "workflow" in t.input_schema.get("properties", {}),
                  f"{name}: schema without workflow")
            check(t.annotations.read_only_hint == read_only, f"{name}: readOnlyHint")

        # Round 1: a big tool result, stored whole, previewed within 1000 chars.
        stored = await a.ok("store_tool_result", {
            "workflow": wf, "tool": "crm.export_orders", "args": {"customer": "Fjordline AS"},
            "content": result, "max_chars": 1000})
        handle = stored["handle"]
        preview = stored["preview"]
        marker = f"[{stored['omitted_chars']} chars omitted]"
        check(marker in preview, f"preview without {marker}: {preview[:200]}")
        head, tail = preview.split(marker)
        check(result.startswith(head) and result.endswith(tail) and head and tail,
              "the preview is not the result's head and tail")
        check(len(head) + len(tail) + stored["omitted_chars"] == len(result), "omitted count")
        check(stored["raw_chars"] == len(result) and stored["raw_bytes"] == utf8_len(result), "sizes")
        print(f"store_tool_result: {utf8_len(result)} bytes stored as {handle}, answer "
              f"{stored['size']['chars']} chars, {stored['chunks']} chunks, {a.ms:.0f} ms")
        for budget in (1000, 4000, 16000):
            text, calls = await a.recall_all(wf, handle, budget)
            check(text == result, f"recall at max_chars {budget} did not rebuild the result exactly")
            print(f"recall_tool_result: rebuilt exactly at max_chars {budget} in {calls} calls")
        text, _ = await a.recall_all(wf, handle, 800, lines="1500-1502")
        check(text == "".join(result.splitlines(keepends=True)[1499:1502]), "lines 1500-1502")

        # Entities: by hand (one key twice: the second value wins) and found by rules.
        r = await a.ok("remember", {"workflow": wf, "key": "customer", "value": "Fjordline AS (ferries)",
                                    "source": handle})
        check(r["created"] is True, "remember: a new key")
        r = await a.ok("remember", {"workflow": wf, "key": "customer", "value": "Fjordline AS",
                                    "source": handle})
        check(r["created"] is False, "remember: the same key replaced")
        invoice = (f"Invoice INV-2026-0815 for harbour crane hire: EUR 12.480,00, due 2026-12-15. "
                   f"Pay to {IBAN}. Questions: billing@fjordline.example")
        s2 = await a.ok("store_tool_result", {"workflow": wf, "tool": "erp.invoice", "content": invoice,
                                              "extract_entities": True})
        check(s2["entities_found"] >= 5, f"entities found by rules: {s2}")
        for key in ("iban:DE89370400440532013000", "amount:EUR 12480.00", "date:2026-12-15",
                    "email:billing@fjordline.example", "document_id:INV-2026-0815"):
            check(key in s2.get("entities", []), f"entity {key} not found: {s2}")

        # Round 2: the host's summary, then the context of the next round.
        await a.ok("store_summary", {"workflow": wf, "text": "Harbour summary of rounds 1-2: the customer "
                                     "Fjordline AS exported its orders; an invoice for crane hire is due.",
                                     "covers": "rounds 1-2"})
        args = {"workflow": wf, "query": opts.query, "max_chars": 12000}
        ctx = await a.ok("gather_context", args)
        print(f"gather_context: {len(ctx['items'])} items, {ctx['size']['chars']} chars, {a.ms:.0f} ms")
        layers = [i["layer"] for i in ctx["items"]]
        for layer in ("instance", "entity", "shared", "summary", "tool_result"):
            check(layer in layers, lambda: f"gather_context: no {layer} item: {json.dumps(ctx)[:2000]}")
        order = ["entity", "tool_result", "summary", "instance", "shared"]
        check(layers == sorted(layers, key=order.index), f"gather_context: layers out of order: {layers}")
        own = [i for i in ctx["items"] if i["layer"] == "instance"]
        check(any(opts.own_phrase in i.get("text", "") for i in own), "the own document's passage")
        shared = [i for i in ctx["items"] if i["layer"] == "shared"]
        check(any(opts.shared_phrase in i.get("text", "") and i.get("owner", "").startswith("bob")
                  for i in shared), "the shared document's passage, with its owner")
        check(len({ref(i) for i in ctx["items"]}) == len(ctx["items"]), "an item twice")
        texts = [" ".join(i["text"].split()).lower() for i in ctx["items"] if "text" in i]
        check(len(set(texts)) == len(texts), "a passage twice")
        # Traceable: read a passage's file, recall a tool result's handle.
        loc = own[0]["locator"].split("#")[0]
        read = await a.ok("read_content_objects", {"locator": loc, "max_chars": 2000})
        check(read.get("objects"), f"read {loc}: {read}")
        tr = next(i for i in ctx["items"] if i["layer"] == "tool_result")
        back = await a.ok("recall_tool_result", {"workflow": wf, "handle": tr["handle"], "max_chars": 500})
        check(back["raw_chars"] > 0, "recall of a gathered handle")
        # Small budgets: within them (checked on every answer), the rest named, pages equal.
        for budget in (700, 1500, 3000):
            items, pages = await a.gather_pages(dict(args, max_chars=budget))
            check([ref(i) for i in items] == [ref(i) for i in ctx["items"]],
                  f"gather_context pages at {budget} differ from one large answer")
            print(f"gather_context at max_chars {budget}: {pages} pages")

        # Another workflow of the same user sees nothing of this one.
        made_up = (await a.call("recall_tool_result", {"workflow": "never-used", "handle": handle}))[1]
        other = (await a.call("recall_tool_result", {"workflow": "wf-other", "handle": handle}))[1]
        check(other == made_up, "another workflow's handle reads differently from a made-up one")
        g = await a.ok("gather_context", {"workflow": "wf-other", "query": opts.query + " " + SECRET,
                                          "max_chars": 20000})
        blob = json.dumps(g, ensure_ascii=False)
        check(not any(s in blob for s in secrets), f"wf-other sees workflow data: {blob[:1000]}")
        hits = await a.ok("search_documents", {"query": SECRET, "mode": "keyword", "max_chars": 20000})
        check(hits["hits"] == [] or not any(SECRET in json.dumps(h) for h in hits["hits"]),
              "document search finds the workflow's tool result")

    for user, mandate in (("bob", "acme"), ("alice", "globex")):
        async with Server(opts, user, mandate).running() as o:
            made_up = (await o.call("recall_tool_result", {"workflow": "never-used", "handle": handle}))[1]
            theirs = (await o.call("recall_tool_result", {"workflow": wf, "handle": handle}))[1]
            check(theirs == made_up, f"{user}@{mandate}: the handle reads differently from a made-up one")
            g = await o.ok("gather_context", {"workflow": wf, "query": opts.query + " " + SECRET,
                                              "max_chars": 20000})
            blob = json.dumps(g, ensure_ascii=False)
            check(not any(s in blob for s in secrets), f"{user}@{mandate} sees the workflow: {blob[:1000]}")
            check(not [i for i in g["items"] if i["layer"] in ("entity", "summary", "tool_result")],
                  f"{user}@{mandate}: workflow items of its own that it never stored")
            hits = await o.ok("search_documents", {"query": SECRET, "mode": "keyword"})
            check(hits["hits"] == [], f"{user}@{mandate}: search finds the workflow's result")
            # Ending "its" workflow of the same id touches nothing of alice's.
            e = await o.ok("end_workflow", {"workflow": wf})
            check(e["deleted"] == {"tool_results": 0, "entities": 0, "summaries": 0}, f"{e}")
            print(f"{user}@{mandate}: blind to alice's workflow")

    async with alice.running() as a:
        still, _ = await a.recall_all(wf, handle, 50000)
        check(still == result, "the workflow was touched by another scope's end_workflow")
        e = await a.ok("end_workflow", {"workflow": wf})
        check(e["deleted"]["tool_results"] == 2 and e["deleted"]["summaries"] == 1
              and e["deleted"]["entities"] >= 6, f"end_workflow: {e}")
        made_up = (await a.call("recall_tool_result", {"workflow": "never-used", "handle": handle}))[1]
        gone = (await a.call("recall_tool_result", {"workflow": wf, "handle": handle}))[1]
        check(gone == made_up, "an ended workflow's handle reads differently from a made-up one")
        g = await a.ok("gather_context", {"workflow": wf, "query": opts.query + " " + SECRET,
                                          "max_chars": 20000})
        check(not [i for i in g["items"] if i["layer"] in ("entity", "summary", "tool_result")],
              f"gather_context after end_workflow: {g}")
        check(SECRET not in json.dumps(g, ensure_ascii=False), "the secret after end_workflow")
        print(f"end_workflow: {e['deleted']}")
    print("OK")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--own-phrase", required=True)
    ap.add_argument("--shared-phrase", required=True)
    ap.add_argument("--query", required=True)
    opts = ap.parse_args()
    try:
        asyncio.run(main(opts))
    except Failed:
        sys.exit(1)
    except BaseExceptionGroup as g:
        if g.subgroup(Failed) is None:
            raise
        sys.exit(1)
