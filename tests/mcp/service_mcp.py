"""The upload service's `/mcp` through the official Python MCP client (streamable HTTP).

usage: service_mcp.py URL KEY_A KEY_B PHRASE LOCATOR
       service_mcp.py URL KEY_A KEY_B --sessions

KEY_A's scope holds the upload LOCATOR whose text contains PHRASE; KEY_B's scope does not.
Checks: no key and a wrong key are refused with 401 before any MCP; with KEY_A every tool
are listed, search_documents finds PHRASE at LOCATOR and browse_container lists LOCATOR; with
KEY_B (whose scope holds nothing) the same search and browse find nothing. Workflows over this
face: A stores a tool result in workflow `w-mcp` and recalls it; B recalling A's handle in a
workflow of the same id gets exactly the answer of a made-up handle, and B's gather_context
shows nothing of it.

With --sessions: a session opened with KEY_A is KEY_A's. KEY_B sending its id (to call a
tool or to end it) gets exactly the answer of an unknown session id (status and body), and
the session goes on working for KEY_A until KEY_A ends it. Twenty initializations racing
each other open at most four sessions (the service must run with max_mcp_sessions_per_key
= 4).

Prints one line per check; exits 1 with a `FAILED:` line on the first failure.
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "browse_container",
    "extract_container_item",
    "list_sources",
    "browse_source",
    "pull_source",
    "read_content_objects",
    "read_section",
    "verify_quote",
    "render_page",
    "search_documents",
    "store_tool_result",
    "recall_tool_result",
    "remember",
    "store_summary",
    "gather_context",
    "end_workflow",
}


def fail(message):
    print(f"FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def answer_of(result):
    if result.is_error:
        fail(f"tool error: {result.content}")
    return json.loads(result.content[0].text)


async def refused(url, headers):
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "service-mcp-check", "version": "1"},
        },
    }
    async with httpx2.AsyncClient(headers=headers) as client:
        response = await client.post(
            url,
            json=initialize,
            headers={"Accept": "application/json, text/event-stream"},
        )
    return response.status_code


async def session_calls(url, key, calls):
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(headers=headers, timeout=120) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await calls(session)


ACCEPT = {"Accept": "application/json, text/event-stream"}


def rpc(method, id_=None, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return message


async def sessions(url, key_a, key_b):
    a = {"Authorization": f"Bearer {key_a}", **ACCEPT}
    b = {"Authorization": f"Bearer {key_b}", **ACCEPT}
    async with httpx2.AsyncClient(timeout=60) as client:
        init = rpc("initialize", 1, {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "session-check", "version": "1"},
        })
        r = await client.post(url, json=init, headers=a)
        sid = r.headers.get("mcp-session-id")
        if r.status_code != 200 or not sid:
            fail(f"initialize as A: HTTP {r.status_code}, session {sid!r}")
        with_a = {**a, "mcp-session-id": sid}
        r = await client.post(url, json=rpc("notifications/initialized"), headers=with_a)
        if r.status_code >= 300:
            fail(f"initialized as A: HTTP {r.status_code}")

        async def list_tools(headers):
            r = await client.post(url, json=rpc("tools/list", 2, {}), headers=headers)
            return r.status_code, r.text

        status, text = await list_tools(with_a)
        if status != 200 or "search_documents" not in text:
            fail(f"tools/list as A: HTTP {status} {text[:300]}")
        print("A: session opened, tools listed")
        unknown = await list_tools({**b, "mcp-session-id": "0" * 32})
        stolen = await list_tools({**b, "mcp-session-id": sid})
        if stolen != unknown:
            fail(f"B with A's session: {stolen}, with an unknown one: {unknown}")
        if stolen[0] == 200:
            fail(f"B used A's session: {stolen}")
        print(f"B with A's session id: HTTP {stolen[0]}, as for an unknown session")
        r_unknown = await client.delete(url, headers={**b, "mcp-session-id": "0" * 32})
        r_stolen = await client.delete(url, headers={**b, "mcp-session-id": sid})
        if (r_stolen.status_code, r_stolen.text) != (r_unknown.status_code, r_unknown.text):
            fail(f"B ending A's session: {r_stolen.status_code}, unknown: {r_unknown.status_code}")
        status, text = await list_tools(with_a)
        if status != 200:
            fail(f"A's session after B tried to end it: HTTP {status} {text[:300]}")
        print(f"B cannot end A's session (HTTP {r_stolen.status_code}); A's still works")
        r = await client.delete(url, headers=with_a)
        if r.status_code >= 300:
            fail(f"A ending its session: HTTP {r.status_code}")
        status, _ = await list_tools(with_a)
        if status == 200:
            fail("A's session still answers after A ended it")
        print("A ended its session")

        # Twenty initializations at once, with a cap of four sessions per key (the
        # service's configuration): no more than four open.
        async def open_one():
            r = await client.post(url, json=init, headers=a)
            return r.status_code, r.headers.get("mcp-session-id")

        results = await asyncio.gather(*[open_one() for _ in range(20)])
        opened = [sid for status, sid in results if status == 200 and sid]
        refused = [status for status, _ in results if status == 429]
        if len(opened) > 4 or len(opened) + len(refused) != 20:
            fail(f"20 racing initializations, cap 4: {len(opened)} opened, {len(refused)} refused")
        print(f"20 racing initializations: {len(opened)} opened, {len(refused)} refused (cap 4)")
        for sid in opened:
            await client.delete(url, headers={**a, "mcp-session-id": sid})
    print("OK")


async def main():
    if "--sessions" in sys.argv:
        url, key_a, key_b = sys.argv[1:4]
        await sessions(url.rstrip("/") + "/mcp", key_a, key_b)
        return
    url, key_a, key_b, phrase, locator = sys.argv[1:6]
    url = url.rstrip("/") + "/mcp"

    wrong = {"Authorization": "Bearer k-wrong-0123456789abcdef"}
    for label, headers in [("no key", {}), ("a wrong key", wrong)]:
        status = await refused(url, headers)
        if status != 401:
            fail(f"{label}: HTTP {status}, expected 401")
        print(f"{label}: 401")

    async def as_a(session):
        listed = {t.name for t in (await session.list_tools()).tools}
        if listed != TOOLS:
            fail(f"tools listed: {sorted(listed)}")
        found = answer_of(await session.call_tool("search_documents", {"query": phrase}))
        hits = [h["locator"] for h in found.get("hits", [])]
        if not any(h.split("#")[0] == locator for h in hits):
            fail(f"search as A: {locator} not among {hits}")
        browsed = json.dumps(answer_of(await session.call_tool("browse_container", {})))
        if locator not in browsed:
            fail(f"browse as A does not list {locator}: {browsed[:500]}")
        return hits

    hits = await session_calls(url, key_a, as_a)
    print(f"A: {len(TOOLS)} tools; search finds {hits[0]}; browse lists {locator}")

    async def as_b(session):
        found = answer_of(await session.call_tool("search_documents", {"query": phrase}))
        browsed = answer_of(await session.call_tool("browse_container", {}))
        # The query is echoed back: only what was found counts.
        text = json.dumps(found.get("hits")) + json.dumps(browsed.get("members"))
        if locator in text or phrase in text:
            fail(f"B reads A's file: {text[:500]}")
        if found.get("hits") or browsed.get("members"):
            fail(f"B sees files in an empty scope: {text[:500]}")

    await session_calls(url, key_b, as_b)
    print("B: neither search nor browse shows A's file")

    secret = "The lighthouse keeper's log for workflow w-mcp lists 17 ships."
    wf = "w-mcp"

    async def store_as_a(session):
        stored = answer_of(await session.call_tool(
            "store_tool_result", {"workflow": wf, "tool": "log.read", "content": secret}))
        back = answer_of(await session.call_tool(
            "recall_tool_result", {"workflow": wf, "handle": stored["handle"]}))
        if back.get("text") != secret:
            fail(f"A's recall: {back}")
        return stored["handle"]

    handle = await session_calls(url, key_a, store_as_a)

    async def as_b_in_workflow(session):
        theirs = await session.call_tool("recall_tool_result", {"workflow": wf, "handle": handle})
        made_up = await session.call_tool("recall_tool_result", {"workflow": "never", "handle": handle})
        if theirs.content[0].text != made_up.content[0].text or theirs.is_error != made_up.is_error:
            fail(f"B's recall of A's handle differs from a made-up one: {theirs.content[0].text}")
        ctx = answer_of(await session.call_tool(
            "gather_context", {"workflow": wf, "query": secret, "max_chars": 20000}))
        if "lighthouse" in json.dumps(ctx):
            fail(f"B's gather_context shows A's workflow: {json.dumps(ctx)[:500]}")

    await session_calls(url, key_b, as_b_in_workflow)

    async def end_as_a(session):
        answer_of(await session.call_tool("end_workflow", {"workflow": wf}))

    await session_calls(url, key_a, end_as_a)
    print(f"workflow {wf}: A stores and recalls {handle}; B's recall reads as a made-up handle")
    print("OK")


if __name__ == "__main__":
    asyncio.run(main())
