"""``validate``, ``show``, ``convert``, ``formats``: files on disk, nothing stored."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from agentfolio.cli.output import EXIT_INVALID, MaxBytesOption, clean, fail, print_json, say, stderr, stdout

if TYPE_CHECKING:
    from agentfolio.app.documents import DocumentReport
    from agentfolio.formats.base import ReadResult
    from agentfolio.formats.losses import Loss

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(show)
    app.command()(convert)
    app.command()(formats)


def validate(
    files: list[Path] = typer.Argument(..., help="Files to check.", show_default=False),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON report for machines."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    max_bytes: int = MaxBytesOption(),
) -> None:
    """Check files against their format's schema: exit 0 if all valid, 1 if any is not."""
    from agentfolio.app.documents import validate_file

    reports = [validate_file(path, format_name=format_name, max_bytes=max_bytes) for path in files]
    if as_json:
        print_json([{key: value for key, value in report.to_json().items()
                     if key in ("file", "valid", "format", "version", "problems", "notes")} for report in reports])
    else:
        for report in reports:
            _print_report(report)
    raise typer.Exit(0 if all(report.valid for report in reports) else EXIT_INVALID)


def _print_report(report: DocumentReport) -> None:
    def text(value: object) -> str:
        return clean(value, markup=False)

    name = text(report.source)
    if report.valid:
        described = " ".join(str(part) for part in (report.format, report.version) if part is not None)
        say(f"{name} ({text(described)})", label="valid", color="green")
    else:
        say(f"{name}: {len(report.problems)} problem(s)", label="invalid", color="red")
        for problem in report.problems:
            say(f"  {name}: {text(problem.pointer or '/')}: {text(problem.message)}")
    for note in report.notes:
        say(f"  note: {text(note.pointer or '/')}: {text(note.message)}", dim=True)


def show(
    file: Path = typer.Argument(..., help="A file in any supported format.", show_default=False),
    strict: bool = typer.Option(False, "--strict", help="Refuse files that break their schema."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    as_format: Optional[str] = typer.Option(None, "--as", help="Show what converting to this format keeps "
                                            "(e.g. envelope); what it loses goes to stderr."),
    expand: bool = typer.Option(False, "--expand", help="Open folded segments (system prompts, memory, tools...)."),
    max_bytes: int = MaxBytesOption(),
) -> None:
    """Show a conversation: each segment kind in its own look, calls beside their results, token usage."""
    from agentfolio.app.documents import SPAN_FILE, convert_read, one_conversation, read_file, read_span_path
    from agentfolio.cli.terminal import print_session
    from agentfolio.formats import registry
    from agentfolio.formats.errors import FormatError

    try:
        spans = read_span_path(file, max_bytes=max_bytes) if format_name in (None, SPAN_FILE) else None
        if spans is not None and len(spans.found) > 1 and as_format is None:
            # A span export: each conversation in it, as `agentfolio import` would store it.
            for problem in spans.problems[:5]:
                stderr().print(f"[yellow]warning:[/] {clean(file)}: {clean(problem.message)}", soft_wrap=True)
            for conversation in spans.found:
                title = f"{file} · {conversation.built.agent or 'conversation'} · {conversation.session_id}"
                print_session(conversation.built.session, console=stdout(), title=title, expand=expand)
            return
        if spans is not None:
            result = one_conversation(spans, strict=strict)
        else:
            result = read_file(file, strict=strict, max_bytes=max_bytes, format_name=format_name)
        session = result.session
        if as_format is not None and as_format != result.format:
            conversion = convert_read(result, as_format)
            print_losses(conversion.losses, str(file), result.format, as_format)
            session = registry.get(as_format).read(conversion.result, strict=False).session
    except FormatError as error:
        fail(error.one_line() if error.source else f"{file}: {error.one_line()}")
    warn_problems(result, str(file))
    print_session(session, console=stdout(), title=str(file), expand=expand)


def print_losses(losses: list[Loss], source: str, source_format: str | None, target: str) -> None:
    """The loss report, on stderr: one line per kind of loss, with where it happened."""
    if not losses:
        return
    from agentfolio.formats.convert import summarize

    dropped = sum(not loss.approximated for loss in losses)
    stderr().print(f"[yellow]loss report:[/] {clean(source)} ({clean(source_format)}) → {clean(target)}: "
                   f"{dropped} field(s) dropped, {len(losses) - dropped} approximated", soft_wrap=True)
    for line in summarize(losses):
        stderr().print(f"  {clean(line)}", soft_wrap=True)


def warn_problems(result: ReadResult, source: str) -> None:
    if not result.problems:
        return
    stderr().print(f"[yellow]warning:[/] {clean(source)} breaks its schema in {len(result.problems)} place(s); "
                   "shown anyway (see `agentfolio validate`):", soft_wrap=True)
    for problem in result.problems[:5]:
        stderr().print(f"  {clean(problem)}", soft_wrap=True)
    if len(result.problems) > 5:
        stderr().print(f"  … and {len(result.problems) - 5} more", soft_wrap=True)


def convert(
    file: Path = typer.Argument(..., help="A file in any supported format.", show_default=False),
    to: str = typer.Option(..., "--to", help="Target format (see `agentfolio formats`)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout."),
    strict: bool = typer.Option(False, "--strict", help="Fail if the file breaks its schema or if converting "
                                "would drop or approximate anything."),
    format_name: Optional[str] = typer.Option(None, "--format", help="Skip detection: read as this format."),
    max_bytes: int = MaxBytesOption(),
) -> None:
    """Convert a file to another format, on stdout (or --output); what is lost is reported on stderr."""
    import orjson

    from agentfolio import _json
    from agentfolio.app.documents import convert_read, read_file
    from agentfolio.formats import registry
    from agentfolio.formats.convert import LossError
    from agentfolio.formats.errors import FormatError

    result = None
    try:
        registry.get(to)
        result = read_file(file, strict=strict, max_bytes=max_bytes, format_name=format_name)
        conversion = convert_read(result, to, strict=strict)
    except LossError as error:
        print_losses(error.losses, str(file), result.format if result else None, to)
        fail(f"{file}: --strict: converting to {to} would lose {len(error.losses)} field(s) (listed above)")
    except FormatError as error:
        fail(error.one_line() if error.source else f"{file}: {error.one_line()}")
    warn_problems(result, str(file))
    print_losses(conversion.losses, str(file), result.format, to)
    data = _json.dumps(conversion.result, option=orjson.OPT_INDENT_2) + b"\n"
    if output is None:
        sys.stdout.buffer.write(data)
    else:
        output.write_bytes(data)


def formats(as_json: bool = typer.Option(False, "--json", help="One JSON array for machines.")) -> None:
    """The formats agentfolio reads and writes (the names --format, --to and --as take)."""
    from agentfolio.formats import registry

    if as_json:
        print_json([{"name": fmt.name, "title": fmt.title} for fmt in registry.FORMATS.values()])
        return
    for fmt in registry.FORMATS.values():
        stdout().print(f"{clean(fmt.name):<22} {clean(fmt.title)}", soft_wrap=True)
