"""Content-addressed blobs: a row per stored blob and a row per entry that points at one,
so blobs are collected by a sweep when nothing points at them (never inline).

Existing entries' references (the ``entries.blobs`` JSON list) are copied into
``entry_blobs``; their bytes stay at the old per-session keys until the sweep moves them
to the content-addressed ones (reads look in both places meanwhile).

Revision ID: 0003_blobs
Revises: 0002_registry
Create Date: 2026-11-24
"""

from __future__ import annotations

import json
import time

import sqlalchemy as sa
from alembic import op

revision = "0003_blobs"
down_revision = "0002_registry"
branch_labels = None
depends_on = None


def upgrade() -> None:
    blobs = op.create_table(
        "blobs",
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_blobs"),
    )
    entry_blobs = op.create_table(
        "entry_blobs",
        sa.Column("session_pk", sa.BigInteger, nullable=False),
        sa.Column("position", sa.Integer, nullable=False, autoincrement=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("session_pk", "position", "digest", name="pk_entry_blobs"),
        sa.ForeignKeyConstraint(["digest"], ["blobs.digest"], name="fk_entry_blobs_digest_blobs"),
        sa.ForeignKeyConstraint(["session_pk", "position"], ["entries.session_pk", "entries.position"],
                                ondelete="CASCADE", name="fk_entry_blobs_session_pk_entries"),
    )
    op.create_index("ix_entry_blobs_digest", "entry_blobs", ["digest"])

    connection = op.get_bind()
    entries = sa.table("entries", sa.column("session_pk"), sa.column("position"), sa.column("blobs"))
    known: set[str] = set()
    now = time.time()
    rows = connection.execute(sa.select(entries.c.session_pk, entries.c.position, entries.c.blobs)
                              .where(entries.c.blobs.is_not(None))).all()
    for session_pk, position, refs in rows:
        digests = sorted({ref.split("#", 1)[0] for ref in json.loads(refs)})
        fresh = [digest for digest in digests if digest not in known]
        if fresh:
            connection.execute(sa.insert(blobs), [{"digest": digest, "created_at": now} for digest in fresh])
            known.update(fresh)
        connection.execute(sa.insert(entry_blobs), [{"session_pk": session_pk, "position": position,
                                                     "digest": digest} for digest in digests])


def downgrade() -> None:
    op.drop_index("ix_entry_blobs_digest", table_name="entry_blobs")
    op.drop_table("entry_blobs")
    op.drop_table("blobs")
