"""Reads that cost the same at any size, on SQLite and PostgreSQL: full-text search of
message text (and its index kept exact through deletes, resets and expiry), keyset paging
of the sessions list, span lists that count only a window past their page, and the
migration that adds it all, upgraded from the previous head with data in it.

Latency itself is measured by ``bench/scale.py``, never asserted here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest
import sqlalchemy as sa
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.app.registry import (
    AgentCreate,
    InstanceRegister,
    PageRequest,
    Principal,
    RegistryService,
    Sorting,
    SpanCreate,
    SpanList,
)
from agentfolio.app.registry.fields import schema_version_draft
from agentfolio.app.sessions import SessionService
from agentfolio.store import AlreadyExists, InvalidInput, SessionCursor, Sessions, Store
from agentfolio.store import search as search_module
from agentfolio.store.engine import alembic_config
from agentfolio.store.registry import base as registry_base
from agentfolio.store.tables import sessions as sessions_table


def state(*texts: str) -> dict:
    return {"schemaVersion": "1.1.0", "data": {"conversationHistory": [
        {"$type": "request", "createdAt": "2025-11-04T19:33:05Z", "correlationId": "c",
         "messages": [{"role": "user", "contents": [{"$type": "text", "text": text}]}]} for text in texts]}}


def found(sessions: Sessions, text: str, **options: object) -> set[str]:
    return {info.id for info in sessions.list(text=text, **options)}  # type: ignore[arg-type]


@contextmanager
def listing_statements(store: Store) -> Iterator[list[tuple[str, object]]]:
    """The sessions-list statements (and their parameters) run inside the block."""
    listed: list[tuple[str, object]] = []

    def seen(conn: object, cursor: object, statement: str, parameters: object, *rest: object) -> None:
        if statement.lstrip().startswith("SELECT sessions.pk"):
            listed.append((statement, parameters))

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        yield listed
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)


@pytest.fixture
def mine(store: Store) -> Sessions:
    sessions = store.sessions.of(store.accounts.ensure("alice"))
    sessions.create(state("Find the GOLDBREW coffee", "see /srv/foo.bar/baz_qux or me@example.org"), session_id="a")
    sessions.create(state("tea 100%_done", "Ünïcode naïve 東京タワー"), session_id="b")
    sessions.create(state("gold", "brew"), session_id="c")  # the words, but in two entries
    return sessions


# --------------------------------------------------------------------------- search


def test_search_finds_words_as_prefixes_all_in_one_entry(mine: Sessions) -> None:
    assert found(mine, "goldbrew") == {"a"}
    assert found(mine, "GOLD") == {"a", "c"}  # a prefix, case-insensitive
    assert found(mine, "gold coffee") == {"a"}  # every word, in one entry
    assert found(mine, "gold brew") == set()  # c holds them in two entries; a's "goldbrew" is one word
    assert found(mine, "coffee gold") == {"a"}  # in any order
    assert found(mine, "oldbrew") == set()  # words, not substrings


def test_search_reads_punctuation_as_space_on_every_backend(mine: Sessions) -> None:
    for word in ("baz", "qux", "foo", "bar", "srv", "example", "me"):
        assert found(mine, word) == {"a"}, word
    assert found(mine, "foo.bar/baz") == {"a"}
    assert found(mine, "100%_") == {"b"} and found(mine, "done") == {"b"}
    assert found(mine, "0%x") == set()
    assert found(mine, "%%") == set() and found(mine, "  ") == set()  # no word: nothing matches
    assert found(mine, "naïve ünï") == {"b"} and found(mine, "東京タワー") == {"b"}


def test_deleted_reset_and_expired_sessions_leave_the_index(store: Store, mine: Sessions) -> None:
    mine.delete("a")
    assert found(mine, "goldbrew") == set()
    # A new session may reuse the deleted one's key on SQLite: it must not inherit its words.
    mine.create(state("something else entirely"), session_id="d")
    assert found(mine, "goldbrew") == set() and found(mine, "entirely") == {"d"}
    mine.reset("b")
    assert found(mine, "tea") == set()
    mine.append("b", state("fresh tea")["data"]["conversationHistory"][0], expected_version=None)
    assert found(mine, "tea") == {"b"}
    with store.engine.begin() as connection:
        connection.execute(sa.update(sessions_table).where(sessions_table.c.id == "b").values(updated_at=0.0))
    with Store.open(store.settings.with_(session_ttl=3600)) as expiring:
        assert expiring.sessions.expire() == 1
    mine.create(state("another session"), session_id="e")
    assert found(mine, "tea") == set() and found(mine, "fresh") == set()


def test_a_common_word_walks_the_newest_sessions(monkeypatch: pytest.MonkeyPatch, mine: Sessions) -> None:
    for number in range(6):
        mine.create(state(f"common word {number}"), session_id=f"w{number}")
    expected = {f"w{number}" for number in range(6)}
    assert found(mine, "common") == expected
    monkeypatch.setattr(search_module, "CANDIDATES", 2)  # more matches than that: walk instead
    assert found(mine, "common") == expected
    assert found(mine, "common 3") == {"w3"}
    monkeypatch.setattr("agentfolio.store.sessions.WALK_SESSIONS", 3)  # the walk is bounded
    assert found(mine, "common") == {"w3", "w4", "w5"}


def test_a_walk_finds_an_old_session_written_again(monkeypatch: pytest.MonkeyPatch, mine: Sessions) -> None:
    """SQLite's walk answers the newest sessions by key from one read of the newest
    matches and probes only older ones: an old session written again since (newest by
    write time, oldest by key) is found, in its place."""
    for number in range(6):
        mine.create(state(f"common word {number}"), session_id=f"w{number}")
    mine.append("w0", state("common again")["data"]["conversationHistory"][0], expected_version=None)
    everything = [info.id for info in mine.list(text="common")]
    assert everything[0] == "w0" and set(everything) == {f"w{number}" for number in range(6)}
    monkeypatch.setattr(search_module, "CANDIDATES", 2)
    monkeypatch.setattr(search_module, "NEWEST_MATCHES", 2)  # the newest two matches: w5, w4; the rest probed
    assert [info.id for info in mine.list(text="common")] == everything
    assert [info.id for info in mine.list(text="common", limit=3)] == everything[:3]
    assert found(mine, "common 0") == {"w0"} and found(mine, "again") == {"w0"}


def test_a_word_is_searched_as_the_whole_terms_it_starts(monkeypatch: pytest.MonkeyPatch, store: Store) -> None:
    """A prefix is spelled out as the terms it covers (read lazily by SQLite's index, where a
    prefix query copies out every entry of every term first); past MAX_EXPANSION terms it
    stays a prefix.  Either way the same sessions are found."""
    sessions = store.sessions.of(store.accounts.ensure("terms"))
    for number, word in enumerate(("gold", "golden", "goldbrew", "goldfish", "silver")):
        sessions.create(state(f"a {word} thing"), session_id=f"t{number}")
    expected = {"t0", "t1", "t2", "t3"}
    statements: list[str] = []

    def seen(conn: object, cursor: object, statement: str, parameters: object, *rest: object) -> None:
        statements.append(f"{statement} {parameters}")

    sa.event.listen(store.engine, "before_cursor_execute", seen)
    try:
        assert found(sessions, "gold") == expected
        monkeypatch.setattr(search_module, "MAX_EXPANSION", 2)
        assert found(sessions, "gold") == expected and found(sessions, "goldb") == {"t2"}
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", seen)
    if store.engine.dialect.name == "sqlite":
        matches = [statement for statement in statements if "MATCH" in statement]
        assert any('("gold" OR "goldbrew" OR "golden" OR "goldfish")' in statement for statement in matches)
        assert any('\'"gold"*\'' in statement for statement in matches)  # four terms > 2: a prefix
        assert any('("goldbrew")' in statement for statement in matches)


def test_sqlite_looks_search_candidates_up_by_key(store: Store) -> None:
    """The candidates of a search are looked up one session each by key, never found by
    walking the account's sessions in write order (a cost growing with the account)."""
    if store.engine.dialect.name != "sqlite":
        pytest.skip("SQLite's planner, without statistics; PostgreSQL plans from its own")
    sessions = store.sessions.of(store.accounts.ensure("planner"))
    for number in range(30):
        sessions.create(state(f"needle {number}" if number % 10 == 0 else f"hay {number}"), session_id=f"p{number}")
    with listing_statements(store) as listed:
        assert found(sessions, "needle") == {"p0", "p10", "p20"}
    statement, parameters = listed[-1]
    with store.engine.connect() as connection:
        plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
    assert any("sessions USING INTEGER PRIMARY KEY" in step for step in plan), plan
    assert not any("ix_sessions_account_pk_updated_at" in step for step in plan), plan


