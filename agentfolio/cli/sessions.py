"""``import``, ``export``, ``sessions ls|expire``: sessions in the local store.

They work on the store the settings name (``AGENTFOLIO_DATABASE_URL``, else the SQLite
file in ``AGENTFOLIO_DATA_DIR``), as the account given with ``--account``.
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from agentfolio.cli.output import (
    EXIT_INVALID,
    EXIT_USAGE,
    AccountOption,
    MaxBytesOption,
    Safe,
    clean,
    fail,
    one_line,
    open_folio,
    print_json,
    stderr,
    stdout,
)

if TYPE_CHECKING:
    from rich.progress import Progress

    from agentfolio.app import Agentfolio
    from agentfolio.app.imports import ImportOutcome
    from agentfolio.store import Account

__all__ = ["account_named", "register"]

sessions_app = typer.Typer(name="sessions", help="List and expire stored sessions.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.command("import")(import_command)
    app.command("export")(export_command)
    app.add_typer(sessions_app, name="sessions")


def account_named(folio: Agentfolio, name: str, *, create: bool = False) -> Account:
    """The account of that name; exits with a hint when there is none (or creates it)."""
    from agentfolio.errors import AgentfolioError

    try:
        found = folio.accounts.ensure(name) if create else folio.accounts.get(name)
    except AgentfolioError as error:
        fail(error.message, EXIT_USAGE)
    if found is None:
        fail(f"no account named {name!r} (create one with: agentfolio token create --account {name})")
    return found


def import_command(
    paths: list[Path] = typer.Argument(..., help="Files, or folders searched for *.json.", show_default=False),
    account: str = AccountOption,
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name (default: the first authorName)."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print one JSON line per file as it is committed."),
    max_bytes: int = MaxBytesOption(),
) -> None:
    """Store files of any supported format as sessions (resumable: skips what is stored).

    Each file is stored whole or not at all; a file in another format is converted to
    durable state and what the conversion could not keep is reported."""
    from agentfolio.app.imports import import_files
    from agentfolio.cli.documents import print_losses

    counts = {"stored": 0, "skipped": 0, "failed": 0}
    with open_folio() as folio:
        owner = account_named(folio, account, create=True)
        progress = _import_progress() if not jsonl and stderr().is_terminal else None
        task = progress.add_task("import", total=None, name="") if progress is not None else None
        console = progress.console if progress is not None else stderr()

        def started(total: int) -> None:
            if progress is not None and task is not None:
                progress.update(task, total=total)

        def done(outcome: ImportOutcome) -> None:
            counts[outcome.status] += 1
            if jsonl:
                sys.stdout.buffer.write(_json_line(outcome.to_json()))
                sys.stdout.flush()
            if outcome.error:
                console.print("[red]error:[/] " + clean(outcome.error), soft_wrap=True)
            elif outcome.losses:
                print_losses(outcome.losses, str(outcome.path), outcome.format, "durable-state")
            if progress is not None and task is not None:
                progress.update(task, advance=1, name=one_line(outcome.path.name, 60))

        with progress if progress is not None else nullcontext():
            import_files(folio, owner, paths, agent=agent, max_bytes=max_bytes, on_start=started, on_file=done)
    stderr().print(f"{counts['stored']} stored, {counts['skipped']} already stored, {counts['failed']} failed")
    raise typer.Exit(EXIT_INVALID if counts["failed"] else 0)


def _import_progress() -> Progress:
    """The bar an import shows on a terminal (rich's progress module is loaded only then: a
    script's import, or one printing lines, starts without it)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                    TextColumn("{task.fields[name]}"), console=stderr(), transient=True)


def _json_line(value: dict[str, Any]) -> bytes:
    from agentfolio import _json

    return _json.dumps(value) + b"\n"


def export_command(
    session: str = typer.Argument(..., help="The session id.", show_default=False),
    format_name: str = typer.Option("durable-state", "--format", help="Any format `agentfolio formats` lists."),
    account: str = AccountOption,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
) -> None:
    """Write a stored session as durable state (exactly as stored) or in another format."""
    import orjson

    from agentfolio import _json
    from agentfolio.cli.documents import print_losses
    from agentfolio.errors import AgentfolioError
    from agentfolio.formats import registry

    try:
        registry.get(format_name)
    except AgentfolioError as error:
        fail(error.message, EXIT_USAGE)
    with open_folio() as folio:
        owner = account_named(folio, account)
        try:
            exported = folio.sessions.export(owner, session, format_name)
        except AgentfolioError as error:
            fail(error.message)
    print_losses(exported.losses, session, "durable-state", format_name)
    data = _json.dumps(_json.loads(exported.data), option=orjson.OPT_INDENT_2) + b"\n"
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        output.write_bytes(data)


def _time(value: Optional[str], name: str) -> float | None:
    if value is None:
        return None
    from agentfolio._time import parse_datetime

    moment = parse_datetime(value)
    if moment is None:
        fail(f"--{name} {value!r} is not an ISO 8601 time", EXIT_USAGE)
    return moment.timestamp()


@sessions_app.command("ls")
def sessions_ls(
    account: str = AccountOption,
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's sessions."),
    text: Optional[str] = typer.Option(None, "--text", "-q", help="Text in any message (any case)."),
    since: Optional[str] = typer.Option(None, "--since", help="Active at or after this ISO time."),
    until: Optional[str] = typer.Option(None, "--until", help="Active at or before this ISO time."),
    limit: int = typer.Option(100, "--limit", min=1, max=10_000),
    as_json: bool = typer.Option(False, "--json", help="One JSON array for machines."),
) -> None:
    """List one account's stored sessions, newest-written first."""
    with open_folio() as folio:
        owner = account_named(folio, account)
        found = folio.sessions.list(owner, agent=agent, text=text, since=_time(since, "since"),
                                    until=_time(until, "until"), limit=limit)
    if as_json:
        print_json([info.to_json() for info in found])
        return
    if not found:
        stderr().print("no sessions")
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, highlight=False)
    table.add_column("id", no_wrap=True, overflow="ignore")
    for name in ("agent", "entries", "version", "last activity", "updated"):
        table.add_column(name, overflow="ellipsis", no_wrap=True)
    for info in found:
        data = info.to_json()
        table.add_row(Text(one_line(info.id)), Text(one_line(info.agent or "")), str(info.entry_count),
                      str(info.version), data["lastActivityAt"] or "", data["updatedAt"])
    # Piped: full ids, no truncation; in a terminal ids stay whole and the rest shrinks.
    console = stdout() if stdout().is_terminal else Console(width=1000, soft_wrap=False)
    console.print(Safe(table))


@sessions_app.command("expire")
def sessions_expire() -> None:
    """Remove sessions idle for longer than AGENTFOLIO_SESSION_TTL seconds."""
    with open_folio() as folio:
        removed = folio.sessions.expire()
    stderr().print(f"{removed} idle session(s) removed")
