#!/usr/bin/env python3
"""Check `ingest mcp` through the official Python MCP client against docs/TOOLS.md.

    check_tools.py --bin BIN --data-dir DIR --root S [--scope-a alice] [--scope-b bob]
                   [--big-pdf S/a/big.pdf --big-pdf-expect S/big.json]
    check_tools.py --self-test

Runs with the venv `make deps` creates (.venv-test, PyPI `mcp` pinned in
tests/mcp/requirements.txt). Exits 1 with `FAILED: <what>` on the first failed check, 0 when
every check passed; prints figures (answer sizes, milliseconds) on the way.

The data directory must hold this layout (tests/integration/mcp.rs builds it):

  S/a/          ingested as a folder by scope A: docs/ (a copy of fixtures/docs), archives/ (a
                copy of fixtures/archives), survey-report.pdf, big.pdf (scripts/make-big-pdf.py,
                optional), twin-alice.txt
  S/b/          ingested as a folder by scope B: secret-bob.txt (a phrase only B has),
                twin-bob.txt (the same bytes as twin-alice.txt), pack-bob.zip
  S/shared/     note-alice.txt ingested by A, note-bob.txt ingested by B (single files), so
                the folder holds files of both scopes

What it checks (each tool answer is checked as it arrives: one text content, a JSON object
whose UTF-8 length is at most the call's max_chars, structured content, if sent, no longer
when serialized compactly and equal to the text, `size.chars` its own length, `is_error`
exactly when it is `{"error": ...}`):

  - list_tools gives every tool (the document, source and workflow tools), each with a description and an object input schema
    naming the arguments of src/tools/mod.rs; `--tools browse_container,read_section` gives
    only those two and a hidden tool cannot be called;
  - every tool once on real fixtures: browse the scope's top level, a folder, an archive, a
    PDF's outline; read one page; read a section; search within one file; extract an archive
    member;
  - cursors rebuild content exactly: for many budgets and files, read_content_objects and
    read_section are followed to the end and each object's text is rebuilt from its pieces
    (`offset`, `end`, `omitted`, `head[N chars omitted]tail`), then compared byte for byte
    with the same read at max_chars 100000 (no piece split there); every object exactly once,
    in order, each continuation starting at the range the marker stood for, progress on every
    call, at most MAX_CALLS calls;
  - browse answers paged by cursor list every member (and outline entry) exactly once, the
    same as one large answer; every folder's `members` count matches what browsing it lists;
  - search: at most `limit` hits over all pages, the cursor continues without repeating, the
    pages together equal one large answer; `locator` and `pages` filters hold;
  - scope isolation: no answer of scope A holds a name, locator or phrase of B's files (in a
    folder both scopes have files in, with a file whose bytes B holds under another name);
    B's locators are answered exactly as made-up ones; B itself sees its files;
  - render_page: image content (PNG) within max_bytes at 10 KB, 100 KB and 1 MB, described
    by its text (bytes, width, height, page); a verify_quote box rendered as a region is that
    size; a page past the end is refused;
  - the big PDF: outline (every entry with its page range, through `hidden` expansion), page
    labels, pages with images and without text, page 47 read alone; figures printed.
"""
import argparse
import asyncio
import contextlib
import json
import os
import sys
import time

DEFAULT_MAX_CHARS = 4000
MIN_MAX_CHARS = 200
LARGE = 100000  # "everything unsplit": the server is started with this ceiling
BUDGETS = [200, 257, 333, 500, 777, 1000, 1500, 2500, 4000, 7000, 12000, 20000]
MAX_CALLS = 3000  # per followed sequence: a guard against cursors that never end
# A followed read is skipped at a budget where it would take more calls than this (the tiny
# budgets are still exercised on the smaller texts).
MAX_CALLS_PLANNED = 600
CALL_TIMEOUT_S = 300

TOOLS = {
    "search_documents": ["query", "limit", "min_score", "mode", "locator", "source", "owner",
                         "content_type",
                         "kind", "pages", "section", "sheet", "slide", "shared", "tags", "positions", "max_chars",
                         "cursor"],
    "browse_container": ["locator", "owner", "section", "max_chars", "cursor"],
    "read_content_objects": ["locator", "owner", "pages", "section", "content_type", "sheet", "rows",
                             "slide", "around", "before", "after", "unit", "positions", "max_chars",
                             "cursor"],
    "read_section": ["locator", "owner", "section", "max_chars", "cursor"],
    "verify_quote": ["locator", "quote", "owner", "max_chars"],
    "render_page": ["locator", "page", "dpi", "region", "max_bytes", "owner", "max_chars"],
    "extract_container_item": ["locator", "max_chars", "cursor"],
    # The source tools (tests/mcp/sources_mcp.py plays them).
    "list_sources": ["max_chars", "cursor"],
    "browse_source": ["source", "path", "max_chars", "cursor"],
    "pull_source": ["source", "path", "max_chars"],
    # The workflow tools (tests/mcp/workflow.py plays them).
    "store_tool_result": ["workflow", "tool", "content", "args", "extract_entities", "max_chars"],
    "recall_tool_result": ["workflow", "handle", "lines", "max_chars", "cursor"],
    "remember": ["workflow", "key", "value", "source", "max_chars"],
    "store_summary": ["workflow", "text", "covers", "max_chars"],
    "gather_context": ["query", "workflow", "layers", "mode", "max_chars", "cursor"],
    "end_workflow": ["workflow", "keep_summary", "max_chars"],
}
REQUIRED = {"search_documents": {"query"}, "read_content_objects": {"locator"},
            "read_section": {"locator", "section"}, "extract_container_item": {"locator"},
            "verify_quote": {"locator", "quote"}, "render_page": {"locator"},
            "browse_source": {"source"}, "pull_source": {"source"},
            "store_tool_result": {"workflow", "tool", "content"},
            "recall_tool_result": {"workflow", "handle"},
            "remember": {"workflow", "key", "value"}, "store_summary": {"workflow", "text"},
            "gather_context": {"query", "workflow"}, "end_workflow": {"workflow"}}
PIECE_FIELDS = ("text", "offset", "end", "omitted")
# Fields of a whole answer that change from one page to the next.
PAGE_FIELDS = ("cursor", "more", "size")
LEDGER_STATUSES = {"indexed", "unchanged", "duplicate", "skipped", "failed", "removed", "ignored"}


class CheckFailed(Exception):
    pass


def fail(msg):
    raise CheckFailed(msg)


def check(cond, msg):
    if not cond:
        fail(msg() if callable(msg) else msg)