def test_without_a_full_text_index_search_is_a_bounded_substring(monkeypatch: pytest.MonkeyPatch,
                                                                 mine: Sessions) -> None:
    monkeypatch.setattr("agentfolio.store.search.has_fts", lambda connection: False)
    assert found(mine, "goldbrew") == {"a"}
    assert found(mine, "oldbre") == {"a"}  # a substring here
    monkeypatch.setattr("agentfolio.store.sessions.FALLBACK_SESSIONS", 1)
    assert found(mine, "gold") == {"c"}  # only the newest session is examined


def test_counts_follow_the_search(mine: Sessions) -> None:
    assert mine.count(text="gold") == 2 and mine.count(text="gold coffee") == 1 and mine.count(text="%") == 0


# --------------------------------------------------------------------------- keyset paging


def test_keyset_pages_cover_every_session_once(store: Store) -> None:
    sessions = store.sessions.of(store.accounts.ensure("pager"))
    for number in range(23):
        sessions.create(state(f"session {number}"), session_id=f"s{number:02d}")
    with store.engine.begin() as connection:  # ties on the write time are broken by id
        connection.execute(sa.update(sessions_table).where(sessions_table.c.id.in_(["s03", "s04", "s05", "s06"]))
                           .values(updated_at=time.time() - 60))
    by_offset = [info.id for offset in range(0, 23, 5) for info in sessions.list(limit=5, offset=offset)]
    for descending in (True, False):
        walked: list[str] = []
        cursor = None
        while True:
            page = sessions.list(limit=5, after=cursor, descending=descending)
            walked += [info.id for info in page]
            if len(page) < 5:
                break
            cursor = SessionCursor.parse(SessionCursor.after(page[-1]).token())
        assert sorted(walked) == sorted(by_offset) and len(walked) == 23
        if descending:
            assert walked == by_offset
    service = SessionService(store)  # the application layer passes the cursor as a token
    first = service.list(sessions.account, limit=5)
    assert [info.id for info in service.list(sessions.account, limit=5, after=service.cursor(first[-1]))] \
        == by_offset[5:10]
    with pytest.raises(InvalidInput):
        sessions.list(sort="tokens", after=SessionCursor(1.0, "x"))
    for bad in ("", "nan~x", "1.0~", "1.0~../x", "inf~a", "9" * 500 + "~a"):
        with pytest.raises(InvalidInput):
            SessionCursor.parse(bad)


