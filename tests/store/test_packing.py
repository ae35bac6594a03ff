"""Span payloads and conversation states packed at rest: every reader gets back the JSON
that was written, whichever way the row was written (the driver's batch insert, a
SQLAlchemy statement); rows stored before packing read unchanged; small values stay
plain; nothing packed is larger than what it holds."""

from __future__ import annotations

from typing import Any

import orjson
import sqlalchemy as sa
from hypothesis import given
from hypothesis import strategies as st

from agentfolio.app.otlp import OtlpIngest
from agentfolio.app.registry import (
    AgentCreate,
    InstanceRegister,
    Principal,
    RegistryService,
    SpanCreate,
    SpanFinish,
    SpanGet,
)
from agentfolio.store import Store
from agentfolio.store.packing import DICTIONARIES, PACK_FROM_BYTES, pack, unpack
from tests.app.test_otlp import body, chat, texts_of

#: The spans table as the database holds it: no column type between the test and the bytes.
_RAW = sa.table("registry_spans", sa.column("id"), sa.column("account_pk"), sa.column("payload"),
                sa.column("result_payload"))
NOW = 1_750_000_000 * 10**9
PROSE = ("Each figure below comes from the command beside it, run on this project's machine; "
         "other work was running, so expect some spread. ") * 6

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=12), inner, max_size=8),
    max_leaves=60)


@given(json_values)
def test_packing_gives_back_the_json_and_never_grows_it(value: Any) -> None:
    raw = orjson.dumps(value)
    packed = pack(raw)
    assert unpack(packed) == raw
    assert packed is not None and len(packed) <= len(raw)
    if len(raw) < PACK_FROM_BYTES:
        assert packed == raw  # small values stay as they are
    assert raw[0] != 0  # JSON never starts with the byte that marks a packed value ...
    assert unpack(raw) == raw  # ... so a value stored before packing reads as it is
    assert pack(packed) == packed  # packing twice changes nothing


def test_none_stays_none() -> None:
    assert pack(None) is None and unpack(None) is None


def test_the_dictionaries_never_change() -> None:
    """Stored values were compressed against these bytes: changed, they would unpack to
    garbage or not at all.  A better dictionary is a new number beside them."""
    import hashlib

    assert {number: hashlib.sha256(content).hexdigest() for number, content in DICTIONARIES.items()} == {
        1: "1a7633688790067776f33845eb19fea1a07c69d6c8d2c734348a5dda6613be80"}


def test_a_value_packed_with_a_dictionary_this_version_lacks_is_refused_by_name() -> None:
    import pytest

    packed = pack(orjson.dumps({"text": PROSE}))
    assert packed is not None and packed[:2] == b"\x00\x01"
    with pytest.raises(ValueError, match="dictionary 9"):
        unpack(b"\x00\x09" + packed[2:])


def _raw_payloads(store: Store, account_pk: int) -> dict[str, tuple[bytes, bytes | None]]:
    with store.engine.connect() as connection:
        return {row.id: (bytes(row.payload), None if row.result_payload is None else bytes(row.result_payload))
                for row in connection.execute(sa.select(_RAW.c.id, _RAW.c.payload, _RAW.c.result_payload)
                                              .where(_RAW.c.account_pk == account_pk))}


def test_an_otel_span_is_stored_packed_and_read_as_sent(store: Store) -> None:
    account = store.accounts.ensure("packed")
    ingest = OtlpIngest(store)
    ingest.export(account, body({"id": b"\x01" * 8, "trace": b"\x02" * 16, "start": NOW,
                                 "attributes": chat([PROSE], PROSE)}), encoding="protobuf")
    (span_id, (stored, _)), = _raw_payloads(store, account.pk).items()
    payload = RegistryService(store).get_span(Principal(account), SpanGet(agent_span_id=span_id)).payload
    sent = orjson.dumps(payload)
    assert PROSE in orjson.loads(payload["attributes"]["gen_ai.input.messages"])[0]["parts"][0]["content"]
    assert stored != sent and len(stored) < len(sent) / 2 and PROSE.encode() not in stored
    assert unpack(stored) == sent
    ingest.drain()  # the conversation worker reads the packed payload, and packs its state
    assert texts_of(store, account, "otel:trace:" + "02" * 16) == [PROSE, PROSE]


def test_spans_written_by_the_prefactor_api_pack_on_create_and_on_finish(store: Store) -> None:
    service = RegistryService(store)
    principal = Principal(store.accounts.ensure("prefactor"))
    agent = service.create_agent(principal, AgentCreate(name="a")).id
    instance = service.register_instance(principal, InstanceRegister(agent_id=agent, agent_version={})).id
    payload, result = {"prompt": PROSE}, {"answer": PROSE, "n": 3}
    created = service.bulk(principal, [_create(instance, payload)])[0].answer.span  # the batch insert
    single = service.create_span(principal, SpanCreate(agent_instance_id=instance, schema_name="x",
                                                       status="active", payload=payload)).span
    service.run(principal, SpanFinish(agent_span_id=single.id, status="complete",
                                      result_payload=result))  # a SQLAlchemy UPDATE
    raw = _raw_payloads(store, principal.account.pk)
    for span_id in (created.id, single.id):
        assert len(raw[span_id][0]) < len(orjson.dumps(payload)) / 2
        assert service.get_span(principal, SpanGet(agent_span_id=span_id)).payload == payload
    assert raw[single.id][1] is not None and len(raw[single.id][1]) < len(orjson.dumps(result)) / 2
    assert service.get_span(principal, SpanGet(agent_span_id=single.id)).result_payload == result


def _create(instance: str, payload: dict[str, Any]) -> Any:
    from agentfolio.app.registry import BulkItem

    return BulkItem("k-1", SpanCreate(agent_instance_id=instance, schema_name="x", status="active", payload=payload))


def test_payloads_stored_before_packing_read_as_they_were(store: Store) -> None:
    """A database written by an earlier version holds plain JSON: every reader still
    takes it, the conversation worker included."""
    account = store.accounts.ensure("older")
    ingest = OtlpIngest(store)
    ingest.export(account, body({"id": b"\x01" * 8, "trace": b"\x03" * 16, "start": NOW,
                                 "attributes": chat([PROSE], "short answer")}), encoding="protobuf")
    (span_id, (stored, _)), = _raw_payloads(store, account.pk).items()
    plain = unpack(stored)
    assert plain != stored
    with store.engine.begin() as connection:  # as an earlier version wrote it
        connection.execute(sa.update(_RAW).where(_RAW.c.id == span_id).values(payload=plain))
    assert _raw_payloads(store, account.pk)[span_id][0] == plain
    got = RegistryService(store).get_span(Principal(account), SpanGet(agent_span_id=span_id)).payload
    assert orjson.dumps(got) == plain
    ingest.drain()
    assert texts_of(store, account, "otel:trace:" + "03" * 16) == [PROSE, "short answer"]