def short(value, n=600):
    s = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return s if len(s) <= n else s[: n // 2] + f" …({len(s) - n} more)… " + s[-n // 2:]


def utf8_len(s):
    return len(s.encode("utf-8"))


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def log(msg):
    print(msg, flush=True)


# ---------------------------------------------------------------------------------------------
# Rebuilding texts from pieces (pure functions: --self-test exercises them)
# ---------------------------------------------------------------------------------------------


def marker(n):
    return f"[{n} chars omitted]"


def piece_ranges(chars, text, offset=None, end=None, omitted=None, where=""):
    """The (start, end, text) ranges of the object's text one piece carries, per docs/TOOLS.md:
    a whole text (no offset), or [offset, end) with the marker standing for `omitted`."""
    check(isinstance(text, str), f"{where}: text is not a string")
    check(isinstance(chars, int) and chars >= 0, f"{where}: bad chars {chars!r}")
    if offset is None and end is None and omitted is None:
        check(len(text) == chars,
              f"{where}: whole text of {len(text)} chars, but chars says {chars}")
        return [(0, chars, text)]
    check(isinstance(offset, int) and isinstance(end, int) and 0 <= offset <= end <= chars,
          f"{where}: bad offset/end {offset!r}/{end!r} for chars {chars}")
    if omitted is None:
        check(len(text) == end - offset,
              f"{where}: piece [{offset}, {end}) holds {len(text)} chars, not {end - offset}")
        return [(offset, end, text)]
    check(isinstance(omitted, list) and len(omitted) == 2
          and all(isinstance(v, int) for v in omitted), f"{where}: bad omitted {omitted!r}")
    a, b = omitted
    check(offset <= a < b <= end, f"{where}: omitted [{a}, {b}) not inside [{offset}, {end})")
    head, tail, mark = a - offset, end - b, marker(b - a)
    check(len(text) == head + len(mark) + tail and text[head:head + len(mark)] == mark,
          lambda: f"{where}: expected {head} head chars, {mark!r}, {tail} tail chars; got "
                  f"{len(text)} chars around {text[max(0, head - 10):head + len(mark) + 10]!r}")
    return [(offset, a, text[:head]), (b, end, text[len(text) - tail:])]


class Rebuilder:
    """Collects the pieces of object texts from successive answers of one followed read and
    rebuilds every text; fails on overlap, gaps, disorder and continuations that do not pick
    up the omitted range."""

    def __init__(self, what):
        self.what = what
        self.objects = {}  # key -> {"chars": N, "ranges": [(s, e, text)], "fields": {...}}
        self.order = []
        self.pending = []  # omitted ranges not yet delivered: [(key, a, b)], innermost last

    def add(self, key, piece, where):
        """Add one piece (a dict with chars, text and maybe offset/end/omitted); the number
        of new chars it brought, plus one for an object not seen before."""
        chars = piece.get("chars")
        if chars is None:  # compact answers leave `chars` out: a first piece spans [0, end)
            known = self.objects.get(key)
            if known is not None:
                chars = known["chars"]
            elif piece.get("offset") is not None:
                chars = piece.get("end")
            else:
                chars = len(piece.get("text") or "")
        ranges = piece_ranges(chars, piece.get("text"), piece.get("offset"), piece.get("end"),
                              piece.get("omitted"), where)
        fields = {k: v for k, v in piece.items() if k not in PIECE_FIELDS + PAGE_FIELDS}
        progress = 0
        entry = self.objects.get(key)
        if entry is None:
            check(not self.pending, lambda: f"{where}: object {key!r} starts while "
                  f"{self.pending[-1]} was left omitted (the next answer must continue it)")
            check(piece.get("offset") in (None, 0),
                  f"{where}: object {key!r} first seen at offset {piece.get('offset')}")
            entry = self.objects[key] = {"chars": chars, "ranges": [], "fields": fields}
            self.order.append(key)
            progress += 1
        else:
            check(entry["chars"] == chars,
                  f"{where}: object {key!r} had chars {entry['chars']}, now {chars}")
            check(piece.get("offset") is not None,
                  f"{where}: object {key!r} repeated whole (it was delivered before)")
            check(self.pending and self.pending[-1][0] == key
                  and self.pending[-1][1] == piece["offset"],
                  lambda: f"{where}: piece of {key!r} at [{piece['offset']}, {piece['end']}) "
                          f"does not continue the omitted range {self.pending[-1:] or 'none'}")
            _, a, b = self.pending.pop()
            check(piece["end"] == b, f"{where}: continuation of {key!r} ends at {piece['end']},"
                                     f" the omitted range at {b}")
            for k, v in fields.items():
                # Compact answers shorten these; full answers must agree on the rest.
                if k in entry["fields"] and k not in ("section", "compact", "at"):
                    check(entry["fields"][k] == v, f"{where}: {key!r} field {k}: "
                          f"{short(entry['fields'][k])} then {short(v)}")
        for s, e, t in ranges:
            if e == s:
                continue
            for s2, e2, _ in entry["ranges"]:
                check(e <= s2 or e2 <= s,
                      f"{where}: {key!r} range [{s}, {e}) overlaps [{s2}, {e2}) delivered before")
            entry["ranges"].append((s, e, t))
            progress += e - s
        if piece.get("omitted") is not None:
            a, b = piece["omitted"]
            self.pending.append((key, a, b))
        return progress

    def texts(self):
        """Every object's rebuilt text, in the order first seen; fails on gaps."""
        check(not self.pending, lambda: f"{self.what}: ended with {self.pending} still omitted")
        out = {}
        for key in self.order:
            entry = self.objects[key]
            pos, parts = 0, []
            for s, e, t in sorted(entry["ranges"]):
                check(s == pos, f"{self.what}: {key!r} has a gap [{pos}, {s})")
                parts.append(t)
                pos = e
            check(pos == entry["chars"], f"{self.what}: {key!r} rebuilt to {pos} of "
                                         f"{entry['chars']} chars")
            out[key] = "".join(parts)
        return out


def without_locator(text, locator, placeholder="<LOCATOR>"):
    """An answer with a locator (and its JSON-escaped form) replaced, to compare error texts."""
    for form in (locator, json.dumps(locator)[1:-1], json.dumps(locator, ensure_ascii=False)[1:-1]):
        text = text.replace(form, placeholder)
    return text


def range_list(pages):
    """`[3, 4, 5, 9]` -> "3-5, 9" (how docs/TOOLS.md writes page lists)."""
    out, start, prev = [], None, None
    for p in sorted(pages):
        if start is None:
            start = prev = p
        elif p == prev + 1:
            prev = p
        else:
            out.append(f"{start}-{prev}" if prev > start else f"{start}")
            start = prev = p
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else f"{start}")
    return ", ".join(out)


# ---------------------------------------------------------------------------------------------
# The MCP server
# ---------------------------------------------------------------------------------------------


class Answer:
    def __init__(self, tool, args, raw, obj, is_error, ms, budget):
        self.tool, self.args, self.raw, self.obj = tool, args, raw, obj
        self.is_error, self.ms, self.budget = is_error, ms, budget

    def where(self):
        shown = {k: v for k, v in self.args.items() if k != "cursor"}
        if "cursor" in self.args:
            shown["cursor"] = "…"
        return f"{self.tool}({compact(shown)})"