# --------------------------------------------------------------------------- span lists


def _spans(store: Store, count: int) -> tuple[RegistryService, Principal, str]:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("spanner"))
    agent = service.create_agent(principal, AgentCreate(name="a")).id
    version = schema_version_draft({"external_identifier": "v", "span_type_schemas": [
        {"name": "step", "params_schema": {"type": "object", "required": ["n"]}}]}, "agent_schema_version")
    instance = service.register_instance(principal, InstanceRegister(
        agent_id=agent, agent_version={"name": "x"}, agent_schema_version=version)).id
    for number in range(count):  # every third span breaks its schema
        service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="step",
                                                  payload={} if number % 3 == 0 else {"n": number}))
    return service, principal, instance


def test_span_lists_count_a_window_past_the_page(monkeypatch: pytest.MonkeyPatch, store: Store) -> None:
    service, principal, _ = _spans(store, 12)
    everything = service.list_spans(principal, SpanList(page=PageRequest(0, 5, Sorting("id", "asc"))))
    assert everything.pagination["item_count"] == 12 and everything.pagination["page_count"] == 3
    invalid = service.list_spans(principal, SpanList(page=PageRequest(0, 100, Sorting("started_at", "desc")),
                                                     validation_status="invalid"))
    assert invalid.pagination["item_count"] == 4 and len(invalid.items) == 4

    monkeypatch.setattr(registry_base, "COUNT_WINDOW", 1)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:  # what the dashboard does: follow next_page_offset until null
        page = service.list_spans(principal, SpanList(page=PageRequest(offset, 5, Sorting("id", "desc"))))
        seen += [span.id for span in page.items]
        pagination = page.pagination
        assert pagination["item_count"] >= offset + len(page.items)  # a lower bound (SQLite) or an estimate
        offset = pagination["next_page_offset"]
    assert len(seen) == len(set(seen)) == 12
    last = service.list_spans(principal, SpanList(page=PageRequest(10, 5, Sorting("id", "desc"))))
    assert last.pagination["item_count"] == 12 and last.pagination["next_page_offset"] is None


