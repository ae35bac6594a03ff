"""``among``: ``column IN values`` bound as one parameter must find exactly the rows an
``IN`` list of the same values finds, on both backends, whatever the values hold."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.store import Store
from agentfolio.store.registry.base import among

_TABLE = sa.Table("among_probe", sa.MetaData(), sa.Column("name", sa.String(200), primary_key=True))
STORED = ["plain", "with 'quote'", 'with "double"', "back\\slash", "ünïcödé ✓", "[1, 2]", "null", "", " spaced "]


@pytest.fixture
def probe(store: Store):
    _TABLE.create(store.engine)
    with store.engine.begin() as connection:
        connection.execute(sa.insert(_TABLE), [{"name": name} for name in STORED])
    yield store.engine
    _TABLE.drop(store.engine)


def _among(engine: sa.Engine, values: list[str]) -> list[str]:
    with engine.connect() as connection:
        return sorted(connection.execute(sa.select(_TABLE.c.name).where(
            among(connection.dialect, _TABLE.c.name, values))).scalars())


def test_every_stored_value_is_found_by_itself_and_no_other(probe) -> None:
    for name in STORED:
        assert _among(probe, [name]) == [name]
    assert _among(probe, STORED) == sorted(STORED)
    assert _among(probe, []) == []
    assert _among(probe, ["absent", "PLAIN", "plain "]) == []


def test_more_values_than_a_statement_may_have_parameters(probe) -> None:
    """SQLite refuses more than 32,766 parameters in one statement; one parameter holds them all."""
    values = [f"missing-{index}" for index in range(40_000)] + ["null", "plain"]
    assert _among(probe, values) == ["null", "plain"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(STORED) | st.text(alphabet=st.characters(blacklist_categories=["Cs"],
                                                                         blacklist_characters="\x00"),
                                                  max_size=12), max_size=20))
def test_the_rows_found_are_those_an_in_list_finds(probe, values) -> None:
    with probe.connect() as connection:
        expected = sorted(connection.execute(sa.select(_TABLE.c.name).where(_TABLE.c.name.in_(values))).scalars())
    assert _among(probe, values) == expected