class Server:
    """One `ingest mcp` child over stdio and its ClientSession; checks every answer."""

    def __init__(self, opts, user, tools=None):
        self.opts, self.user, self.tools = opts, user, tools
        self.answers = []
        self.calls = 0

    @contextlib.asynccontextmanager
    async def running(self):
        """Start `BIN mcp` for this scope and yield self with a ready session."""
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        args = ["mcp", "--data-dir", self.opts.data_dir, "--user", self.user,
                "--max-answer-chars", str(LARGE)]
        if self.tools:
            args += ["--tools", ",".join(self.tools)]
        # A stdio child gets only HOME/LOGNAME/PATH/SHELL/TERM/USER by default.
        env = {k: v for k, v in os.environ.items()
               if k in ("INGEST_MODEL_DIR", "RUST_LOG", "RUST_BACKTRACE")}
        params = StdioServerParameters(command=self.opts.bin, args=args, env=env, cwd=os.getcwd())
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=CALL_TIMEOUT_S) as session:
                self.session = session
                try:
                    await session.initialize()
                except Exception as err:  # the child's own stderr (printed above) says why
                    fail(f"`{self.opts.bin} {' '.join(args)}` did not start an MCP session: "
                         f"{err!r}")
                yield self

    async def list_tools(self):
        from mcp import types
        tools, cursor = [], None
        for _ in range(100):
            res = await self.session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools += res.tools
            cursor = res.next_cursor
            if not cursor:
                return tools
        fail("list_tools: next_cursor never ends")

    async def call(self, tool, args, scan=True):
        """Call a tool and check the answer's form; `scan`: whether the isolation check
        scans it for the other scope's strings."""
        budget = min(max(args.get("max_chars", DEFAULT_MAX_CHARS), MIN_MAX_CHARS), LARGE)
        started = time.monotonic()
        res = await self.session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
        ms = (time.monotonic() - started) * 1000
        self.calls += 1
        where = f"{tool}({short(compact(args), 300)}) as {self.user}"
        # One text content; render_page's answer also one image content after it.
        images = res.content[1:] if tool == "render_page" and not res.is_error else []
        check(len(res.content) == 1 + len(images) and len(images) <= 1
              and getattr(res.content[0], "type", None) == "text"
              and all(getattr(i, "type", None) == "image" for i in images),
              lambda: f"{where}: expected one text content, got {short(repr(res.content))}")
        raw = res.content[0].text
        n = utf8_len(raw)
        check(n <= budget, lambda: f"{where}: answer of {n} bytes exceeds max_chars {budget}: "
                                   f"{short(raw)}")
        try:
            obj = json.loads(raw)
        except ValueError as err:
            fail(f"{where}: answer is not JSON ({err}): {short(raw)}")
        check(isinstance(obj, dict), f"{where}: answer is not a JSON object: {short(raw)}")
        if res.structured_content is not None:
            sc = compact(res.structured_content)
            check(utf8_len(sc) <= budget, f"{where}: structured content of {utf8_len(sc)} bytes "
                                          f"exceeds max_chars {budget}")
            check(res.structured_content == obj,
                  f"{where}: structured content differs from the text: {short(sc)}")
        is_error = bool(res.is_error)
        check(is_error == ("error" in obj),
              f"{where}: is_error={is_error} but the answer is {short(raw)}")
        if is_error:
            check(isinstance(obj["error"], str) and obj["error"], f"{where}: empty error")
        else:
            size = obj.get("size")
            check(isinstance(size, dict) and size.get("chars") == n,
                  lambda: f"{where}: size {size} does not give the answer's length {n}")
            check(isinstance(size.get("tokens"), int) and abs(size["tokens"] - n / 4) <= 1,
                  f"{where}: size.tokens {size.get('tokens')} is not chars/4 ({n})")
            if "cursor" in obj:
                check(isinstance(obj["cursor"], str) and obj["cursor"],
                      f"{where}: empty cursor")
                # Compact answers (small budgets) leave `more` out and say `compact: true`.
                check((isinstance(obj.get("more"), str) and obj["more"]) or obj.get("compact") is True,
                      f"{where}: a cursor without `more`")
        answer = Answer(tool, args, raw, obj, is_error, ms, budget)
        answer.image = images[0] if images else None
        # What a leak check scans: the answer without the echo of the caller's own query.
        scanned = {k: v for k, v in obj.items() if k != "query"} if isinstance(obj, dict) else obj
        answer.scan = json.dumps(scanned, ensure_ascii=False) if scan else ""
        self.answers.append(answer)
        return answer

    async def ok(self, tool, args):
        a = await self.call(tool, args)
        check(not a.is_error, lambda: f"{a.where()} as {self.user}: error {a.obj['error']!r}")
        return a

    async def follow(self, tool, args, on_answer, what):
        """Call, then follow cursors to the end; `on_answer(answer, i)` returns the progress
        the answer made (> 0 required). The answers."""
        answers, cursor = [], None
        for i in range(MAX_CALLS):
            call_args = dict(args)
            if cursor is not None:
                call_args["cursor"] = cursor
            a = await self.ok(tool, call_args)
            progress = on_answer(a, i)
            check(progress > 0, lambda: f"{what}: call {i + 1} made no progress: {short(a.raw)}")
            answers.append(a)
            cursor = a.obj.get("cursor")
            if cursor is None:
                return answers
        fail(f"{what}: still a cursor after {MAX_CALLS} calls")


# ---------------------------------------------------------------------------------------------
# Followed reads
# ---------------------------------------------------------------------------------------------


async def read_objects(srv, args, what):
    """Follow read_content_objects; (objects' rebuilt texts by n, fields by n, total, answers)."""
    rb = Rebuilder(what)
    state = {"total": None, "last_n": -1}

    def on_answer(a, i):
        obj = a.obj
        where = f"{what} call {i + 1} ({a.budget} chars)"
        check(isinstance(obj.get("objects"), list), f"{where}: no objects list: {short(a.raw)}")
        # Compact answers (small budgets) leave out total, locators and types.
        small = obj.get("compact") is True
        if not small:
            check(isinstance(obj.get("total"), int), f"{where}: no total")
            if state["total"] is None:
                state["total"] = obj["total"]
            check(obj["total"] == state["total"],
                  f"{where}: total {obj['total']} after {state['total']}")
            check(obj.get("locator") == args["locator"],
                  f"{where}: locator {obj.get('locator')!r} is not the one asked for")
        progress = 0
        for o in obj["objects"]:
            n = o.get("n")
            check(isinstance(n, int) and 0 <= n < (state["total"] if state["total"] is not None else 1 << 40),
                  f"{where}: bad n {n!r}")
            if n not in rb.objects:
                check(n > state["last_n"], f"{where}: object {n} after {state['last_n']}")
                state["last_n"] = n
            if not small:
                for k in ("locator", "type"):
                    check(isinstance(o.get(k), str) and o[k], f"{where}: object {n} without {k}")
            progress += rb.add(n, o, f"{where} object {n}")
        return progress

    answers = await srv.follow("read_content_objects", args, on_answer, what)
    texts = rb.texts()
    total = state["total"] if state["total"] is not None else (max(texts) + 1 if texts else 0)
    check(sorted(texts) == list(range(total)),
          lambda: f"{what}: objects {sorted(texts)} delivered, total {total}")
    return texts, {k: v["fields"] for k, v in rb.objects.items()}, total, answers


async def read_section(srv, args, what):
    """Follow read_section; (rebuilt text, section, answers)."""
    rb = Rebuilder(what)
    state = {}

    def on_answer(a, i):
        obj = a.obj
        where = f"{what} call {i + 1} ({a.budget} chars)"
        sec = obj.get("section")
        if obj.get("compact") is True:  # compact answers shorten or leave out `section`
            check(sec is None or sec.get("id") == args["section"],
                  f"{where}: section {short(sec)} is not {args['section']!r}")
        else:
            check(isinstance(sec, dict) and sec.get("id") == args["section"],
                  f"{where}: section {short(sec)} is not {args['section']!r}")
            state.setdefault("section", sec)
            check(sec == state["section"], f"{where}: section {sec} after {state['section']}")
        return rb.add(args["section"], obj, where)

    answers = await srv.follow("read_section", args, on_answer, what)
    return rb.texts()[args["section"]], state.get("section"), answers


def planned_calls(chars, budget):
    return chars / max(budget - 180, 20) + 2


