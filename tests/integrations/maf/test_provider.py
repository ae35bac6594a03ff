"""The history provider with a real MAF Agent: across a process restart, on this machine's
SQLite store and on a real ``agentfolio serve`` over PostgreSQL, seen in the viewer, with
two writers on one session."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from agent_framework import InMemoryHistoryProvider, Message

from agentfolio.formats import durable_state
from agentfolio.integrations.maf import AgentfolioHistoryProvider, HistoryStoreError
from agentfolio.settings import Settings
from agentfolio.store import Store
from tests.integrations.maf.conversation import AGENT_NAME, QUESTIONS, converse, without_attribution
from tests.storage import LiveServer, settings_env

ROOT = Path(__file__).resolve().parents[3]
SETUPS = [pytest.param("sqlite", "local", id="local-sqlite"),
          pytest.param("postgresql", "remote", id="serve-postgresql")]

pytestmark = pytest.mark.filterwarnings("ignore::Warning")


def in_memory_run(session_id: str) -> list[list[dict[str, Any]]]:
    """What the model is shown when MAF keeps the history itself, all in one process."""
    return without_attribution(asyncio.run(converse(None, session_id, QUESTIONS)))


def play(settings: Settings, session_id: str, first: int, last: int, remote: list[str]) -> list[list[dict[str, Any]]]:
    """Questions first..last in a process of their own."""
    done = subprocess.run([sys.executable, "-m", "tests.integrations.maf.conversation", "--session", session_id,
                           "--first", str(first), "--last", str(last), *remote],
                          env=settings_env(settings), cwd=ROOT, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return orjson.loads(done.stdout)


@pytest.mark.parametrize(("database_url", "mode"), SETUPS, indirect=["database_url"])
def test_a_conversation_survives_a_restart_and_shows_in_the_viewer(settings: Settings, store: Store,
                                                                   mode: str) -> None:
    server = LiveServer(settings, cli_serve=True)
    try:
        token, account = store.accounts.create_token("default")
        remote = ["--url", server.url, "--token", token] if mode == "remote" else []
        # Two questions, the process ends; a new process, a new Agent, the same session id.
        seen = play(settings, "trip-1", 0, 1, remote) + play(settings, "trip-1", 2, len(QUESTIONS) - 1, remote)

        assert without_attribution(seen) == in_memory_run("trip-1")
        assert len(seen) == len(QUESTIONS) + 2  # two weather questions: a second model call after each tool

        info, document = store.sessions.of(account).get_document("trip-1")
        assert info.agent == AGENT_NAME and info.version == len(QUESTIONS)
        assert durable_state.validate(document)[1] == []
        history = document["data"]["conversationHistory"]
        assert [entry["$type"] for entry in history] == ["request", "response"] * len(QUESTIONS)
        searched = history[5]["messages"][0]["contents"]
        assert [content["$type"] for content in searched] == ["unknown", "unknown", "text"]
        assert searched[0]["content"]["type"] == "search_tool_call" and searched[1]["content"]["result"]

        page = httpx.get(f"{server.url}/sessions/trip-1", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert page.status_code == 200, page.text[:500]
        for shown in ("Croissants are flaky.", "The tool says: sunny in Paris.", "Hello, who are you?",
                      AGENT_NAME):
            assert shown in page.text
        listing = httpx.get(f"{server.url}/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert "trip-1" in listing.text
    finally:
        server.stop()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_audit_mode_stores_without_loading(store: Store) -> None:
    """Beside MAF's own in-memory history, ``load_messages=False`` only writes the record."""
    audit = AgentfolioHistoryProvider(store=store, load_messages=False)
    seen = asyncio.run(converse([InMemoryHistoryProvider(), audit], "audited", QUESTIONS))
    assert without_attribution(seen) == in_memory_run("audited")
    _, document = store.sessions.of(store.accounts.ensure("default")).get_document("audited")
    stored = AgentfolioHistoryProvider(store=store)
    kept = asyncio.run(stored.get_messages("audited"))
    assert [message.text for message in kept][:2] == [QUESTIONS[0], "Turn 1: I have seen 1 messages; last was "
                                                                    "'Hello, who are you?'."]
    assert len(document["data"]["conversationHistory"]) == 2 * len(QUESTIONS)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_save_messages_called_directly_splits_at_the_first_answer(store: Store) -> None:
    provider = AgentfolioHistoryProvider(store=store)
    turn = [Message("system", ["be brief"]), Message("user", ["hi"]), Message("assistant", ["hello"]),
            Message("user", ["a follow-up in the same answer"])]
    asyncio.run(provider.save_messages("direct", turn))
    _, document = store.sessions.of(store.accounts.ensure("default")).get_document("direct")
    history = document["data"]["conversationHistory"]
    assert [(entry["$type"], len(entry["messages"])) for entry in history] == [("request", 2), ("response", 2)]
    assert [m.to_dict() for m in asyncio.run(provider.get_messages("direct"))] == [m.to_dict() for m in turn]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_bad_session_ids_and_stores_are_refused_clearly(store: Store) -> None:
    provider = AgentfolioHistoryProvider(store=store)
    with pytest.raises(ValueError, match="cannot name an agentfolio session"):
        asyncio.run(provider.get_messages("../etc/passwd"))
    with pytest.raises(ValueError, match="needs a session id"):
        asyncio.run(provider.get_messages(None))
    with pytest.raises(ValueError, match="must start with http"):
        AgentfolioHistoryProvider(url="ftp://example.com", token="afk_x")
    with pytest.raises(ValueError, match="bearer token"):
        AgentfolioHistoryProvider(url="http://127.0.0.1:9")
    unreachable = AgentfolioHistoryProvider(url="http://127.0.0.1:9", token="afk_x")
    with pytest.raises(HistoryStoreError, match="cannot reach agentfolio"):
        asyncio.run(unreachable.get_messages("s"))


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_wrong_token_is_refused_with_the_servers_reason(live: LiveServer) -> None:
    provider = AgentfolioHistoryProvider(url=live.url, token="afk_not-a-token")
    with pytest.raises(HistoryStoreError, match="401"):
        asyncio.run(provider.get_messages("s"))