# --------------------------------------------------------------------------- the migration


def test_upgrading_from_the_previous_head_indexes_what_is_stored(store: Store) -> None:
    sessions = store.sessions.of(store.accounts.ensure("old"))
    sessions.create(state("stored before the upgrade: zanzibar"), session_id="old")
    service, principal, _ = _spans(store, 4)
    config = alembic_config()
    with store.engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, "0008_risk_profiles_alerts")  # before 0009_flat_reads and 0010
    with store.engine.connect() as connection:
        names = set(sa.inspect(connection).get_table_names())
        assert "entries_fts" not in names
    with Store.open(store.settings) as upgraded:  # opening migrates to the newest schema
        again = upgraded.sessions.of(upgraded.accounts.require("old"))
        assert found(again, "zanzib") == {"old"}
        again.create(state("written after: zanzibar too"), session_id="new")
        assert found(again, "zanzibar") == {"old", "new"}
        listed = RegistryService(upgraded).list_spans(principal, SpanList(
            page=PageRequest(0, 10, Sorting("started_at", "desc")), validation_status="invalid"))
        assert listed.pagination["item_count"] == 2
        with upgraded.engine.connect() as connection:
            indexes = {index["name"] for index in sa.inspect(connection).get_indexes("registry_spans")}
        assert {"ix_registry_spans_started", "ix_registry_spans_validation", "ix_registry_spans_status",
                "ix_registry_spans_validation_started"} <= indexes


def test_the_sessions_list_reads_the_write_time_index_without_sorting_every_session(store: Store) -> None:
    """Newest first, the first page and a page after a cursor come from the write-time index
    in its own order: no sort of every session of the account (on PostgreSQL a ``NULLS
    LAST`` the index cannot give made one)."""
    sessions = store.sessions.of(store.accounts.ensure("ordered"))
    for number in range(5):
        sessions.create(state(f"entry {number}"), session_id=f"o{number}")
    with listing_statements(store) as listed:
        first = sessions.list(limit=2)
        sessions.list(limit=2, after=SessionCursor.after(first[-1]))
    assert len(listed) == 2
    with store.engine.connect() as connection:
        for statement, parameters in listed:
            if store.engine.dialect.name == "postgresql":
                # A tiny table: ask whether the index can give the order (a sort it cannot avoid stays).
                connection.exec_driver_sql("SET enable_seqscan = off")
                connection.exec_driver_sql("SET enable_sort = off")
                plan = [row[0].strip() for row in connection.exec_driver_sql("EXPLAIN " + statement, parameters)]
                assert any("Index Scan Backward using ix_sessions_" in step for step in plan), plan
                assert not any(re.match(r"(->\s+)?Sort\s+\(", step) for step in plan), plan  # (Incremental Sort: ties)
            else:
                plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
                assert any("ix_sessions_account_pk_updated_at" in step for step in plan), plan
                assert not any(step == "USE TEMP B-TREE FOR ORDER BY" for step in plan), plan