async def check_reads(srv, targets):
    """Cursor reconstruction over many budgets for each (kind, args, label) target."""
    total_calls = 0
    for kind, args, label in targets:
        ref_args = dict(args, max_chars=LARGE)
        if kind == "objects":
            ref_texts, ref_fields, ref_total, ref_answers = await read_objects(
                srv, ref_args, f"{label} at {LARGE}")
            check(not any("offset" in f for f in ref_fields.values()),
                  f"{label}: split at {LARGE} chars")
            size = sum(len(t) for t in ref_texts.values())
            check(ref_total > 0, f"{label}: nothing to read")
        else:
            ref_text, ref_sec, ref_answers = await read_section(srv, ref_args, f"{label} at {LARGE}")
            check(len(ref_answers) == 1 and "offset" not in ref_answers[0].obj,
                  f"{label}: split at {LARGE} chars")
            size = len(ref_text)
        done = []
        for budget in BUDGETS:
            if planned_calls(size, budget) > MAX_CALLS_PLANNED:
                continue
            what = f"{label} at {budget}"
            if kind == "objects":
                texts, fields, total, answers = await read_objects(
                    srv, dict(args, max_chars=budget), what)
                check(total == ref_total, f"{what}: total {total}, {ref_total} unsplit")
                for n, t in ref_texts.items():
                    check(texts[n] == t, lambda: f"{what}: object {n} rebuilt differs: "
                                                 f"{short(texts[n])} vs {short(t)}")
                    for k, v in fields[n].items():
                        if k in ref_fields[n]:
                            check(ref_fields[n][k] == v, f"{what}: object {n} {k} {short(v)}, "
                                                         f"unsplit {short(ref_fields[n][k])}")
            else:
                text, sec, answers = await read_section(srv, dict(args, max_chars=budget), what)
                check(text == ref_text, lambda: f"{what}: rebuilt section differs: "
                                                f"{short(text)} vs {short(ref_text)}")
                check(sec is None or sec == ref_sec, f"{what}: section {sec}, unsplit {ref_sec}")
            done.append(f"{budget}:{len(answers)}")
            total_calls += len(answers)
        check(done, f"{label}: no budget tried")
        log(f"  rebuilt {label} ({size} chars) exactly at budgets:calls {' '.join(done)}")
    return total_calls


async def browse_all(srv, args, what):
    """Follow browse_container; (first answer, members or outline entries in order)."""
    items, seen = [], set()
    state = {}

    def on_answer(a, i):
        obj = a.obj
        where = f"{what} call {i + 1} ({a.budget} chars)"
        if obj.get("compact") is not True:  # compact answers may leave `kind` out
            state.setdefault("kind", obj.get("kind"))
            check(obj.get("kind") == state["kind"], f"{where}: kind {obj.get('kind')!r}")
        # Members are named uniquely within their container (compact answers give no locator).
        document = obj.get("kind", state.get("kind")) == "document" or "outline" in obj
        key, id_field = ("outline", "id") if document else ("members", "name")
        lst = obj.get(key, [])
        check(isinstance(lst, list), f"{where}: {key} is not a list")
        for m in lst:
            ident = m.get(id_field)
            check(isinstance(ident, str) and ident, f"{where}: entry without {id_field}: {m}")
            if ident == args.get("section"):
                continue  # an expanded node may head its own answer
            check(ident not in seen, f"{where}: {ident!r} listed twice")
            seen.add(ident)
            items.append(m)
        return len(lst) or (1 if i == 0 else 0)

    answers = await srv.follow("browse_container", args, on_answer, what)
    return answers[0], items


async def check_browse_paging(srv, args, label, budgets=(200, 333, 500, 1000, 4000)):
    first, ref = await browse_all(srv, dict(args, max_chars=LARGE), f"{label} at {LARGE}")
    obj = first.obj
    if obj.get("kind") != "document":
        check(obj.get("total") == len(ref),
              f"{label}: total {obj.get('total')} but {len(ref)} members listed")
    document = obj.get("kind") == "document"
    key = "id" if document else "name"
    ref_ids = [m[key] for m in ref]
    tried = []
    for budget in budgets:
        if planned_calls(len(compact(ref)), budget) > MAX_CALLS_PLANNED:
            continue
        what = f"{label} at {budget}"
        page1, items = await browse_all(srv, dict(args, max_chars=budget), what)
        ids = [m[key] for m in items]
        if document:
            # Which outline entries a page shows is the server's choice; what it shows and
            # hides must still add up to the whole outline, each entry once.
            check(outline_adds_up(page1.obj, items, obj.get("outline_total")),
                  lambda: f"{what}: {len(items)} entries shown + "
                          f"{sum(e.get('hidden', 0) for e in items)} hidden != outline_total "
                          f"{obj.get('outline_total')}")
            tried.append(f"{budget}{'' if ids == ref_ids else '*'}")
        else:
            check(ids == ref_ids, lambda: f"{what}: listed {short(ids)}, unsplit {short(ref_ids)}")
            tried.append(str(budget))
    if document:
        check(outline_adds_up(obj, ref, obj.get("outline_total")),
              f"{label}: {len(ref)} entries shown + {sum(e.get('hidden', 0) for e in ref)} "
              f"hidden != outline_total {obj.get('outline_total')}")
    log(f"  browse {label}: {len(ref)} entries, the same at budgets {' '.join(tried)}"
        + (" (* other entries shown, adding up)" if any("*" in t for t in tried) else ""))
    return first, ref


def outline_adds_up(first, items, outline_total):
    """Shown outline entries plus those they hide make the whole outline (when the answer
    gives `outline_total`)."""
    return isinstance(outline_total, int) and \
        first.get("outline_total") == outline_total and \
        len(items) + sum(e.get("hidden", 0) for e in items) == outline_total


async def search_all(srv, args, what):
    hits = []
    state = {}

    def on_answer(a, i):
        lst = a.obj.get("hits")
        where = f"{what} call {i + 1} ({a.budget} chars)"
        check(isinstance(lst, list), f"{where}: no hits list")
        check(a.obj.get("query") == args["query"] or a.obj.get("compact") is True, f"{where}: query {a.obj.get('query')!r}")
        for h in lst:
            check(isinstance(h.get("locator"), str) and isinstance(h.get("score"), (int, float)),
                  f"{where}: hit without locator or score: {h}")
        hits.extend(lst)
        limit = args.get("limit", 5)
        check(len(hits) <= limit, f"{where}: {len(hits)} hits so far, limit {limit}")
        state["n"] = i
        return len(lst) or (1 if i == 0 else 0)

    await srv.follow("search_documents", args, on_answer, what)
    return hits


async def check_search_paging(srv, args, label, budgets=(300, 600, 1500, 4000)):
    ref = await search_all(srv, dict(args, max_chars=LARGE), f"{label} at {LARGE}")
    ref_locs = [h["locator"] for h in ref]
    check(ref, f"{label}: no hits")
    for budget in budgets:
        hits = await search_all(srv, dict(args, max_chars=budget), f"{label} at {budget}")
        locs = [h["locator"] for h in hits]
        check(locs == ref_locs, f"{label} at {budget}: hits {locs}, unsplit {ref_locs}")
    log(f"  search {label}: {len(ref)} hits, the same paged at budgets {list(budgets)}")
    return ref


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------


def check_tool_list(tools, expected, where):
    names = sorted(t.name for t in tools)
    check(names == sorted(expected), f"{where}: tools {names}, expected {sorted(expected)}")
    for t in tools:
        check(t.description and t.description.strip(), f"{where}: {t.name} has no description")
        schema = t.input_schema
        check(isinstance(schema, dict) and schema.get("type") == "object",
              f"{where}: {t.name} input schema is not an object schema: {short(schema)}")
        props = schema.get("properties") or {}
        check(sorted(props) == sorted(TOOLS[t.name]),
              f"{where}: {t.name} arguments {sorted(props)}, expected {sorted(TOOLS[t.name])}")
        required = set(schema.get("required") or [])
        check(required == REQUIRED.get(t.name, set()),
              f"{where}: {t.name} requires {sorted(required)}")


