"""What the sessions list shows, counted when a session is written: the same whether a
history was stored whole or appended an entry at a time, sortable, filterable, and
counted once for sessions written before the facts were kept."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentfolio import _json
from agentfolio.formats import durable_state
from agentfolio.present.search import entry_text
from agentfolio.store import Store
from agentfolio.store.search import query_words
from agentfolio.store.tables import entries as entries_table
from agentfolio.store.tables import sessions as sessions_table
from tests.strategies import counted_states


def request(number: int, at: str, text: str | None = None) -> dict:
    return {"$type": "request", "correlationId": f"c{number}", "createdAt": at,
            "messages": [{"role": "user", "contents": [{"$type": "text", "text": text or f"Question {number}"}]}]}


def response(number: int, at: str, *, tokens: tuple[int, int, int] | None = (10, 5, 15), failed: bool = False,
             error: bool = False) -> dict:
    contents: list[dict] = [{"$type": "functionCall", "callId": f"k{number}", "name": "lookup", "arguments": {}},
                            {"$type": "functionResult", "callId": f"k{number}",
                             "result": {"error": "boom"} if failed else {"ok": 1}}]
    if error:
        contents.append({"$type": "error", "message": "the model refused", "errorCode": "refusal"})
    contents.append({"$type": "text", "text": f"Answer {number}"})
    entry: dict = {"$type": "response", "correlationId": f"c{number}", "createdAt": at,
                   "messages": [{"role": "assistant", "contents": contents}]}
    if tokens is not None:
        entry["usage"] = {"inputTokenCount": tokens[0], "outputTokenCount": tokens[1], "totalTokenCount": tokens[2]}
    return entry


def state(*history: dict) -> dict:
    return {"schemaVersion": "1.2.0", "data": {"conversationHistory": list(history)}}


def stamp(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    return f"2025-11-04T10:{int(minutes):02d}:{rest:06.3f}+00:00"


def history(turns: int, seed: int) -> list[dict]:
    chooser = random.Random(seed)
    found: list[dict] = []
    moment = 0.0
    for number in range(turns):
        found.append(request(number, stamp(moment)))
        moment += chooser.choice([0.5, 1.25, 3.0])
        found.append(response(number, stamp(moment), tokens=chooser.choice([None, (3, 4, 7), (100, 20, 120)]),
                              failed=chooser.random() < 0.3, error=chooser.random() < 0.2))
        moment += 1
    return found


def test_a_stored_session_carries_what_the_list_shows(store: Store) -> None:
    account = store.accounts.ensure("alice")
    created = store.sessions.of(account).create(state(
        request(0, stamp(0), "  \n Plan a weekend in Paris\nwith museums"), response(0, stamp(2.5), failed=True),
        request(1, stamp(10)), response(1, stamp(11), tokens=None, error=True)), session_id="s", agent="Atlas")
    facts = store.sessions.of(account).info("s").facts
    assert facts is not None
    assert facts.first_user_text == "Plan a weekend in Paris"
    assert (facts.input_tokens, facts.output_tokens, facts.total_tokens, facts.usage_responses) == (10, 5, 15, 1)
    assert (facts.tool_calls, facts.failed_tools, facts.errors) == (2, 1, 1)
    assert created.session.entry_count == 4
    with store.engine.connect() as connection:
        rows = connection.execute(sa.select(entries_table.c.position, entries_table.c.latency,
                                            entries_table.c.roles, entries_table.c.failed_tools)
                                  .order_by(entries_table.c.position)).all()
    assert [(row.latency, row.roles, row.failed_tools) for row in rows] == [
        (None, "user", None), (2.5, "assistant", 1), (None, "user", None), (1.0, "assistant", None)]


def test_appending_an_entry_at_a_time_counts_what_storing_it_whole_does(store: Store) -> None:
    account = store.accounts.ensure("alice")
    turns = history(12, seed=7)
    store.sessions.of(account).create(state(*turns), session_id="whole")
    store.sessions.of(account).create(state(), session_id="appended")
    for index, entry in enumerate(turns):
        if index % 3 == 2:
            continue
        batch = [entry, turns[index + 1]] if index % 3 == 1 else [entry]
        store.sessions.of(account).append_many("appended", batch, expected_version=None)
    whole = store.sessions.of(account).info("whole").facts
    appended = store.sessions.of(account).info("appended").facts
    assert whole is not None and whole.tool_calls == 12
    assert appended == whole
    with store.engine.connect() as connection:
        latencies = {session_id: connection.execute(
            sa.select(entries_table.c.latency).join(sessions_table, sessions_table.c.pk == entries_table.c.session_pk)
            .where(sessions_table.c.id == session_id).order_by(entries_table.c.position)).scalars().all()
            for session_id in ("whole", "appended")}
    assert latencies["appended"] == latencies["whole"]
    assert sum(value is not None for value in latencies["whole"]) == 12


def test_reset_starts_the_counts_again(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(*history(3, seed=1)), session_id="s")
    store.sessions.of(account).reset("s")
    facts = store.sessions.of(account).info("s").facts
    assert facts is not None and (facts.first_user_text, facts.tool_calls, facts.total_tokens) == (None, 0, 0)
    store.sessions.of(account).append("s", request(9, stamp(0), "again"), expected_version=None)
    store.sessions.of(account).append("s", response(9, stamp(4)), expected_version=None)
    facts = store.sessions.of(account).info("s").facts
    assert facts is not None and (facts.first_user_text, facts.total_tokens) == ("again", 15)


def test_a_session_written_before_facts_were_kept_is_counted_when_listed(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(*history(4, seed=2)), session_id="old")
    expected = store.sessions.of(account).info("old").facts
    with store.engine.begin() as connection:  # as the migration leaves such a row
        connection.execute(sa.update(sessions_table).values(facts_version=None, tool_calls=0, total_tokens=0,
                                                            first_user_text=None))
        connection.execute(sa.update(entries_table).values(latency=None, tool_calls=None))
    assert store.sessions.of(account).info("old").facts is None
    listed = store.sessions.of(account).list()
    assert listed[0].facts == expected
    with store.engine.connect() as connection:
        assert connection.execute(sa.select(sa.func.count()).where(entries_table.c.tool_calls == 1)).scalar() == 4


def test_the_list_sorts_counts_and_filters_by_part_of_an_agent_name(store: Store) -> None:
    account = store.accounts.ensure("alice")
    other = store.accounts.ensure("bob")
    store.sessions.of(account).create(state(request(0, stamp(0)), response(0, stamp(50), tokens=(1, 1, 900))),
                          session_id="long-wait", agent="Travel Atlas")
    store.sessions.of(account).create(state(request(0, stamp(0)), response(0, stamp(1), tokens=(1, 1, 2), failed=True,
                                                                         error=True)),
                          session_id="failing", agent="atlas-mini")
    store.sessions.of(account).create(state(request(0, stamp(0))), session_id="quiet", agent="Breeze")
    store.sessions.of(other).create(state(request(0, stamp(0))), session_id="elsewhere", agent="Atlas")

    def ids(**options: object) -> list[str]:
        return [info.id for info in store.sessions.of(account).list(**options)]  # type: ignore[arg-type]

    assert ids(sort="tokens") == ["long-wait", "failing", "quiet"]
    assert ids(sort="tokens", descending=False) == ["quiet", "failing", "long-wait"]
    assert ids(sort="errors")[0] == "failing"
    assert ids(sort="failed_tools")[0] == "failing"
    assert ids(sort="duration") == ["long-wait", "failing", "quiet"]
    assert ids(sort="duration", descending=False) == ["quiet", "failing", "long-wait"]
    assert sorted(ids(agent_contains="ATLAS")) == ["failing", "long-wait"]
    assert ids(agent_contains="%") == [] and ids(agent_contains="_") == []
    assert store.sessions.of(account).count() == 3
    assert store.sessions.of(account).count(agent_contains="atlas") == 2
    assert store.sessions.of(other).count(agent_contains="atlas") == 1
    assert ids(sort="no-such-column", limit=1) == ids(limit=1)


def test_a_search_says_where_it_matched(store: Store) -> None:
    account = store.accounts.ensure("alice")
    text = "We looked at many options. " * 5 + "The Louvre opens at NINE on Saturdays. " + "More text follows. " * 6
    store.sessions.of(account).create(state(request(0, stamp(0), "hello"), request(1, stamp(1), text)), session_id="s")
    store.sessions.of(account).create(state(request(0, stamp(0), "nothing here")), session_id="t")
    found = store.sessions.of(account).match_snippets(["s", "t", "missing"], "louvre opens")
    assert list(found) == ["s"]
    snippet = found["s"]
    assert "The Louvre opens at NINE" in snippet  # as written, not lower-cased
    assert snippet.startswith("…") and snippet.endswith("…") and len(snippet) <= 170


def test_token_counts_beyond_64_bits_are_capped_not_refused(store: Store) -> None:
    account = store.accounts.ensure("alice")
    huge = (2**70, 2**64, 2**70 + 2**64)
    store.sessions.of(account).create(state(request(0, stamp(0)), response(0, stamp(1), tokens=huge)), session_id="s")
    store.sessions.of(account).append("s", response(1, stamp(2), tokens=huge), expected_version=None)
    facts = store.sessions.of(account).info("s").facts
    assert facts is not None and 0 < facts.total_tokens < 2**63


@pytest.mark.parametrize("sort", ["updated", "tokens", "duration", "agent"])
def test_paging_a_sorted_list_shows_each_session_once(store: Store, sort: str) -> None:
    account = store.accounts.ensure("alice")
    for number in range(23):
        store.sessions.of(account).create(state(request(0, stamp(0)), response(0, stamp(number % 4),
                                                                             tokens=(1, 1, number % 5))),
                              session_id=f"s{number:02d}", agent=f"agent {number % 3}")
    seen = [info.id for offset in range(0, 30, 7) for info in store.sessions.of(account).list(sort=sort, limit=7,
                                                                                   offset=offset)]
    assert sorted(seen) == [f"s{number:02d}" for number in range(23)]


def test_every_sort_the_application_offers_is_one_the_store_knows() -> None:
    from agentfolio.app.sessions import SESSION_SORTS
    from agentfolio.store.sessions import SORTS

    assert set(SESSION_SORTS) == set(SORTS)


@pytest.mark.parametrize("show", ["tools", "errors", "role:user", "role:assistant", "role:tool", "role:system"])
def test_finding_in_the_store_and_in_memory_agree(store: Store, show: str) -> None:
    from agentfolio.formats import durable_state
    from agentfolio.present.search import SessionIndex
    from agentfolio.samples.showcase import timed_session

    account = store.accounts.ensure("alice")
    document = timed_session(30, seed=3, failures=0.4)
    document["data"]["conversationHistory"].extend(history(10, seed=4))
    store.sessions.of(account).create(document, session_id="s")
    index = SessionIndex(durable_state.read(document).session.entries)
    assert store.sessions.of(account).find_positions("s", show=show) == index.positions(show=show)
    for text in ("PACK A RAINCOAT", "lyon", "question 3", "nothing like this"):
        assert store.sessions.of(account).find_positions("s", text=text, show=show) == \
            index.positions(text=text, show=show)
    found = index.positions(show=show)
    if len(found) > 3:
        assert store.sessions.of(account).find_positions("s", show=show, start=found[2] + 1, limit=1) == [found[3]]


def test_finding_counts_a_session_written_before_its_entries_were_counted(store: Store) -> None:
    account = store.accounts.ensure("alice")
    store.sessions.of(account).create(state(*history(6, seed=5)), session_id="old")
    expected = store.sessions.of(account).find_positions("old", show="tools")
    with store.engine.begin() as connection:
        connection.execute(sa.update(sessions_table).values(facts_version=None))
        connection.execute(sa.update(entries_table).values(tool_calls=None, roles=None, failed_tools=None))
    assert store.sessions.of(account).find_positions("old", show="tools") == expected != []


def test_activity_reads_each_timed_entry_of_an_agent(store: Store) -> None:
    from agentfolio.present.activity import activity_over_time
    from agentfolio.samples.showcase import timed_session

    account = store.accounts.ensure("alice")
    for number in range(4):
        store.sessions.of(account).create(timed_session(5, seed=number, day=2 * number), session_id=f"t{number}",
                              agent="Atlas" if number % 2 else "Breeze")
    points = store.sessions.of(account).activity(agent="Atlas")
    assert [point.kind for point in points].count("request") == 0  # only what was counted
    assert len([point for point in points if point.latency is not None]) == 10
    assert points == sorted(points, key=lambda point: point.at)
    over_time = activity_over_time(points)
    assert over_time.unit == "day" and len(over_time.buckets) == 5  # t1 on day 2, t3 on day 6
    assert [bucket.answers for bucket in over_time.buckets] == [5, 0, 0, 0, 5]  # empty days stay in the chart
    assert dict(store.sessions.of(account).agents()) == {"Atlas": 2, "Breeze": 2}
    assert store.sessions.of(store.accounts.ensure("bob")).activity(agent="Atlas") == []


def test_finding_and_activity_stay_in_their_account(store: Store) -> None:
    from agentfolio.store import NotFound

    alice, bob = store.accounts.ensure("alice"), store.accounts.ensure("bob")
    store.sessions.of(alice).create(state(*history(3, seed=6)), session_id="same", agent="Atlas")
    store.sessions.of(bob).create(state(*history(5, seed=7)), session_id="same", agent="Breeze")
    assert len(store.sessions.of(alice).find_positions("same", show="tools")) == 3
    assert len(store.sessions.of(bob).find_positions("same", show="tools")) == 5
    with pytest.raises(NotFound):
        store.sessions.of(store.accounts.ensure("carol")).find_positions("same", text="question")
    assert store.sessions.of(alice).agents() == [("Atlas", 1)]
    assert len(store.sessions.of(alice).activity()) == 3 and len(store.sessions.of(bob).activity()) == 5


_SESSION_FACTS = ("schema_version", "head", "history_at", "entry_count", "first_activity_at", "last_activity_at",
                  "first_user_text", "input_tokens", "output_tokens", "total_tokens", "usage_responses", "tool_calls",
                  "failed_tools", "errors", "last_request_at", "facts_version")


def stored_rows(store: Store, account: Any, session_id: str) -> tuple[Any, list[Any], bytes]:
    """A session's row (what it counted), its entries' rows, and its document."""
    with store.engine.connect() as connection:
        row = connection.execute(sa.select(sessions_table.c.pk, *(sessions_table.c[name] for name in _SESSION_FACTS))
                                 .where(sessions_table.c.id == session_id,
                                        sessions_table.c.account_pk == account.pk)).one()
        rows = connection.execute(sa.select(*(column for column in entries_table.c if column.name != "session_pk"))
                                  .where(entries_table.c.session_pk == row.pk)
                                  .order_by(entries_table.c.position)).all()
    return tuple(row)[1:], [tuple(entry) for entry in rows], store.sessions.of(account).get_bytes(session_id)[1]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(document=counted_states(outcomes=False), together=st.integers(1, 3))
def test_any_valid_history_stored_whole_or_appended_makes_the_same_rows(store: Store, document: dict,
                                                                        together: int) -> None:
    # An import stores a history whole; a client appends it an entry (or a few) at a time.
    # Both count from the same JSON, so the rows they leave, and what a search reads, agree.
    assume(not durable_state.validate(document)[1])
    account = store.accounts.ensure("alice")
    whole, appended = f"w{uuid.uuid4().hex}", f"a{uuid.uuid4().hex}"
    sessions = store.sessions.of(account)
    sessions.create_prepared([sessions.prepare(document, session_id=whole)])
    history = document["data"]["conversationHistory"]
    sessions.create({**document, "data": {**document["data"], "conversationHistory": []}}, session_id=appended)
    for start in range(0, len(history), together):
        sessions.append_many(appended, history[start:start + together], expected_version=None, strict=False)
    assert stored_rows(store, account, appended) == stored_rows(store, account, whole)
    assert stored_rows(store, account, whole)[2] == _json.dumps(document)
    for entry in history:  # both indexed alike: a search finds both or neither
        for word in query_words(entry_text(entry, 200))[:2]:
            found = {info.id for info in sessions.list(text=word, limit=1000)} & {whole, appended}
            assert len(found) != 1, word
