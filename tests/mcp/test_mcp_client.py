"""Drive `kapi mcp` with the official Python MCP SDK (`mcp` on PyPI): a
client kapi did not write.

Usage: python3 test_mcp_client.py KAPI_BINARY REPOSITORY [HOME]

Runs the server in REPOSITORY (a git work tree holding docs/guide.md,
which says "Quick cast"), initializes as the client `python-sdk-agent`,
lists the tools, calls every one, checks the refusals and bad input,
and sends a burst of concurrent calls, good and bad.
The last line printed is `SESSION <id>`: the session the server minted,
for the caller to check with `kapi context log`. Exits non-zero on the
first expectation that fails.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import Implementation

TOOLS = {
    "apply_edits",
    "context_note",
    "context_log",
    "context_here",
    "context_search",
    "check",
    "context_session_summary",
    "compile_context",
    "verify_context",
    "verify_claim",
}


def text(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(session, name, arguments):
    return await session.call_tool(name, arguments)


async def refused(session, name, arguments, needle):
    """A tool error (or a protocol error) whose message holds `needle`."""
    try:
        result = await call(session, name, arguments)
    except Exception as e:  # a protocol error: the SDK raises it
        assert needle.lower() in str(e).lower(), f"{name} {arguments}: {e}"
        return
    assert result.is_error, f"{name} {arguments} was not refused: {result}"
    assert needle.lower() in text(result).lower(), f"{name}: {text(result)}"


async def burst(session, n=300):
    """n calls at once (asyncio.gather): reads, unknown tools, wrong types
    and refusals in turn; every one gets its own answer."""
    kinds = [
        ("context_here", {"path": "docs/guide.md"}, None),
        ("check", {"paths": ["docs/guide.md"]}, None),
        ("context_log", {"session": "this"}, None),
        ("no_such_tool", {}, "tool not found"),
        ("check", {"paths": 5}, "argument `paths` of check"),
        ("context_note", {"text": "x", "quote": "x", "actor": "ada"}, "refusing `actor`"),
    ]

    async def one(i):
        name, arguments, refusal = kinds[i % len(kinds)]
        try:
            result = await call(session, name, arguments)
        except Exception as e:  # a protocol error
            return i, None, str(e)
        return i, result, text(result)

    results = await asyncio.gather(*(one(i) for i in range(n)))
    assert [i for i, _, _ in results] == list(range(n))
    for i, result, said in results:
        name, arguments, refusal = kinds[i % len(kinds)]
        if refusal is None:
            assert result is not None and not result.is_error, f"{i} {name}: {said}"
            assert result.structured_content is not None, f"{i} {name}"
        else:
            assert result is None or result.is_error, f"{i} {name} was not refused: {said}"
            assert refusal in said, f"{i} {name}: {said}"
    here = [r.structured_content for i, r, _ in results if i % len(kinds) == 0]
    assert all(h == here[0] for h in here), "the same question, the same answer"
    logs = [r.structured_content for i, r, _ in results if i % len(kinds) == 2]
    assert all(len(l["operations"]) == 3 for l in logs), "no call of the burst wrote"


async def main(kapi, repo, home):
    params = StdioServerParameters(command=kapi, args=["mcp"], cwd=repo, env={
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "XDG_CONFIG_HOME": home,
        "XDG_DATA_HOME": home,
        "GIT_CONFIG_NOSYSTEM": "1",
        # Whatever the environment says, the client names the agent.
        "KAPI_AGENT": "from-the-environment",
    })
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, client_info=Implementation(name="python-sdk-agent", version="1.0")
        ) as session:
            init = await session.initialize()
            assert init.server_info.name == "kapi", init

            listed = await session.list_tools()
            names = {t.name for t in listed.tools}
            assert TOOLS <= names, names
            for verb in ("keep", "drop", "choose", "widen", "reset", "import"):
                assert not any(verb in n for n in names), names
            for tool in listed.tools:
                assert tool.input_schema.get("type") == "object", tool

            noted = await call(session, "context_note", {
                "term": "Quickcast", "instead_of": ["Quick cast"], "path": "docs/guide.md",
            })
            assert not noted.is_error, text(noted)
            recorded = noted.structured_content["recorded"]
            assert recorded["actor"]["kind"] == "agent", recorded
            assert recorded["actor"]["name"] == "python-sdk-agent", recorded
            this = recorded["actor"]["session"]
            assert this.startswith("mcp-"), this

            fact = await call(session, "context_note", {
                "text": "Releases ship on Tuesdays", "quote": "ship on Tuesdays",
            })
            assert not fact.is_error, text(fact)
            withdrawn = await call(session, "context_note", {
                "withdraw": fact.structured_content["recorded"]["id"],
            })
            assert not withdrawn.is_error, text(withdrawn)

            log = await call(session, "context_log", {"session": "this"})
            ops = log.structured_content["operations"]
            assert len(ops) == 3, json.dumps(ops)
            assert all(o["actor"]["session"] == this for o in ops), ops
            suggested = await call(session, "context_log", {"status": "suggested", "kind": "observe"})
            assert len(suggested.structured_content["operations"]) == 1, text(suggested)

            here = await call(session, "context_here", {"path": "docs/guide.md"})
            assert here.structured_content["suggestions"][0]["use"] == "Quickcast", here

            found = await call(session, "context_search", {"text": "quickcast"})
            assert len(found.structured_content["rules"]) == 1, found

            checked = await call(session, "check", {"paths": ["docs/guide.md"]})
            assert not checked.is_error, text(checked)
            assert "findings" in checked.structured_content, checked.structured_content

            summary = await call(session, "context_session_summary", {})
            assert summary.structured_content["session"] == this, summary

            # Who acts is the server's to say.
            for field in ("actor", "session", "kind"):
                await refused(session, "context_note",
                              {"text": "a fact", "quote": "q", field: "ada@example.com"},
                              "no tool takes an actor")
            await refused(session, "context_log", {"actor": "ada"}, "no tool takes an actor")
            # Bad input: an error each, and the server keeps serving.
            await refused(session, "context_note", {"text": "x", "colour": "red"}, "unknown argument")
            await refused(session, "context_here", {"path": 7},
                          "argument `path` of context_here takes a string, not 7")
            await refused(session, "check", {"paths": 5},
                          "argument `paths` of check takes an array of strings, not 5")
            await refused(session, "context_note", {"text": "x", "suggest": "yes"},
                          "argument `suggest` of context_note takes a boolean")
            await refused(session, "context_here", {}, "missing field `path`")
            await refused(session, "context_note", {"text": "a" * (70 * 1024)}, "at most 65536")
            await refused(session, "keep_everything", {}, "tool not found")
            await refused(session, "keep", {"id": this}, "tool not found")
            await refused(session, "context_note", {"term": "Quickcast"}, "evidence")
            await refused(session, "context_note", {"text": "x", "term": "y"}, "exactly one")
            await refused(session, "context_log", {"status": "golden"}, "unknown status")

            # A burst of concurrent calls, good and bad, over the one
            # session: each answered, as its own.
            await burst(session)

            # The compiled context: compiled as the CLI compiles it, and the
            # one the CLI wrote (ctx.json) verified as current.
            compiled = await call(session, "compile_context", {
                "query": "review", "max_docs": 3, "max_bytes": 8192, "today": "2026-11-30",
            })
            assert not compiled.is_error, text(compiled)
            with open(os.path.join(repo, "ctx.json")) as f:
                assert compiled.structured_content == json.load(f), text(compiled)
            verified = await call(session, "verify_context", {"artifact": "ctx.json", "today": "2026-11-30"})
            assert verified.structured_content["status"] == "current", verified.structured_content

            # Edits through kapi: applied, and an applied signal for the
            # suggestion whose preferred form they write.
            applied = await call(session, "apply_edits", {"edits": [
                {"path": "docs/guide.md", "old": "Quick cast", "new": "Quickcast"},
            ]})
            assert not applied.is_error, text(applied)
            assert applied.structured_content["signals"][0]["target"] == recorded["id"], applied
            with open(os.path.join(repo, "docs", "guide.md")) as f:
                assert f.read() == "Quickcast streams video.\n"
            await refused(session, "apply_edits",
                          {"edits": [{"path": "../outside.md", "old": "a", "new": "b"}]},
                          "outside the work tree")
            await refused(session, "apply_edits",
                          {"edits": [{"path": ".git/config", "old": "a", "new": "b"}]},
                          "kapi writes nothing under .git")

            again = await call(session, "context_log", {"session": "this"})
            ops = again.structured_content["operations"]
            assert len(ops) == 4, "nothing half-written: " + json.dumps(ops)
            assert ops[-1]["kind"] == "signal" and ops[-1]["actor"]["name"] == "apply", ops[-1]
            print(f"SESSION {this}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else sys.argv[2]))