async def find_member(srv, locator, name):
    _, members = await browse_all(srv, {"locator": locator, "max_chars": LARGE}, f"browse {locator}")
    for m in members:
        if m.get("name") == name:
            return m
    fail(f"browse {locator}: no member {name!r} in {[m.get('name') for m in members]}")


async def outline_entries(srv, locator, what):
    """Every outline entry of a document, expanding nodes with `hidden` entries."""
    first, top = await browse_all(srv, {"locator": locator, "max_chars": LARGE}, what)
    entries, queue = list(top), [e for e in top if e.get("hidden")]
    while queue:
        node = queue.pop(0)
        _, under = await browse_all(srv, {"locator": locator, "section": node["id"],
                                          "max_chars": LARGE}, f"{what} section {node['id']}")
        shown = len(under) + sum(e.get("hidden", 0) for e in under)
        check(shown == node["hidden"], f"{what}: {node['id']} hides {node['hidden']} entries; "
                                       f"expanding it shows {len(under)} and hides "
                                       f"{shown - len(under)}")
        entries += under
        queue += [e for e in under if e.get("hidden")]
    ids = [e["id"] for e in entries]
    check(len(set(ids)) == len(ids), f"{what}: outline ids repeat")
    return first, entries


async def check_fixtures(srv, root):
    """Every tool on the ordinary fixtures, and the property checks on them."""
    a = os.path.join(root, "a")
    log("fixtures: browse, read, search, extract")
    await check_browse_paging(srv, {}, "the scope's top level")
    first, members = await check_browse_paging(srv, {"locator": a}, "folder a/")
    check(first.obj.get("kind") == "folder", f"browse {a}: kind {first.obj.get('kind')!r}")
    names = {m.get("name") for m in members}
    for name in ("docs", "archives", "survey-report.pdf", "twin-alice.txt"):
        check(any(n == name or n.startswith(name + "/") for n in names),
              f"browse {a}: no {name} in {sorted(names)}")
    docs = os.path.join(a, "docs")
    await check_browse_paging(srv, {"locator": docs}, "folder a/docs/")
    bundle = os.path.join(a, "archives", "bundle.zip")
    first, _ = await check_browse_paging(srv, {"locator": bundle}, "archive bundle.zip")
    check(first.obj.get("kind") == "archive", f"browse {bundle}: kind {first.obj.get('kind')!r}")
    inner = bundle + "!/docs/inner.tar.gz"
    first, members = await check_browse_paging(srv, {"locator": inner}, "nested inner.tar.gz")
    check(first.obj.get("kind") == "archive" and members, f"browse {inner}: {short(first.raw)}")

    survey = os.path.join(a, "survey-report.pdf")
    first, outline = await check_browse_paging(srv, {"locator": survey}, "survey-report.pdf outline",
                                                budgets=(500, 1000, 4000))
    doc = first.obj
    check(doc.get("kind") == "document" and doc.get("pages") == 3
          and doc.get("type") == "application/pdf", f"browse {survey}: {short(first.raw)}")
    _, all_entries = await outline_entries(srv, survey, "survey-report.pdf outline")
    got = [(e.get("title"), e.get("level"), e.get("pages")) for e in all_entries]
    want = [("1 Introduction", 1, [1, 1]), ("2 Installation", 1, [2, 3]),
            ("2.1 Upgrading", 2, [3, 3])]
    check(sorted(got) == sorted(want), f"survey-report.pdf outline {got}, expected {want}")
    sec_install = next(e["id"] for e in all_entries if e.get("title") == "2 Installation")

    page = await srv.ok("read_content_objects", {"locator": survey, "pages": "2"})
    texts = [o for o in page.obj["objects"] if o.get("type") == "text"]
    check(len(texts) == 1 and texts[0]["locator"] == survey + "#page=2"
          and "Install the tide gauge on the north pier" in texts[0]["text"],
          f"read page 2 of survey-report.pdf: {short(page.raw)}")
    sec = await srv.ok("read_section", {"locator": survey, "section": sec_install})
    check("Install the tide gauge" in sec.obj.get("text", "")
          and "Upgrade the gauge firmware" in sec.obj.get("text", ""),
          f"read_section 2 Installation: {short(sec.raw)}")

    handbook = os.path.join(docs, "handbook.md")
    _, hb_outline = await outline_entries(srv, handbook, "handbook.md outline")
    check(hb_outline, "handbook.md: no sections in its outline")

    hits = await check_search_paging(
        srv, {"query": "who kept the lighthouse on Skerry Point", "limit": 5}, "lighthouse keeper")
    check(any("lighthouse.md" in h["locator"] for h in hits),
          f"search lighthouse keeper: no hit in lighthouse.md: {[h['locator'] for h in hits]}")
    await check_search_paging(srv, {"query": "tide gauge pier", "limit": 10}, "tide gauge, limit 10")
    within = await srv.ok("search_documents", {"query": "install the tide gauge",
                                               "locator": survey, "limit": 5})
    check(within.obj["hits"] and all(h["locator"].startswith(survey + "#")
                                     or (h["locator"] == survey and h.get("kind") == "card")
                                     for h in within.obj["hits"]),
          f"search within survey-report.pdf: {short(within.raw)}")
    in_archive = await srv.ok("search_documents", {"query": "tides", "locator": bundle, "limit": 5})
    # Within an archive: its members, and the archive's own card.
    check(in_archive.obj["hits"] and all(h["locator"].startswith(bundle + "!/")
                                         or (h["locator"] == bundle and h.get("kind") == "card")
                                         for h in in_archive.obj["hits"])
          and any(h["locator"].startswith(bundle + "!/") for h in in_archive.obj["hits"]),
          f"search within bundle.zip: {short(in_archive.raw)}")

    member = bundle + "!/README.txt"
    ex = await srv.ok("extract_container_item", {"locator": member})
    extracted = ex.obj.get("extracted")
    check(isinstance(extracted, dict) and extracted.get("status") in LEDGER_STATUSES - {"failed"},
          f"extract_container_item {member}: {short(ex.raw)}")
    check(ex.obj.get("locator") == member, f"extract_container_item {member}: {short(ex.raw)}")
    nested = inner + "!/notes/tides.txt"
    ex = await srv.ok("extract_container_item", {"locator": nested, "max_chars": 500})
    check(ex.obj.get("extracted", {}).get("status") in LEDGER_STATUSES - {"failed"},
          f"extract_container_item {nested}: {short(ex.raw)}")

    await check_render(srv, survey)

    log("fixtures: cursors rebuild texts exactly")
    targets = [
        ("objects", {"locator": os.path.join(docs, "notes.txt")}, "notes.txt"),
        ("objects", {"locator": handbook}, "handbook.md"),
        ("objects", {"locator": os.path.join(docs, "inventory.csv")}, "inventory.csv"),
        ("objects", {"locator": os.path.join(docs, "visitors.html")}, "visitors.html"),
        ("objects", {"locator": survey}, "survey-report.pdf"),
        ("objects", {"locator": inner + "!/notes/lighthouse.md"}, "inner.tar.gz!/lighthouse.md"),
        ("section", {"locator": survey, "section": sec_install}, "survey-report.pdf § 2 Installation"),
    ]
    for e in hb_outline[:4]:
        targets.append(("section", {"locator": handbook, "section": e["id"]},
                        f"handbook.md § {e.get('title')}"))
    return await check_reads(srv, targets)