def test_postgresql_searches_through_its_index(store: Store) -> None:
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the GIN index is PostgreSQL's (SQLite searches its FTS5 table by construction)")
    sessions = store.sessions.of(store.accounts.ensure("planner"))
    sessions.create(state("needle in the haystack"), session_id="n")
    with store.engine.connect() as connection:
        connection.exec_driver_sql("SET enable_seqscan = off")  # a tiny table: ask whether the index can serve
        plan = "\n".join(row[0] for row in connection.exec_driver_sql(
            "EXPLAIN SELECT session_pk FROM entries WHERE words @@ '''needle'':*'::tsquery"))
    assert "ix_entries_lexemes" in plan


def test_postgresql_search_reads_a_rare_word_through_the_index(store: Store) -> None:
    """Over entries like an agent's, whose words' statistics hold under a hundred common
    words, PostgreSQL estimates any prefix at 2% of the rows and, left to choose, reads
    every entry to find a rare word: the search's statements plan without that scan."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the GIN index is PostgreSQL's")
    sessions = store.sessions.of(store.accounts.ensure("planner"))
    topics = ("weather", "train", "museum", "coffee", "invoice")
    sessions.create(state(*(f"please check the {topics[index % 5]} for case {index}" for index in range(3000))),
                    session_id="common")
    sessions.create(state("the rare zeppelin"), session_id="rare")
    with store.engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE entries")
        connection.commit()
    plans: list[str] = []

    def explain(connection: sa.Connection, cursor: object, statement: str, parameters: object, *_: object) -> None:
        if "entries.words @@" in statement:
            with connection.connection.driver_connection.cursor() as explaining:  # type: ignore[union-attr]
                explaining.execute("EXPLAIN " + statement, parameters)
                plans.append("\n".join(row[0] for row in explaining.fetchall()))

    sa.event.listen(store.engine, "before_cursor_execute", explain)
    try:
        assert found(sessions, "zeppelin") == {"rare"}
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", explain)
    assert plans and all("ix_entries_lexemes" in plan and "Seq Scan on entries" not in plan for plan in plans), plans
    with store.engine.connect() as connection:  # the rest of the search's transaction plans as before
        assert search_module.SessionSearch(connection, "zeppelin").candidates() is not None
        assert connection.exec_driver_sql("SHOW enable_seqscan").scalar_one() == "on"


def test_a_word_longer_than_a_query_word_is_found_by_its_start(mine: Sessions) -> None:
    long_word = "k" * 130 + "tail"
    mine.create(state(f"see {long_word} here"), session_id="long")
    assert found(mine, long_word) == {"long"}  # the query keeps its first 100 characters, as a prefix
    assert found(mine, "k" * 100) == {"long"} and found(mine, "here") == {"long"}
    assert found(mine, "k" * 99 + "x") == set()


def test_postgresql_finds_entries_written_without_their_words(store: Store) -> None:
    """An agentfolio older than the words column writes entries without them (a rolling
    upgrade): the trigger cuts their words, and search finds them."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("SQLite's FTS5 table cuts the words itself")
    sessions = store.sessions.of(store.accounts.ensure("older"))
    sessions.create(state("first"), session_id="old-writer")
    with store.engine.begin() as connection:
        session_pk = connection.execute(sa.select(sessions_table.c.pk)
                                        .where(sessions_table.c.id == "old-writer")).scalar_one()
        connection.exec_driver_sql("INSERT INTO entries (session_pk, position, body, text) VALUES (%s, 1, %s, %s)",
                                   (session_pk, b"{}", "an older writer's zeppelin, größe 42"))
        words = connection.exec_driver_sql("SELECT tsvector_to_array(words) FROM entries "
                                           "WHERE session_pk = %s AND position = 1", (session_pk,)).scalar_one()
    assert {"zeppelin", "older", "42", "größe"} <= set(words)
    assert found(sessions, "zeppel") == {"old-writer"} and found(sessions, "writer 42") == {"old-writer"}


