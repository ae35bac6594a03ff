"""CLI commands for the store and the service, mounted by ``agentfolio/cli.py``:
``serve``, ``import``, ``export``, ``sessions ls|expire``, ``token create``.

They work on the local store named by the settings (``AGENTFOLIO_DATABASE_URL``, else
the SQLite file in ``AGENTFOLIO_DATA_DIR``), as the account given with ``--account``.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from agentfolio import _json
from agentfolio.formats import durable_state, registry
from agentfolio.formats.errors import FormatError
from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES, parse_json, read_bytes
from agentfolio.settings import Settings, SettingsError

if TYPE_CHECKING:
    from agentfolio.store import Store

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)

DEFAULT_ACCOUNT = "default"
AccountOption = typer.Option(DEFAULT_ACCOUNT, "--account", help="The account to work as (created if needed).")

sessions_app = typer.Typer(name="sessions", help="List and expire stored sessions.", no_args_is_help=True)
token_app = typer.Typer(name="token", help="Bearer tokens for the HTTP service.", no_args_is_help=True)


def _fail(message: str, code: int = 1) -> None:
    stderr.print(f"[red]error:[/] {message}", markup=True, highlight=False)
    raise typer.Exit(code)


def _open_store(settings: Settings | None = None) -> "Store":
    from agentfolio.store import Store

    try:
        return Store.open(settings or Settings.from_env())
    except SettingsError as error:
        _fail(str(error), 2)
    except Exception as error:  # a database that cannot be reached or opened
        _fail(f"cannot open the store: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    raise AssertionError  # unreachable


# -- import ----------------------------------------------------------------------------------


def _files(paths: list[Path]) -> Iterator[Path]:
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.is_file())
        else:
            yield path


def _guess_agent(document: dict[str, Any]) -> str | None:
    data = document.get("data")
    history = data.get("conversationHistory") if isinstance(data, dict) else None
    for entry in history if isinstance(history, list) else []:
        for message in entry.get("messages") or [] if isinstance(entry, dict) else []:
            if isinstance(message, dict) and isinstance(message.get("authorName"), str) and message["authorName"]:
                return message["authorName"][:200]
    return None


def _session_id_for(path: Path, digest: str) -> str:
    from agentfolio.store.sessions import SESSION_ID

    stem = "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in path.stem).strip(".-_")[:60]
    candidate = f"{stem}-{digest[:12]}" if stem else digest[:32]
    return candidate if SESSION_ID.fullmatch(candidate) else digest[:32]


def import_file(store: "Store", account: Any, path: Path, *, agent: str | None, max_bytes: int) -> tuple[str, str]:
    """``(status, id)``: status is ``stored`` or ``skipped`` (already imported)."""
    from agentfolio.store import AlreadyExists
    data = read_bytes(path, max_bytes=max_bytes)
    digest = hashlib.sha256(data).hexdigest()
    existing = store.sessions.exists_source(account, digest)
    if existing:
        return "skipped", existing
    document = parse_json(data, source=str(path))
    module = registry.detect(document, source=str(path))
    if module is not durable_state.FORMAT:
        document = durable_state.write(module.read(document, strict=False, source=str(path)).session)
    try:
        created = store.sessions.create(account, document, session_id=_session_id_for(path, digest),
                                        agent=agent or _guess_agent(document), source_hash=digest, strict=False)
    except AlreadyExists:
        existing = store.sessions.exists_source(account, digest)
        if existing:
            return "skipped", existing
        raise
    return "stored", created.session.id


def import_command(
    paths: list[Path] = typer.Argument(..., help="Files, or folders searched for *.json.", show_default=False),
    account: str = AccountOption,
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent name (default: the first authorName)."),
    jsonl: bool = typer.Option(False, "--jsonl", help="Print one JSON line per file as it is committed."),
    max_bytes: int = typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", help="Refuse files larger than this."),
) -> None:
    """Store files of any supported format as sessions (resumable: skips what is stored).

    Each file is stored whole or not at all; re-running skips files already stored, by content."""
    from agentfolio.store import InvalidInput, StoreError

    files = list(_files(paths))
    store = _open_store()
    counts = {"stored": 0, "skipped": 0, "failed": 0}
    try:
        owner = store.accounts.ensure(account)
        progress = Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                            TextColumn("{task.fields[name]}"), console=stderr, transient=True,
                            disable=jsonl or not stderr.is_terminal)
        with progress:
            task = progress.add_task("import", total=len(files), name="")
            for path in files:
                progress.update(task, name=path.name)
                try:
                    status, session_id = import_file(store, owner, path, agent=agent, max_bytes=max_bytes)
                except (FormatError, StoreError) as error:
                    counts["failed"] += 1
                    message = error.one_line() if isinstance(error, FormatError) else error.message
                    if isinstance(error, InvalidInput) and error.pointer:
                        message = f"{error.pointer}: {message}"
                    if not message.startswith(str(path)):
                        message = f"{path}: {message}"
                    if jsonl:
                        _line({"path": str(path), "status": "failed", "error": message})
                    progress.console.print(f"[red]error:[/] {message}", highlight=False, markup=True)
                else:
                    counts[status] += 1
                    if jsonl:
                        _line({"path": str(path), "status": status, "id": session_id})
                progress.advance(task)
    finally:
        store.close()
    stderr.print(f"{counts['stored']} stored, {counts['skipped']} already stored, {counts['failed']} failed",
                 highlight=False)
    raise typer.Exit(1 if counts["failed"] else 0)


def _line(value: dict[str, Any]) -> None:
    sys.stdout.write(_json.dumps(value).decode() + "\n")
    sys.stdout.flush()


# -- export ----------------------------------------------------------------------------------


def export_command(
    session: str = typer.Argument(..., help="The session id.", show_default=False),
    format_name: str = typer.Option("durable-state", "--format", help="durable-state, envelope or canonical."),
    account: str = AccountOption,
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
) -> None:
    """Write a stored session as durable state (exactly as stored) or another format."""
    from agentfolio.store import StoreError

    store = _open_store()
    try:
        owner = store.accounts.get(account)
        if owner is None:
            _fail(f"no account named {account!r}")
        info, data = store.sessions.get_bytes(owner, session)
        if format_name != "durable-state":
            from agentfolio.api.render import convert_bytes

            data = convert_bytes(data, format_name)
        data = _json.dumps(_json.loads(data), option=orjson.OPT_INDENT_2) + b"\n"
    except StoreError as error:
        _fail(error.message)
    except FormatError as error:
        _fail(error.one_line())
    finally:
        store.close()
    if output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        output.write_bytes(data)


# -- sessions ls / expire ---------------------------------------------------------------------


def _time(value: Optional[str], name: str) -> float | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        _fail(f"--{name} {value!r} is not an ISO 8601 time", 2)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


@sessions_app.command("ls")
def sessions_ls(
    account: Optional[str] = typer.Option(None, "--account", help="Only this account's sessions (default: all)."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's sessions."),
    text: Optional[str] = typer.Option(None, "--text", "-q", help="Text in any message (any case)."),
    since: Optional[str] = typer.Option(None, "--since", help="Active at or after this ISO time."),
    until: Optional[str] = typer.Option(None, "--until", help="Active at or before this ISO time."),
    limit: int = typer.Option(100, "--limit", min=1, max=10_000),
    as_json: bool = typer.Option(False, "--json", help="One JSON array for machines."),
) -> None:
    """List stored sessions, newest-written first."""
    store = _open_store()
    try:
        owner = None
        if account is not None:
            owner = store.accounts.get(account)
            if owner is None:
                _fail(f"no account named {account!r}")
        found = store.sessions.list(owner, agent=agent, text=text, since=_time(since, "since"),
                                    until=_time(until, "until"), limit=limit)
    finally:
        store.close()
    if as_json:
        sys.stdout.write(_json.dumps([info.to_json() for info in found], option=orjson.OPT_INDENT_2).decode() + "\n")
        return
    if not found:
        stderr.print("no sessions", highlight=False)
        return
    table = Table(box=None, highlight=False)
    table.add_column("id", no_wrap=True, overflow="ignore")
    for name in ("agent", "entries", "version", "last activity", "updated"):
        table.add_column(name, overflow="ellipsis", no_wrap=True)
    for info in found:
        data = info.to_json()
        table.add_row(info.id, info.agent or "", str(info.entry_count), str(info.version),
                      data["lastActivityAt"] or "", data["updatedAt"])
    # Piped: full ids, no truncation; in a terminal ids stay whole and the rest shrinks.
    (stdout if stdout.is_terminal else Console(width=1000, soft_wrap=False)).print(table)


@sessions_app.command("expire")
def sessions_expire() -> None:
    """Remove sessions idle for longer than AGENTFOLIO_SESSION_TTL seconds."""
    store = _open_store()
    try:
        removed = store.sessions.expire()
    finally:
        store.close()
    stderr.print(f"{removed} idle session(s) removed", highlight=False)


# -- token create -----------------------------------------------------------------------------


@token_app.command("create")
def token_create(
    account: str = typer.Option(..., "--account", help="The account the token acts as (created if needed)."),
    label: Optional[str] = typer.Option(None, "--label", help="A note to tell tokens apart."),
) -> None:
    """Create a bearer token for one account.  It is shown once: only its hash is kept."""
    from agentfolio.store import StoreError

    store = _open_store()
    try:
        token, _ = store.accounts.create_token(account, label=label)
    except StoreError as error:
        _fail(error.message, 2)
    finally:
        store.close()
    sys.stdout.write(token + "\n")
    stderr.print(f"token for account {account!r}: keep it, it is not shown again", highlight=False)


# -- serve ------------------------------------------------------------------------------------


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    demo: bool = typer.Option(False, "--demo", help="A throw-away store with a demo account and sample sessions."),
) -> None:
    """Run the HTTP API (OpenAPI at /docs and /openapi.json)."""
    import uvicorn

    from agentfolio.api.app import create_app

    temporary = None
    try:
        settings = Settings.from_env()
    except SettingsError as error:
        _fail(str(error), 2)
    if demo:
        temporary = tempfile.TemporaryDirectory(prefix="agentfolio-demo-")
        settings = settings.with_(data_dir=Path(temporary.name), database_url=None, blob_url=None)
    store = _open_store(settings)
    try:
        base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
        if demo:
            token, account = store.accounts.create_token("demo", label="demo")
            loaded = load_demo_sessions(store, account)
            from agentfolio.web.samples import load_demo

            loaded += load_demo(store, account)
            stdout.print(f"agentfolio demo: {loaded} sample session(s) in a throw-away store", highlight=False)
            stdout.print(f"  viewer: {base}/", highlight=False)
            stdout.print(f"  API:   {base}/api/v1/sessions", highlight=False)
            stdout.print(f"  docs:  {base}/docs", highlight=False)
            stdout.print(f"  token: {token}", highlight=False)
            stdout.print(f'  try:   curl -H "Authorization: Bearer {token}" {base}/api/v1/sessions', highlight=False,
                         soft_wrap=True)
        else:
            stdout.print(f"agentfolio viewer on {base}/ (sign in with a token), API on {base}/api/v1 "
                         f"(docs at {base}/docs); tokens: agentfolio token create --account NAME", highlight=False)
        sys.stdout.flush()
        app = create_app(settings, store=store, viewer_account=account if demo else None)
        uvicorn.run(app, host=host, port=port, log_level=os.environ.get("AGENTFOLIO_LOG_LEVEL", "info"))
    finally:
        store.close()
        if temporary is not None:
            temporary.cleanup()


def load_demo_sessions(store: "Store", account: Any) -> int:
    from agentfolio.store import StoreError

    loaded = 0
    samples = resources.files("agentfolio.samples")
    for item in sorted(samples.iterdir(), key=lambda entry: entry.name):
        if not item.name.endswith(".json"):
            continue
        try:
            document = parse_json(item.read_bytes(), source=item.name)
            if not durable_state.looks_like(document):
                continue
            store.sessions.create(account, document, session_id=item.name.removesuffix(".json").replace(
                ".sample", ""), agent=_guess_agent(document), strict=False)
            loaded += 1
        except (FormatError, StoreError) as error:
            stderr.print(f"skipped sample {item.name}: {error}", highlight=False)
    from agentfolio.samples import synthetic_durable_state

    for entries in (12, 400):
        store.sessions.create(account, synthetic_durable_state(entries, seed=entries), session_id=f"synthetic-{entries}",
                              agent="Agent")
        loaded += 1
    return loaded