def png_size(data):
    """Width and height from a PNG's IHDR chunk, or None when `data` is no PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


async def check_render(srv, pdf):
    """render_page answers with image content within its byte budget, the text saying what
    the image is; a region from verify_quote's boxes is that part of the page."""
    import base64
    log("fixtures: render_page within 10 KB, 100 KB and 1 MB")
    sizes = []
    for budget in (10_000, 100_000, 1_000_000):
        a = await srv.ok("render_page", {"locator": pdf + "#page=2", "dpi": 300, "max_bytes": budget})
        img = a.image
        mime = getattr(img, "mime_type", None) or getattr(img, "mimeType", None)
        check(img is not None and mime == "image/png",
              f"{a.where()}: no PNG image content: {short(repr(img))}")
        data = base64.b64decode(img.data)
        size = png_size(data)
        check(size is not None, f"{a.where()}: the image is not a PNG")
        check(len(data) <= budget, f"{a.where()}: {len(data)} bytes, over max_bytes {budget}")
        check(a.obj.get("bytes") == len(data) and [a.obj.get("width"), a.obj.get("height")] == list(size)
              and a.obj.get("page") == 2 and a.obj.get("locator") == pdf + "#page=2",
              f"{a.where()}: the text does not describe the image ({len(data)} bytes, {size}): "
              f"{short(a.raw)}")
        if a.obj.get("dpi", 300) < 300:
            check("note" in a.obj, f"{a.where()}: scaled without a note: {short(a.raw)}")
        sizes.append((budget, len(data), size))
    check(sizes[0][2][0] < sizes[2][2][0], f"render_page: a larger budget gave no more pixels: {sizes}")
    quote = await srv.ok("verify_quote", {"locator": pdf, "quote": "Install the tide gauge on the north pier"})
    boxes = [b for m in quote.obj.get("matches", []) for b in m.get("boxes", [])]
    check(boxes and all(b.get("page") == 2 and len(b.get("box", [])) == 4 for b in boxes),
          f"verify_quote in a PDF gives no boxes: {short(quote.raw)}")
    region = await srv.ok("render_page", {"locator": pdf, "page": 2, "region": boxes[0]["box"], "dpi": 144})
    w, h = png_size(base64.b64decode(region.image.data))
    x0, y0, x1, y1 = boxes[0]["box"]
    check(abs(w - (x1 - x0) * 2) <= 4 and abs(h - (y1 - y0) * 2) <= 4,
          f"render_page of the region {boxes[0]['box']} at 144 dpi is {w}x{h}")
    hits = await srv.ok("search_documents", {"query": "install the tide gauge on the north pier",
                                             "locator": pdf, "positions": True, "limit": 3})
    placed = [h for h in hits.obj["hits"] if h.get("boxes")]
    check(placed and all(b.get("page") == int(h["locator"].split("#page=")[1]) and len(b["box"]) == 4
                         for h in placed for b in h["boxes"]),
          f"search with positions: no hit with boxes on its page: {short(hits.raw)}")
    bad = await srv.call("render_page", {"locator": pdf, "page": 9})
    check(bad.is_error and "page 9" in bad.obj["error"], f"render_page page 9: {short(bad.raw)}")
    log(f"  render_page: (max_bytes, bytes, pixels) {sizes}; region {w}x{h}")


async def check_big_pdf(srv, big, expect_path):
    log("big PDF: structure, page 47, cursors")
    with open(expect_path) as f:
        expect = json.load(f)
    pages = expect["pages"]
    started = time.monotonic()
    default = await srv.ok("browse_container", {"locator": big})
    log(f"  FIGURE browse_container(big.pdf) at the default budget: {utf8_len(default.raw)} chars, "
        f"{default.ms:.1f} ms (client-measured round trip)")
    first, entries = await outline_entries(srv, big, "big.pdf outline")
    doc = first.obj
    checks = {
        "kind": "document", "type": "application/pdf", "pages": pages,
        "page_labels": expect["page_labels"],
        "pages_with_images": range_list(int(p) for p in expect["image_pages"]),
        "pages_without_text": range_list(expect["pages_without_text"]),
        "objects": {"text": pages - len(expect["pages_without_text"]),
                    "image": len(expect["image_pages"])},
        "outline_total": len(expect["outline"]),
    }
    for k, v in checks.items():
        check(doc.get(k) == v, f"browse big.pdf: {k} is {short(doc.get(k))}, expected {short(v)}")
    got = sorted((e.get("title"), e.get("level"), e.get("pages")) for e in entries)
    want = sorted((e["title"], e["level"], e["pages"]) for e in expect["outline"])
    missing = [w for w in want if w not in got]
    extra = [g for g in got if g not in want]
    check(not missing and not extra, f"big.pdf outline: {len(missing)} entries missing "
                                     f"(e.g. {missing[:3]}), {len(extra)} unexpected (e.g. {extra[:3]})")
    log(f"  big.pdf outline: all {len(entries)} entries with their page ranges, "
        f"{srv.calls} calls so far; {(time.monotonic() - started):.1f} s")

    p47 = await srv.ok("read_content_objects", {"locator": big, "pages": "47"})
    log(f"  FIGURE read_content_objects(big.pdf, pages 47): {utf8_len(p47.raw)} chars, "
        f"{p47.ms:.1f} ms")
    texts = [o for o in p47.obj["objects"] if o.get("type") == "text"]
    line = expect["first_line"].format(page=47, word=expect["markers"]["47"])
    check(len(texts) == 1 and texts[0].get("locator") == big + "#page=47"
          and texts[0].get("text", "").startswith(line)
          and "This is page 46 " not in texts[0]["text"] and "This is page 48 " not in texts[0]["text"]
          and expect["labels"][46] in (texts[0].get("label") or ""),
          f"page 47 of big.pdf: {short(p47.raw)}")
    images = await srv.ok("read_content_objects", {"locator": big, "pages": "250",
                                                   "content_type": "image"})
    check([(o.get("meta") or {}).get("width") for o in images.obj["objects"]] == [40]
          and images.obj["objects"][0]["locator"] == big + "#page=250",
          f"image on page 250 of big.pdf: {short(images.raw)}")
    # min_score 0: the filters are checked here, not relevance (a generated page's words).
    hits = await srv.ok("search_documents", {"query": "handbook page 47 marker word", "locator": big,
                                             "pages": "47", "limit": 5, "min_score": 0})
    check(hits.obj["hits"] and all(h["locator"] == big + "#page=47" for h in hits.obj["hits"]),
          f"search big.pdf pages 47: {short(hits.raw)}")
    await check_search_paging(srv, {"query": "the storm shutters in thick fog", "locator": big,
                                    "limit": 12}, "big.pdf storm shutters, limit 12")

    by_title = {e.get("title"): e for e in entries}
    section = next(e for e in entries if e.get("level") == 3 and e["pages"][1] > e["pages"][0])
    chapter = by_title["Chapter 2.3 Inspections: the harbour"]
    part = by_title["Part 4: Weather Watch"]
    targets = [
        ("objects", {"locator": big, "pages": "40-60"}, "big.pdf pages 40-60"),
        ("objects", {"locator": big, "pages": "1-14"}, "big.pdf pages 1-14"),
        ("objects", {"locator": big, "pages": "245-255"}, "big.pdf pages 245-255"),
        ("objects", {"locator": big, "section": chapter["id"]}, f"big.pdf objects of {chapter['id']}"),
        ("section", {"locator": big, "section": section["id"]}, f"big.pdf § {section['title']}"),
        ("section", {"locator": big, "section": chapter["id"]}, f"big.pdf § {chapter['title']}"),
        ("section", {"locator": big, "section": part["id"]}, f"big.pdf § {part['title']}"),
    ]
    return await check_reads(srv, targets)