def test_postgresql_entries_carry_the_words_their_writer_cut(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way entries are written (COPY for many, a statement for an append's few) sends
    the words cut in this process: the server's own cut is only for older writers."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the words column is PostgreSQL's")
    monkeypatch.setattr("agentfolio.store.sessions.entry_words", lambda text: "clientcut " + text.split()[-1])
    sessions = store.sessions.of(store.accounts.ensure("writer"))
    sessions.create(state(*(f"entry number{index}" for index in range(70))), session_id="many")
    sessions.append("many", state("appended last")["data"]["conversationHistory"][0], expected_version=None)
    with store.engine.connect() as connection:
        words = connection.exec_driver_sql("SELECT tsvector_to_array(words) FROM entries "
                                           "ORDER BY position").scalars().all()
    assert words == [["clientcut", f"number{index}"] for index in range(70)] + [["clientcut", "last"]]
    assert found(sessions, "clientcut last") == {"many"}


@given(text=st.one_of(st.text(st.characters(max_codepoint=127), max_size=700),
                      st.text(st.sampled_from("ab9 ._-\n\x00é東"), max_size=1200), st.text(max_size=200)))
def test_the_words_of_ascii_text_are_cut_as_the_regular_expression_cuts_any(text: str) -> None:
    words = search_module.entry_words(text.lower())
    assert set(words.split()) == set(re.findall(r"[^\W_]{1,500}", text.lower()))
    assert all(len(word.encode()) <= 2000 for word in words.split())


@pytest.mark.parametrize("word", ["word", "wörd", "x" * 490])
def test_an_entrys_words_end_at_a_whole_word_within_what_a_tsvector_holds(word: str) -> None:
    """A search text set far longer than the default still makes words PostgreSQL takes
    (a tsvector of under a megabyte): they end at INDEX_CHARS, at a whole word."""
    text = " ".join(f"{word}{number}" for number in range(2 * search_module.INDEX_CHARS // len(word)))
    words = search_module.entry_words(text)
    assert len(words) <= search_module.INDEX_CHARS < len(text)
    assert text.startswith(words + " ") and len(words.encode()) + 4 * len(words.split()) < 1024 * 1024


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=80))
def test_postgresql_finds_an_entry_by_each_of_its_words_whatever_the_text(store: Store, text: str) -> None:
    """The words this process cuts for the index and those it cuts from a query agree for
    any text: neither goes through PostgreSQL's parser (SQLite's tokenizer has rules of
    its own, tested above on the texts people write)."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the words column is PostgreSQL's")
    sessions = store.sessions.of(store.accounts.ensure("any-text"))
    session_id = f"t{abs(hash(text))}"
    with suppress(AlreadyExists):  # the same text drawn again
        sessions.create(state(text), session_id=session_id)
    for word in search_module.query_words(text)[:4]:
        assert session_id in found(sessions, word), word


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=300),
                      st.text(st.sampled_from("ab9 ._-\né東ß"), max_size=300)))
def test_postgresql_reads_the_binary_words_as_it_reads_their_text(store: Store, text: str) -> None:
    """The words a binary COPY sends (encoded here) are the tsvector the server makes of
    their text: the same lexemes, in its order, none twice."""
    if store.engine.dialect.name != "postgresql":
        pytest.skip("the words column is PostgreSQL's")
    words = search_module.entry_words(text.lower())
    raw = store.engine.raw_connection()
    try:
        with raw.driver_connection.cursor() as cursor:  # type: ignore[union-attr]
            cursor.execute("CREATE TEMP TABLE words_read (sent tsvector, typed tsvector)")
            with cursor.copy("COPY words_read (sent) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["bytea"])
                copy.write_row((search_module.lexemes_binary(words),))
            cursor.execute("UPDATE words_read SET typed = %s::tsvector", (words,))
            sent, typed, equal = cursor.execute("SELECT sent::text, typed::text, sent = typed FROM words_read").fetchone()
    finally:
        raw.rollback()
        raw.close()
    assert (sent, equal) == (typed, True)
