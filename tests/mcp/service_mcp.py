"""The upload service's `/mcp` through the official Python MCP client (streamable HTTP).

usage: service_mcp.py URL KEY_A KEY_B PHRASE LOCATOR

KEY_A's scope holds the upload LOCATOR whose text contains PHRASE; KEY_B's scope does not.
Checks: no key and a wrong key are refused with 401 before any MCP; with KEY_A the five tools
are listed, search_documents finds PHRASE at LOCATOR and browse_container lists LOCATOR; with
KEY_B (whose scope holds nothing) the same search and browse find nothing. Prints one line
per check; exits 1 with a `FAILED:` line on the first failure.
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
    "read_content_objects",
    "read_section",
    "search_documents",
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


async def main():
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
    print(f"A: five tools; search finds {hits[0]}; browse lists {locator}")

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
    print("OK")


if __name__ == "__main__":
    asyncio.run(main())