async def check_tools_flag(opts):
    async with Server(opts, opts.scope_a, tools=["browse_container", "read_section"]).running() as srv:
        tools = await srv.list_tools()
        check_tool_list(tools, ["browse_container", "read_section"], "--tools browse_container,read_section")
        await srv.ok("browse_container", {})
        from mcp.shared.exceptions import MCPError
        try:
            res = await srv.session.call_tool("read_content_objects",
                                              {"locator": os.path.join(opts.root, "a", "twin-alice.txt")},
                                              read_timeout_seconds=CALL_TIMEOUT_S)
        except MCPError:
            pass  # a protocol error: the tool does not exist here
        else:
            check(res.is_error, f"--tools: the hidden read_content_objects answered "
                                f"{short(repr(res.content))}")
    log("--tools browse_container,read_section: lists only those two; a hidden tool fails")


async def check_isolation(opts, srv):
    """Scope A must not see anything of scope B."""
    log("scopes: A sees nothing of B")
    root = opts.root
    b_dir = os.path.join(root, "b")
    shared = os.path.join(root, "shared")
    with open(os.path.join(b_dir, "secret-bob.txt")) as f:
        b_phrase = f.readline().strip()
    with open(os.path.join(root, "a", "twin-alice.txt")) as f:
        twin_phrase = f.readline().strip()
    b_names = ["secret-bob.txt", "twin-bob.txt", "pack-bob.zip", "note-bob.txt", "plans-bob.txt"]
    forbidden = b_names + [b_dir + "/", b_phrase]

    # A: the shared folder holds only A's note; the twin shows only under A's name.
    first, members = await browse_all(srv, {"locator": shared, "max_chars": LARGE}, "A browses shared/")
    check([m.get("name") for m in members] == ["note-alice.txt"] and first.obj.get("total") == 1,
          f"scope A browsing shared/: {short(first.raw)}")
    twin = os.path.join(root, "a", "twin-alice.txt")
    hits = await srv.ok("search_documents", {"query": twin_phrase, "limit": 5})
    check(any(h["locator"].startswith(twin) for h in hits.obj["hits"]),
          f"scope A searching the twin's phrase: {short(hits.raw)}")
    r = await srv.ok("read_content_objects", {"locator": twin})
    check(all(o["locator"].startswith(twin) for o in r.obj["objects"]), f"read twin: {short(r.raw)}")
    d = await srv.ok("browse_container", {"locator": twin})
    check(d.obj.get("locator") == twin, f"browse twin: {short(d.raw)}")
    await srv.ok("search_documents", {"query": b_phrase, "limit": 10})
    await srv.ok("search_documents", {"query": "plans of bob", "limit": 10})

    # B's locators are answered exactly as made-up ones of the same length.
    probes = [
        ("read_content_objects", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
        ("read_content_objects", os.path.join(b_dir, "twin-bob.txt"), os.path.join(b_dir, "twin-bxb.txt")),
        ("read_content_objects", os.path.join(shared, "note-bob.txt"), os.path.join(shared, "note-bxb.txt")),
        ("browse_container", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
        ("browse_container", b_dir, os.path.join(root, "q")),
        ("browse_container", os.path.join(b_dir, "pack-bob.zip"), os.path.join(b_dir, "pack-bxb.zip")),
        ("extract_container_item", os.path.join(b_dir, "pack-bob.zip!/plans-bob.txt"),
         os.path.join(b_dir, "pack-bob.zip!/plans-bxb.txt")),
        ("read_section", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
        ("render_page", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
        ("verify_quote", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
        ("search_documents", b_dir, os.path.join(root, "q")),
        ("search_documents", os.path.join(b_dir, "secret-bob.txt"), os.path.join(b_dir, "secret-bxb.txt")),
    ]
    for tool, real, made_up in probes:
        check(len(real) == len(made_up), "probe locators of unequal length")

        def args_for(loc):
            if tool == "search_documents":
                return {"query": b_phrase, "locator": loc}
            if tool == "read_section":
                return {"locator": loc, "section": "s1"}
            if tool == "verify_quote":
                return {"locator": loc, "quote": b_phrase}
            return {"locator": loc}

        # Not scanned for B's strings: they may echo the locator asked for; being equal to
        # the answer for a made-up locator is the check.
        ra = await srv.call(tool, args_for(real), scan=False)
        rm = await srv.call(tool, args_for(made_up), scan=False)
        check(without_locator(ra.raw, real) == without_locator(rm.raw, made_up),
              f"{tool}: B's {real} is answered {short(ra.raw)}, a made-up locator {short(rm.raw)}")
        check(ra.is_error == rm.is_error, f"{tool}: is_error differs for B's locator")
        if tool == "search_documents" and not ra.is_error:
            check(not ra.obj["hits"], f"{tool} under B's {real}: hits {short(ra.raw)}")

    # Every folder A can browse lists as many members as its parent says.
    seen, queue, crawled = set(), [{}], 0
    while queue:
        args = queue.pop(0)
        first, members = await browse_all(srv, dict(args, max_chars=LARGE), f"crawl {args}")
        crawled += 1
        for m in members:
            if m.get("kind") in ("folder", "archive") and m["locator"] not in seen:
                seen.add(m["locator"])
                sub, sub_members = await browse_all(srv, {"locator": m["locator"], "max_chars": LARGE},
                                                    f"crawl {m['locator']}")
                check(sub.obj.get("total") == len(sub_members),
                      f"{m['locator']}: total {sub.obj.get('total')}, {len(sub_members)} listed")
                # `members` counts the entries under it; where all are files, exactly those
                # the scope sees.
                flat = all(s.get("kind") == "file" for s in sub_members)
                check("members" not in m or (m["members"] == len(sub_members) if flat
                                             else m["members"] >= len(sub_members)),
                      f"{m['locator']}: listed with {m.get('members')} members, browsing it "
                      f"lists {len(sub_members)}")
                queue.append({"locator": m["locator"]})
    # Nothing A was answered names or quotes B's files.
    for ans in srv.answers:
        for s in forbidden:
            check(s not in ans.scan, f"scope A's answer to {ans.where()} holds {s!r}: {short(ans.raw)}")
    log(f"  {len(probes)} probes answered as made-up locators; {crawled} containers crawled; "
        f"{len(srv.answers)} answers of A hold none of {len(forbidden)} strings of B")


async def check_scope_b_sees_its_own(opts):
    """B itself sees its files (or A seeing nothing would prove nothing). Run before A's
    server starts: without a daemon, one server at a time holds the data directory."""
    root = opts.root
    b_dir = os.path.join(root, "b")
    shared = os.path.join(root, "shared")
    with open(os.path.join(b_dir, "secret-bob.txt")) as f:
        b_phrase = f.readline().strip()
    async with Server(opts, opts.scope_b).running() as bsrv:
        secret = os.path.join(b_dir, "secret-bob.txt")
        r = await bsrv.ok("read_content_objects", {"locator": secret})
        check(any(b_phrase in o.get("text", "") for o in r.obj["objects"]),
              f"scope B cannot read its own {secret}: {short(r.raw)}")
        _, members = await browse_all(bsrv, {"locator": shared, "max_chars": LARGE}, "B browses shared/")
        check([m.get("name") for m in members] == ["note-bob.txt"],
              f"scope B browsing shared/: {[m.get('name') for m in members]}")
        hits = await bsrv.ok("search_documents", {"query": b_phrase, "limit": 3})
        check(any(h["locator"].startswith(secret) for h in hits.obj["hits"]),
              f"scope B searching its phrase: {short(hits.raw)}")



async def run(opts):
    started = time.monotonic()
    calls = 0
    await check_scope_b_sees_its_own(opts)
    async with Server(opts, opts.scope_a).running() as srv:
        tools = await srv.list_tools()
        check_tool_list(tools, list(TOOLS), "list_tools")
        log(f"list_tools: {sorted(t.name for t in tools)}")
        calls += await check_fixtures(srv, opts.root)
        if opts.big_pdf:
            calls += await check_big_pdf(srv, opts.big_pdf, opts.big_pdf_expect)
        await check_isolation(opts, srv)
        total = srv.calls
        biggest = max(utf8_len(a.raw) for a in srv.answers)
    await check_tools_flag(opts)
    log(f"OK: {total} tool calls as {opts.scope_a} ({calls} in followed reads), largest answer "
        f"{biggest} bytes, {time.monotonic() - started:.1f} s")


# ---------------------------------------------------------------------------------------------
# --self-test: the reconstruction and helpers on hand-made answers
# ---------------------------------------------------------------------------------------------


def self_test():
    def cut(t, offset, end, a, b):
        return {"chars": len(t), "offset": offset, "end": end, "omitted": [a, b],
                "text": t[offset:a] + marker(b - a) + t[b:end]}

    def expect_failure(fn, words):
        try:
            fn()
        except CheckFailed as err:
            check(words in str(err), f"self-test: failure {err!r} does not mention {words!r}")
            return
        fail(f"self-test: no failure (expected one about {words!r})")

    # Unicode scalar values, including one outside the BMP and a combining mark.
    t = "".join(f"line {i} \u203a caf\u00e9 e\u0301 \U0001F30A\n" for i in range(100))
    small = {"n": 1, "chars": 5, "text": "héllo", "type": "text"}
    rb = Rebuilder("self-test")
    check(rb.add(0, cut(t, 0, len(t), 100, 800), "a1") == 100 + len(t) - 800 + 1, "progress")
    check(rb.add(0, cut(t, 100, 800, 150, 700), "a2") == 50 + 100, "progress 2")
    check(rb.add(0, {"chars": len(t), "offset": 150, "end": 700, "text": t[150:700]}, "a3") == 550,
          "progress 3")
    rb.add(1, small, "a3")
    texts = rb.texts()
    check(texts == {0: t, 1: "héllo"}, "self-test: rebuilt texts differ")
    check(utf8_len(compact({"text": "héllo \u203a"})) == len('{"text":"héllo ›"}'.encode()),
          "utf8 length")

    # Failures the checks must catch.
    def repeated_range():
        r = Rebuilder("x")
        r.add(0, cut(t, 0, len(t), 100, 800), "b1")
        r.add(0, {"chars": len(t), "offset": 100, "end": 800, "text": t[100:800]}, "b2")
        r.add(0, {"chars": len(t), "offset": 100, "end": 800, "text": t[100:800]}, "b3")
    expect_failure(repeated_range, "does not continue")

    def gap():
        r = Rebuilder("x")
        r.add(0, {"chars": len(t), "offset": 0, "end": 100, "text": t[:100]}, "c1")
        r.texts()
    expect_failure(gap, "rebuilt to 100")

    def wrong_marker():
        p = cut(t, 0, len(t), 100, 800)
        p["text"] = p["text"].replace("chars omitted]", "chars omitted]…")
        Rebuilder("x").add(0, p, "d1")
    expect_failure(wrong_marker, "expected 100 head chars")

    def skipped_continuation():
        r = Rebuilder("x")
        r.add(0, cut(t, 0, len(t), 100, 800), "e1")
        r.add(1, small, "e2")
    expect_failure(skipped_continuation, "left omitted")

    def wrong_continuation():
        r = Rebuilder("x")
        r.add(0, cut(t, 0, len(t), 100, 800), "f1")
        r.add(0, {"chars": len(t), "offset": 120, "end": 800, "text": t[120:800]}, "f2")
    expect_failure(wrong_continuation, "does not continue")

    def repeated_whole():
        r = Rebuilder("x")
        r.add(1, small, "g1")
        r.add(1, small, "g2")
    expect_failure(repeated_whole, "repeated whole")

    def short_whole():
        Rebuilder("x").add(1, dict(small, chars=6), "h1")
    expect_failure(short_whole, "chars says 6")

    check(range_list([3, 4, 5, 9, 250, 480]) == "3-5, 9, 250, 480", "range_list")
    check(range_list([7, 250, 251, 612, 999]) == "7, 250-251, 612, 999", "range_list 2")
    err_a = json.dumps({"error": "no such file or archive: /s/b/secret-bob.txt"})
    err_m = json.dumps({"error": "no such file or archive: /s/b/secret-bxb.txt"})
    check(without_locator(err_a, "/s/b/secret-bob.txt") == without_locator(err_m, "/s/b/secret-bxb.txt"),
          "without_locator")
    esc = json.dumps({"error": "nothing at /s/\u00e9t\u00e9.txt"})
    check("<LOCATOR>" in without_locator(esc, "/s/\u00e9t\u00e9.txt"), "without_locator escaped")
    check(planned_calls(1000, 200) > planned_calls(1000, 4000), "planned_calls")
    print("self-test OK: reconstruction, failure detection, helpers")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", help="the ingest binary")
    ap.add_argument("--data-dir", help="the data directory both scopes were ingested into")
    ap.add_argument("--root", help="the folder holding a/, b/ and shared/ (see above)")
    ap.add_argument("--scope-a", default="alice", help="the user of scope A")
    ap.add_argument("--scope-b", default="bob", help="the user of scope B")
    ap.add_argument("--big-pdf", help="locator of the big PDF (in scope A)")
    ap.add_argument("--big-pdf-expect", help="its --expect JSON from scripts/make-big-pdf.py")
    ap.add_argument("--self-test", action="store_true", help="test the checks themselves, offline")
    opts = ap.parse_args()
    try:
        self_test()
        if opts.self_test:
            return 0
        for name in ("bin", "data_dir", "root"):
            check(getattr(opts, name), f"--{name.replace('_', '-')} is required")
        check(bool(opts.big_pdf) == bool(opts.big_pdf_expect),
              "--big-pdf and --big-pdf-expect go together")
        opts.root = os.path.abspath(opts.root)
        asyncio.run(run(opts))
    except BaseException as err:  # noqa: B036 - the first failure ends the run, clearly
        failed = first_failure(err)
        if isinstance(failed, CheckFailed):
            print(f"FAILED: {failed}", file=sys.stderr, flush=True)
        else:
            import traceback
            traceback.print_exception(failed)
            print(f"FAILED: {type(failed).__name__}: {failed}", file=sys.stderr, flush=True)
        return 1
    return 0


def first_failure(err):
    """The CheckFailed inside (anyio task groups wrap errors in exception groups), else the
    innermost first error."""
    if isinstance(err, BaseExceptionGroup):
        inner = [first_failure(e) for e in err.exceptions]
        return next((e for e in inner if isinstance(e, CheckFailed)), inner[0])
    return err


if __name__ == "__main__":
    sys.exit(main())
