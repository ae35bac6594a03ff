"""The session store on SQLite and PostgreSQL: exact round trips, versions, search, expiry."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
import sqlalchemy as sa

from agentfolio.store import AlreadyExists, InvalidInput, NotFound, Store, VersionConflict
from agentfolio.store.tables import sessions as sessions_table
from tests.storage import statements_run

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = [*sorted((ROOT / "tests" / "fixtures" / "durable_state").glob("*.json")), ROOT / "agentfolio" / "samples" / "durable-agent-state.sample.json"]


def request_entry(text: str, created: str = "2025-11-04T19:33:05.245476+00:00") -> dict:
    return {"$type": "request", "correlationId": "c1", "createdAt": created,
            "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]}


def response_entry(text: str, created: str = "2025-11-04T19:33:10.47008+00:00") -> dict:
    return {"$type": "response", "correlationId": "c1", "createdAt": created,
            "usage": {"inputTokenCount": 5, "outputTokenCount": 7, "totalTokenCount": 12},
            "messages": [{"role": "assistant", "authorName": "Bot", "contents": [{"$type": "text", "text": text}]}]}


def state(*entries: dict, version: str = "1.1.0") -> dict:
    return {"schemaVersion": version, "data": {"conversationHistory": list(entries)}}


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_round_trip_is_exact(store: Store, path: Path) -> None:
    document = orjson.loads(path.read_bytes())
    account = store.accounts.ensure("alice")
    created = store.sessions.of(account).create(document, strict=False)
    _, data = store.sessions.of(account).get_bytes(created.session.id)
    assert data == orjson.dumps(document)
    assert created.session.entry_count == len(document["data"].get("conversationHistory") or [])


def test_unknown_properties_and_contents_are_kept(store: Store) -> None:
    document = {
        "zRootFirst": {"kept": True},
        "schemaVersion": "1.7.0",
        "data": {"before": 1, "conversationHistory": [
            {**request_entry("hi"), "futureEntryProperty": [1, 2.5, None]},
            {"$type": "futureEntryKind", "whatever": {"deep": ["x"]}},
            {**response_entry("ok"), "messages": [{"role": "assistant", "contents": [
                {"$type": "hologram", "frames": 3}, {"$type": "text", "text": "é ✓ \u2028", "extra": {}}]}]},
        ], "after": {"k": "v"}},
        "rootLast": "yes",
    }
    account = store.accounts.ensure("alice")
    created = store.sessions.of(account).create(document, strict=False)
    _, data = store.sessions.of(account).get_bytes(created.session.id)
    assert data == orjson.dumps(document)
    appended = store.sessions.of(account).append(created.session.id, {"$type": "anotherFutureKind", "n": 1},
                                     expected_version=1, strict=False)
    _, document_back = store.sessions.of(account).get_document(created.session.id)
    assert document_back["data"]["conversationHistory"][-1] == {"$type": "anotherFutureKind", "n": 1}
    assert list(document_back) == ["zRootFirst", "schemaVersion", "data", "rootLast"]
    assert list(document_back["data"]) == ["before", "conversationHistory", "after"]
    assert appended.position == 3


@pytest.mark.parametrize("data", [None, {}, {"conversationHistory": None, "session": {"id": 1}}])
def test_documents_without_a_history_array_take_appends(store: Store, data: dict | None) -> None:
    document: dict = {"schemaVersion": "1.2.0"}
    if data is not None:
        document["data"] = data
    account = store.accounts.ensure("alice")
    created = store.sessions.of(account).create(document, strict=False)
    _, data_back = store.sessions.of(account).get_bytes(created.session.id)
    assert data_back == orjson.dumps(document)
    store.sessions.of(account).append(created.session.id, request_entry("first"), expected_version=1)
    _, back = store.sessions.of(account).get_document(created.session.id)
    assert back["data"]["conversationHistory"] == [request_entry("first")]
    if data and "session" in data:
        assert back["data"]["session"] == {"id": 1}


def test_append_versions_and_conflicts(store: Store) -> None:
    account = store.accounts.ensure("alice")
    created = store.sessions.of(account).create(state(request_entry("one")), session_id="s1", agent="bot")
    assert created.session.version == 1
    first = store.sessions.of(account).append("s1", response_entry("two"), expected_version=1)
    assert (first.position, first.session.version, first.session.entry_count) == (1, 2, 2)
    with pytest.raises(VersionConflict) as conflict:
        store.sessions.of(account).append("s1", request_entry("lost?"), expected_version=1)
    assert conflict.value.current == 2 and "version 2, not 1" in conflict.value.message
    unconditional = store.sessions.of(account).append("s1", request_entry("three"), expected_version=None)
    assert unconditional.session.version == 3
    _, document = store.sessions.of(account).get_document("s1")
    texts = [e["messages"][0]["contents"][0]["text"] for e in document["data"]["conversationHistory"]]
    assert texts == ["one", "two", "three"]


def test_a_turn_appended_together_is_one_write(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(request_entry("one")), session_id="s1")
    turn = [request_entry("two", "2025-11-04T19:34:00Z"), response_entry("three", "2025-11-04T19:35:00Z")]
    appended = store.sessions.of(account).append_many("s1", turn, expected_version=1)
    assert (appended.position, appended.session.version, appended.session.entry_count) == (1, 2, 3)
    latest = datetime(2025, 11, 4, 19, 35, tzinfo=UTC).timestamp()
    assert appended.session.last_activity_at == pytest.approx(latest)
    with pytest.raises(VersionConflict):
        store.sessions.of(account).append_many("s1", turn, expected_version=1)
    # One bad entry refuses the whole turn: nothing of it is stored, the version stays.
    with pytest.raises(InvalidInput) as refused:
        store.sessions.of(account).append_many("s1", [request_entry("four"), {"$type": "request", "messages": "no"}],
                                   expected_version=2)
    assert refused.value.pointer is not None and refused.value.pointer.startswith("/1")
    with pytest.raises(InvalidInput):
        store.sessions.of(account).append_many("s1", [], expected_version=2)
    info, document = store.sessions.of(account).get_document("s1")
    texts = [e["messages"][0]["contents"][0]["text"] for e in document["data"]["conversationHistory"]]
    assert texts == ["one", "two", "three"] and info.version == 2


def test_append_checks_the_entry_against_the_session_schema(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(version="1.0.0"), session_id="s")
    with pytest.raises(InvalidInput):
        store.sessions.of(account).append("s", {"$type": "request", "messages": "nope"}, expected_version=1)
    with pytest.raises(InvalidInput):
        store.sessions.of(account).append("s", ["not", "an", "object"], expected_version=1)  # type: ignore[arg-type]
    tolerated = store.sessions.of(account).append("s", {"$type": "request", "messages": [{"role": "robot"}]},
                                      expected_version=1, strict=False)
    assert tolerated.problems and tolerated.session.version == 2


def test_create_refuses_what_it_cannot_keep(store: Store) -> None:
    account = store.accounts.ensure("alice")
    for bad in ({"schemaVersion": "9.0.0", "data": {}}, {"data": {}}, [1, 2]):
        with pytest.raises(InvalidInput):
            store.sessions.of(account).create(bad)
    with pytest.raises(InvalidInput):
        store.sessions.of(account).create(state(), session_id="../etc")
    store.sessions.of(account).create(state(), session_id="same")
    with pytest.raises(AlreadyExists):
        store.sessions.of(account).create(state(), session_id="same")


def test_accounts_are_isolated(store: Store) -> None:
    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    store.sessions.of(alice).create(state(request_entry("secret")), session_id="shared-id")
    store.sessions.of(bob).create(state(request_entry("bob's")), session_id="shared-id")
    assert store.sessions.of(bob).get_document("shared-id")[1]["data"]["conversationHistory"][0] == request_entry("bob's")
    assert [s.id for s in store.sessions.of(bob).list(text="secret")] == []
    store.sessions.of(bob).delete("shared-id")
    assert store.sessions.of(alice).get_document("shared-id")[0].entry_count == 1
    with pytest.raises(NotFound):
        store.sessions.of(bob).append("shared-id", request_entry("x"), expected_version=None)


def test_reset_and_delete(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create({**state(request_entry("a"), version="1.2.0"), "extra": 1}, session_id="s")
    with pytest.raises(VersionConflict):
        store.sessions.of(account).reset("s", expected_version=7)
    info = store.sessions.of(account).reset("s", expected_version=1)
    assert (info.version, info.entry_count) == (2, 0)
    assert store.sessions.of(account).get_document("s")[1] == {"schemaVersion": "1.2.0",
                                                            "data": {"conversationHistory": []}}
    store.sessions.of(account).append("s", request_entry("again"), expected_version=2)
    store.sessions.of(account).delete("s")
    with pytest.raises(NotFound):
        store.sessions.of(account).get_bytes("s")
    with pytest.raises(NotFound):
        store.sessions.of(account).delete("s")


def test_list_and_search(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(request_entry("Find the GOLDBREW coffee", "2025-01-01T10:00:00Z")),
                          session_id="a", agent="barista")
    store.sessions.of(account).create(state(request_entry("tea 100%_done", "2025-06-01T10:00:00+00:00")),
                          session_id="b", agent="waiter")
    store.sessions.of(account).create(state(), session_id="c", agent="barista")
    assert {s.id for s in store.sessions.of(account).list(agent="barista")} == {"a", "c"}
    assert [s.id for s in store.sessions.of(account).list(text="goldbrew")] == ["a"]
    assert [s.id for s in store.sessions.of(account).list(text="100%_")] == ["b"]
    assert [s.id for s in store.sessions.of(account).list(text="0%x")] == []
    june = time.mktime((2025, 5, 1, 0, 0, 0, 0, 0, 0))
    assert "b" in {s.id for s in store.sessions.of(account).list(since=june)}
    assert "a" not in {s.id for s in store.sessions.of(account).list(since=june)}
    assert {s.id for s in store.sessions.of(account).list(until=june)} == {"a"}
    first_page = store.sessions.of(account).list(limit=2)
    second_page = store.sessions.of(account).list(limit=2, offset=2)
    assert len(first_page) == 2 and len(second_page) == 1
    assert {s.id for s in first_page + second_page} == {"a", "b", "c"}


def test_nul_characters_are_kept_exactly_and_searchable_on_every_backend(store: Store) -> None:
    # PostgreSQL refuses NUL in text columns: the entry's JSON keeps it exactly, the
    # derived search text and the queries hold U+FFFD instead, on both backends alike.
    account = store.accounts.ensure("nul")
    document = state(request_entry("before\x00after"))
    store.sessions.of(account).create(document, session_id="n", agent="bot")
    assert store.sessions.of(account).get_bytes("n")[1] == orjson.dumps(document)
    assert [s.id for s in store.sessions.of(account).list(text="before\x00after")] == ["n"]
    assert store.sessions.of(account).list(agent="bot\x00") == []
    with pytest.raises(InvalidInput, match="NUL"):
        store.sessions.of(account).create(state(), session_id="m", agent="b\x00t")


def test_idle_sessions_expire(settings, tmp_path: Path) -> None:
    with Store.open(settings.with_(session_ttl=3600)) as store:
        account = store.accounts.ensure("alice")
        store.sessions.of(account).create(state(request_entry("old")), session_id="old")
        store.sessions.of(account).create(state(request_entry("new")), session_id="new")
        with store.engine.begin() as connection:
            connection.execute(sa.update(sessions_table).where(sessions_table.c.id == "old")
                               .values(updated_at=time.time() - 7200))
        # Invisible at once, before any purge...
        with pytest.raises(NotFound):
            store.sessions.of(account).get_bytes("old")
        assert [s.id for s in store.sessions.of(account).list()] == ["new"]
        # ...its id free for a new session, and removed by expire().
        assert store.sessions.expire(now=time.time() + 7200) == 2
        store.sessions.of(account).create(state(), session_id="old")
        assert store.sessions.expire() == 0


def test_append_cost_does_not_grow_with_the_history(store: Store) -> None:
    """Structural, not timed: an append runs the same statements at 10 and 2,000 entries,
    and none of them reads or writes other entries."""
    account = store.accounts.ensure("alice")
    statements = statements_run(store.engine)

    shapes = []
    for size in (10, 2000):
        entries = [request_entry(f"m{i}") for i in range(size)]
        store.sessions.of(account).create(state(*entries), session_id=f"s{size}")
        statements.clear()
        store.sessions.of(account).append(f"s{size}", response_entry("next"), expected_version=1)
        shapes.append(list(statements))
    assert shapes[0] == shapes[1]
    touching_entries = [s for s in shapes[1] if "entries" in s.lower()]
    # The entry and (SQLite) its full-text index row: inserts only, nothing read back.
    assert 1 <= len(touching_entries) <= 2
    assert all(statement.lstrip().upper().startswith("INSERT") for statement in touching_entries)


def test_storing_many_sessions_at_once_runs_the_statements_of_one(store: Store) -> None:
    """Structural, not timed: a batch of sessions is a few statements whatever its size (one
    per row had SQLite's writer wait for Python's GIL once per row, beside a thread busy
    preparing the next batch), and every session gets its own entries back."""
    sessions = store.sessions.of(store.accounts.ensure("alice"))
    statements = statements_run(store.engine)

    inserts = []
    for count in (1, 60):
        prepared = [sessions.prepare(state(request_entry(f"ask {count}-{index}"), response_entry(f"answer {index}")),
                                     session_id=f"batch-{count}-{index}") for index in range(count)]
        statements.clear()
        sessions.create_prepared(prepared)
        inserts.append(sorted(s.split("(")[0].strip() for s in statements if s.lstrip().upper().startswith("INSERT")))
        for index in range(count):
            entries = orjson.loads(sessions.get_bytes(f"batch-{count}-{index}")[1])["data"]["conversationHistory"]
            assert entries[0]["messages"][0]["contents"][0]["text"] == f"ask {count}-{index}"
    for tables in inserts:  # sessions, entries (PostgreSQL: COPY from 64 rows, unseen here), the text index
        assert "INSERT INTO sessions" in tables and len(tables) == len(set(tables)) <= 3


def test_tokens_are_hashed_and_scoped(store: Store) -> None:
    token, account = store.accounts.create_token("alice")
    assert store.accounts.authenticate(token) == account
    assert store.accounts.authenticate(token + "x") is None
    assert store.accounts.authenticate("not-a-token") is None
    with store.engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT token_hash FROM tokens").scalars().all()
    assert token not in stored and all(len(value) == 64 for value in stored)
    assert store.accounts.revoke_token(token)
    assert store.accounts.authenticate(token) is None


def test_migrations_match_the_tables(store: Store) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from agentfolio.store.tables import every_table

    def ours(name: str | None, kind: str, _parents: object) -> bool:
        # The full-text indexes are made by the migration outside the metadata: SQLite's
        # FTS5 virtual table (and its shadow tables), PostgreSQL's GIN expression index.
        if kind == "table" and name is not None and name.startswith("entries_fts"):
            return False
        # PostgreSQL's partitions of the spans table (agentfolio.store.span_partitions) are
        # tables of their own, made and dropped at run time; the partitioned table is compared.
        if kind == "table" and name is not None and name.startswith("registry_spans_"):
            return False
        return not (kind == "index" and name == "ix_entries_lexemes")

    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_name": ours})
        differences = compare_metadata(context, every_table())
    assert differences == []


def test_integers_beyond_64_bits_are_stored_exactly(store: Store) -> None:
    from agentfolio import _json

    account = store.accounts.ensure("alice")
    entry = {**response_entry("n"), "messages": [{"role": "assistant", "contents": [
        {"$type": "functionCall", "callId": "a", "name": "f", "arguments": {"n": 18446744073709551617}}]}]}
    created = store.sessions.of(account).create(state(request_entry("hi"), entry))
    _, data = store.sessions.of(account).get_bytes(created.session.id)
    assert b"18446744073709551617" in data
    _, document = store.sessions.of(account).get_document(created.session.id)
    assert document["data"]["conversationHistory"][1]["messages"][0]["contents"][0]["arguments"] == {
        "n": 18446744073709551617}
    appended = store.sessions.of(account).append(created.session.id, {**entry, "messages": [
        {"role": "assistant", "contents": [{"$type": "text", "text": "x"}], "extensionData": {"big": -2**70}}]},
        expected_version=1)
    assert appended is not None
    _, data = store.sessions.of(account).get_bytes(created.session.id)
    assert _json.loads(data)["data"]["conversationHistory"][2]["messages"][0]["extensionData"] == {"big": -2**70}


def test_kinds_and_roles_of_any_text_are_stored_and_read_back_exactly(store: Store) -> None:
    """An unknown kind or a role may hold NUL or be long: their short columns keep a cut of
    them (PostgreSQL refuses NUL in text), the body the exact JSON."""
    sessions = store.sessions.of(store.accounts.ensure("alice"))
    odd = {"$type": "future\x00" + "k" * 150, "payload": [1]}
    spoken = {**request_entry("hi"), "messages": [{"role": "us\x00er" + "r" * 150,
                                                   "contents": [{"$type": "text", "text": "hi"}]}]}
    sessions.create(state(odd, spoken), session_id="odd", strict=False)  # a role outside the enum: kept
    sessions.append("odd", odd, expected_version=1, strict=False)
    history = orjson.loads(sessions.get_bytes("odd")[1])["data"]["conversationHistory"]
    assert history == [odd, spoken, odd]