# -- two writers on one session ------------------------------------------------------------------


async def race(make_provider: Any, rounds: int) -> tuple[list[AgentfolioHistoryProvider], list[str]]:
    """Two writers that each read the session, wait for the other to have read it too, then
    append a turn: every round, one of them appends on a version that has moved on."""
    writers = [make_provider(), make_provider()]
    barrier = asyncio.Barrier(2)

    async def write(name: str, provider: AgentfolioHistoryProvider) -> None:
        for index in range(rounds):
            await provider.get_messages("shared")
            await barrier.wait()
            await provider.save_messages("shared", [Message("user", [f"{name} asks {index}"]),
                                                    Message("assistant", [f"{name} answers {index}"])])
            await barrier.wait()

    await asyncio.gather(write("A", writers[0]), write("B", writers[1]))
    history = await make_provider().get_messages("shared")
    for provider in writers:
        await provider.aclose()
    return writers, [message.text for message in history]


def assert_no_turn_lost(writers: list[AgentfolioHistoryProvider], texts: list[str], rounds: int) -> None:
    assert sorted(texts) == sorted(f"{name} {verb} {index}" for name in "AB" for verb in ("asks", "answers")
                                   for index in range(rounds))
    for position in range(0, len(texts), 2):  # each question directly followed by its own answer
        asker, _, index = texts[position].split()
        assert texts[position + 1] == f"{asker} answers {index}"
    for name in "AB":  # each writer's turns in its own order
        mine = [text for text in texts if text.startswith(f"{name} asks")]
        assert mine == [f"{name} asks {index}" for index in range(rounds)]
    # The first turn creates the session; after that one writer per round was behind.
    assert sum(writer.conflicts for writer in writers) >= rounds - 1


@pytest.mark.parametrize("database_url", ["sqlite", "postgresql"], indirect=True)
def test_two_local_writers_never_lose_a_turn(store: Store) -> None:
    rounds = 8
    writers, texts = asyncio.run(race(lambda: AgentfolioHistoryProvider(store=store), rounds))
    assert_no_turn_lost(writers, texts, rounds)


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_two_writers_on_a_served_session_never_lose_a_turn(live: LiveServer, store: Store) -> None:
    rounds = 8
    token, _ = store.accounts.create_token("default")
    writers, texts = asyncio.run(race(lambda: AgentfolioHistoryProvider(url=live.url, token=token), rounds))
    assert_no_turn_lost(writers, texts, rounds)
    info, document = store.sessions.of(store.accounts.ensure("default")).get_document("shared")
    history = document["data"]["conversationHistory"]
    assert len(history) == 4 * rounds and info.version == 2 * rounds
    for request, response in zip(history[::2], history[1::2], strict=True):
        assert (request["$type"], response["$type"]) == ("request", "response")
        assert request["correlationId"] == response["correlationId"]
