"""Many rows in few statements, on both backends: every row stored with the values given,
the ``RETURNING`` columns of each, statements cut at the parameter limit, and a key taken
refused as SQLAlchemy refuses it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from agentfolio.store import Store, multirow
from agentfolio.store.engine import read_transaction, write_transaction
from tests.storage import statements_run

_METADATA = sa.MetaData()
_TABLE = sa.Table("multirow_probe", _METADATA,
                  sa.Column("pk", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True,
                            autoincrement=True),
                  sa.Column("name", sa.String(50), nullable=False, unique=True),
                  sa.Column("size", sa.Float, nullable=True),
                  sa.Column("data", sa.LargeBinary, nullable=True))


@pytest.fixture
def table(store: Store) -> Iterator[sa.Table]:
    _METADATA.create_all(store.engine)
    yield _TABLE
    _METADATA.drop_all(store.engine)


def test_rows_are_stored_with_their_values_and_their_keys_returned(store: Store, table: sa.Table) -> None:
    rows = [(f"row-{index}", index / 3 if index % 2 else None, bytes([index % 256]) * index)
            for index in range(300)]
    with write_transaction(store.engine) as connection:
        returned = multirow.insert_rows(connection, table.name, ("name", "size", "data"), rows,
                                        returning=("name", "pk"))
    with read_transaction(store.engine) as connection:
        stored = {row.name: row for row in connection.execute(sa.select(table))}
    assert sorted((row.name, row.size, row.data) for row in stored.values()) == sorted(rows)
    assert dict(returned) == {name: row.pk for name, row in stored.items()}


def test_statements_end_at_the_parameter_limit(store: Store, table: sa.Table,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(multirow, "MAX_PARAMETERS", 6)  # two rows of three columns
    seen = statements_run(store.engine)
    rows = [(f"row-{index}", float(index), None) for index in range(5)]
    with write_transaction(store.engine) as connection:
        returned = multirow.insert_rows(connection, table.name, ("name", "size", "data"), rows, returning=("name",))
    inserts = [statement for statement in seen if statement.lstrip().upper().startswith("INSERT")]
    assert len(inserts) == 3
    assert sorted(name for (name,) in returned) == [name for name, _, _ in rows]


def test_a_key_taken_is_refused_and_nothing_of_the_statement_stored(store: Store, table: sa.Table) -> None:
    with write_transaction(store.engine) as connection:
        multirow.insert_rows(connection, table.name, ("name",), [("taken",)])
    with pytest.raises(IntegrityError), write_transaction(store.engine) as connection:
        multirow.insert_rows(connection, table.name, ("name",), [("new",), ("taken",)])
    with read_transaction(store.engine) as connection:
        assert connection.execute(sa.select(table.c.name)).scalars().all() == ["taken"]
