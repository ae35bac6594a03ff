"""The ``agentfolio`` command.  Each area keeps its commands in its own module; this file
wires them together and owns the conventions: exit 0 done/valid, 1 invalid input,
2 usage; errors as one line on stderr, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from agentfolio import _json
from agentfolio.formats import registry
from agentfolio.formats.base import ReadResult
from agentfolio.formats.errors import FormatError, InvalidDocumentError
from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES, load_json_file

app = typer.Typer(
    name="agentfolio",
    help="Validate, convert and show the records AI agents leave behind.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

stdout = Console(soft_wrap=False)
stderr = Console(stderr=True, soft_wrap=True)

MaxBytes = typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", help="Refuse files larger than this many bytes.")


def fail(message: str, code: int = 1) -> None:
    stderr.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def read_file(path: Path, *, strict: bool, max_bytes: int, format_name: str | None = None) -> ReadResult:
    """Load and read a file in any known format; FormatError on anything wrong."""
    document = load_json_file(path, max_bytes=max_bytes)
    module = registry.get(format_name) if format_name else registry.detect(document, source=str(path))
    return module.read(document, strict=strict, source=str(path))


@app.command()
def validate(
    files: list[Path] = typer.Argument(..., help="Files to check.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON report for machines."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    max_bytes: int = MaxBytes,
) -> None:
    """Check files against their format's schema: exit 0 if all valid, 1 if any is not."""
    reports = [_validate_one(path, format_name, max_bytes) for path in files]
    if as_json:
        sys.stdout.write(_json.dumps(reports, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        for report in reports:
            _print_report(report)
    raise typer.Exit(0 if all(report["valid"] for report in reports) else 1)


def _validate_one(path: Path, format_name: str | None, max_bytes: int) -> dict[str, Any]:
    report: dict[str, Any] = {"file": str(path), "valid": False, "format": None, "version": None,
                              "problems": [], "notes": []}
    try:
        result = read_file(path, strict=False, max_bytes=max_bytes, format_name=format_name)
    except FormatError as error:
        problems = error.problems or ({"pointer": error.pointer or "", "message": error.message},)
        report["problems"] = [p if isinstance(p, dict) else p.to_json() for p in problems]
        return report
    report.update(valid=not result.problems, format=result.format, version=result.version,
                  problems=[p.to_json() for p in result.problems], notes=[n.to_json() for n in result.notes])
    return report


def _print_report(report: dict[str, Any]) -> None:
    name = report["file"]
    if report["valid"]:
        described = " ".join(str(part) for part in (report["format"], report["version"]) if part is not None)
        stdout.print(f"[green]valid[/] {escape(name)} ({described})",
                     highlight=False, soft_wrap=True)
    else:
        stdout.print(f"[red]invalid[/] {escape(name)}: {len(report['problems'])} problem(s)",
                     highlight=False, soft_wrap=True)
        for problem in report["problems"]:
            stdout.print(f"  {name}: {problem['pointer'] or '/'}: {problem['message']}",
                         highlight=False, soft_wrap=True, markup=False)
    for note in report["notes"]:
        stdout.print(f"  note: {note['pointer'] or '/'}: {note['message']}",
                     style="dim", highlight=False, soft_wrap=True, markup=False)


@app.command()
def show(
    file: Path = typer.Argument(..., help="A file in any supported format.", show_default=False),
    strict: bool = typer.Option(False, "--strict", help="Refuse files that break their schema."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    as_format: Optional[str] = typer.Option(None, "--as", help="Show what converting to this format keeps "
                                            "(e.g. envelope); what it loses goes to stderr."),
    expand: bool = typer.Option(False, "--expand", help="Open folded segments (system prompts, memory, tools...)."),
    max_bytes: int = MaxBytes,
) -> None:
    """Show a conversation: each segment kind in its own look, calls beside their results, token usage."""
    from agentfolio.present.terminal import print_session

    try:
        result = read_file(file, strict=strict, max_bytes=max_bytes, format_name=format_name)
        session = result.session
        if as_format is not None and as_format != result.format:
            conversion = _convert_read(result, as_format)
            _print_losses(conversion.losses, str(file), result.format, as_format)
            session = registry.get(as_format).read(conversion.result, strict=False).session
    except FormatError as error:
        fail(error.one_line() if error.source else f"{file}: {error.one_line()}")
    _warn_problems(result, str(file))
    print_session(session, console=stdout, title=str(file), expand=expand)


def _convert_read(result: ReadResult, to: str, *, strict: bool = False) -> Any:
    from agentfolio.formats.convert import ConvertOptions, convert as convert_session

    return convert_session(result.session, to=to, from_=result.format, origin=result.origin,
                           options=ConvertOptions(strict=strict))


def _print_losses(losses: list[Any], source: str, source_format: str | None, target: str) -> None:
    """The loss report, on stderr: one line per kind of loss, with where it happened."""
    from agentfolio.formats.convert import summarize

    if not losses:
        return
    dropped = sum(not loss.approximated for loss in losses)
    stderr.print(f"[yellow]loss report:[/] {escape(source)} ({source_format}) → {target}: "
                 f"{dropped} field(s) dropped, {len(losses) - dropped} approximated", highlight=False, soft_wrap=True)
    for line in summarize(losses):
        stderr.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _warn_problems(result: ReadResult, source: str) -> None:
    if not result.problems:
        return
    stderr.print(f"[yellow]warning:[/] {escape(source)} breaks its schema in {len(result.problems)} place(s); "
                 "shown anyway (see `agentfolio validate`):", highlight=False, soft_wrap=True)
    for problem in result.problems[:5]:
        stderr.print(f"  {problem}", markup=False, highlight=False, soft_wrap=True)
    if len(result.problems) > 5:
        stderr.print(f"  … and {len(result.problems) - 5} more", highlight=False, soft_wrap=True)


@app.command()
def convert(
    file: Path = typer.Argument(..., help="A file in any supported format.", show_default=False),
    to: str = typer.Option(..., "--to", help="Target format: " + ", ".join(registry.FORMATS)),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    strict: bool = typer.Option(False, "--strict", help="Fail if the file breaks its schema or if converting "
                                "would drop or approximate anything."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    max_bytes: int = MaxBytes,
) -> None:
    """Convert a file to another format, on stdout (or --output); what is lost is reported on stderr."""
    from agentfolio.formats.convert import LossError

    try:
        registry.get(to)
        result = read_file(file, strict=strict, max_bytes=max_bytes, format_name=format_name)
        conversion = _convert_read(result, to, strict=strict)
    except LossError as error:
        _print_losses(error.losses, str(file), result.format, to)
        fail(f"{file}: --strict: converting to {to} would lose {len(error.losses)} field(s) (listed above)")
    except FormatError as error:
        fail(error.one_line() if error.source else f"{file}: {error.one_line()}")
    _warn_problems(result, str(file))
    _print_losses(conversion.losses, str(file), result.format, to)
    data = _json.dumps(conversion.result, option=orjson.OPT_INDENT_2) + b"\n"
    if output is None:
        sys.stdout.buffer.write(data)
    else:
        output.write_bytes(data)


# Store and service commands (agentfolio/api/commands.py).
from agentfolio.api import commands as _store_commands  # noqa: E402

app.command("serve")(_store_commands.serve_command)
app.command("import")(_store_commands.import_command)
app.command("export")(_store_commands.export_command)
app.add_typer(_store_commands.sessions_app, name="sessions")
app.add_typer(_store_commands.token_app, name="token")
from agentfolio.api.registry.commands import agents_app as _agents_app  # noqa: E402
app.add_typer(_agents_app, name="agents")

# MessageBody commands (agentfolio/body/cli.py).
from agentfolio.body.cli import body_app  # noqa: E402

app.add_typer(body_app, name="body")


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        stderr.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":
    main()
