"""``db upgrade|status``: the database's schema (Alembic migrations).

One server alone needs neither: opening the store migrates it (unless
``AGENTFOLIO_MIGRATE=off``). Several servers on one database upgrade with ``db upgrade``
first, then restart one server at a time (docs/deploy.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from agentfolio.cli.output import EXIT_USAGE, fail, print_json, stdout

if TYPE_CHECKING:
    from agentfolio.settings import Settings

__all__ = ["register"]

db_app = typer.Typer(name="db", help="The database's schema: status and upgrade.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")


def _settings() -> Settings:
    from agentfolio.settings import Settings, SettingsError

    try:
        return Settings.from_env()
    except SettingsError as error:
        fail(str(error), EXIT_USAGE)


def _unreachable(error: Exception) -> None:
    first = str(error).splitlines()[0] if str(error) else ""
    fail(f"cannot reach the database: {type(error).__name__}: {first}")


@db_app.command("status")
def db_status(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Which schema the database is at, the newest this agentfolio knows, and what an upgrade would run.
    Exits 0 when nothing is pending (also when the database is newer), 1 when an upgrade is due."""
    from agentfolio.app.database import schema_status

    settings = _settings()
    try:
        status = schema_status(settings)
    except Exception as error:
        _unreachable(error)
        return
    if as_json:
        print_json({"current": status.current, "head": status.head, "state": status.state,
                    "pending": list(status.pending)})
    else:
        out = stdout()
        out.print(f"database schema: {status.current or 'none (empty database)'}", highlight=False)
        out.print(f"this agentfolio: {status.head}", highlight=False)
        if status.state == "ahead":
            out.print("the database is newer than this agentfolio: it runs on it unchanged", highlight=False)
        elif status.pending:
            out.print(f"pending: {', '.join(status.pending)} (run 'agentfolio db upgrade')", highlight=False)
        else:
            out.print("up to date", highlight=False)
    if status.pending:
        raise typer.Exit(1)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Run the pending migrations (safe while servers run: one process migrates at a time,
    and migrations only add, so running servers keep working)."""
    from agentfolio.app.database import upgrade

    settings = _settings()
    try:
        before, after = upgrade(settings)
    except Exception as error:
        _unreachable(error)
        return
    out = stdout()
    if before.state == "ahead":
        out.print(f"the database schema ({before.current}) is newer than this agentfolio ({before.head}); "
                  "nothing to do", highlight=False)
    elif not before.pending:
        out.print(f"already up to date ({after.current})", highlight=False)
    else:
        out.print(f"upgraded {before.current or 'an empty database'} → {after.current} "
                  f"({len(before.pending)} migration(s): {', '.join(before.pending)})", highlight=False)
