"""``agentfolio body ...``: validate bodies, compare schemas, list parts.

Exit codes follow the project's convention: 0 valid/compatible, 1 invalid/not
compatible, 2 usage (bad arguments, unreadable files, schemas that are not schemas, or
schemas and globs over their size limits), 3 undecided: ``compat`` could not decide
within ``--timeout`` seconds (or its memory) and was stopped.
Errors are one line on stderr, never a traceback. A schema argument may also name a
bundled example: ``example:chat``, ``example:researcher``, ...
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import orjson
import typer

from agentfolio import _json
from agentfolio.cli.output import clean, fail
from agentfolio.settings import DEFAULT_COMPAT_TIMEOUT

if TYPE_CHECKING:
    from agentfolio.body.body import MessageBody
    from agentfolio.body.schema import MessageBodySchema

body_app = typer.Typer(
    name="body",
    help="Message bodies: validate against a schema, check schema compatibility, list parts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
MaxBytes = typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", help="Refuse files larger than this many bytes.")


def register(app: typer.Typer) -> None:
    app.add_typer(body_app, name="body")


def _fail(message: str, code: int) -> None:
    fail(message, code)


def _read_json(path: Path, max_bytes: int) -> object:
    from agentfolio.body.errors import BodyError

    try:
        size = path.stat().st_size
        if size > max_bytes:
            _fail(f"{path}: {size} bytes is more than --max-bytes {max_bytes}", 2)
        data = path.read_bytes()
    except OSError as exc:
        _fail(f"cannot read {path}: {exc.strerror or exc}", 2)
    try:
        return _json.loads(data)
    except orjson.JSONDecodeError as exc:
        raise BodyError(f"{path}: not JSON: {exc}") from None


def _schema(arg: str, max_bytes: int) -> MessageBodySchema:
    """Schemas are parameters, so anything wrong with one is a usage error (2)."""
    from agentfolio.body.errors import BodyError
    from agentfolio.body.examples import load_schema
    from agentfolio.body.schema import MessageBodySchema

    try:
        if arg.startswith("example:"):
            return load_schema(arg.removeprefix("example:"))
        return MessageBodySchema.parse(_read_json(Path(arg), max_bytes))
    except KeyError as exc:
        _fail(str(exc.args[0]), 2)
    except BodyError as exc:
        _fail(f"{arg}: not a valid schema: {exc}", 2)
    raise AssertionError("unreachable")


def _body(path: Path, max_bytes: int) -> MessageBody:
    """A body is the data under test, so a malformed one is 'invalid' (1)."""
    from agentfolio.body.body import MessageBody
    from agentfolio.body.errors import BodyError

    try:
        return MessageBody.parse(_read_json(path, max_bytes))
    except BodyError as exc:
        _fail(f"{path}: invalid body: {exc}", 1)
    raise AssertionError("unreachable")


@body_app.command()
def validate(
    body: Path = typer.Argument(..., help="Body JSON file: {\"parts\": [...]}.", show_default=False),
    schema: str = typer.Option(..., "--schema", "-s", help="Schema JSON file, or example:NAME.",
                               show_default=False),
    max_bytes: int = MaxBytes,
) -> None:
    """Check a body against a schema: exit 0 if valid, 1 if not (each problem listed)."""
    s = _schema(schema, max_bytes)
    b = _body(body, max_bytes)
    report = s.validate_body(b)
    if report.ok:
        typer.echo(f"{body}: {report}")
        return
    typer.echo(f"{body}: {report}")
    raise typer.Exit(1)


@body_app.command()
def compat(
    output_schema: Optional[str] = typer.Argument(None, help="Output schema (producer): file or example:NAME."),
    input_schema: Optional[str] = typer.Argument(None, help="Input schema (consumer): file or example:NAME."),
    max_bytes: int = MaxBytes,
    timeout: float = typer.Option(DEFAULT_COMPAT_TIMEOUT, "--timeout", min=0.1,
                                  help="Stop the check after this many seconds (exit 3: too complex)."),
) -> None:
    """Is every body valid under OUTPUT also valid under INPUT? Exit 0 yes, 1 no (with a
    counter-example), 3 too complex to decide in time. Without arguments, print the matrix
    of the bundled example agents."""
    from agentfolio.body.compat import check_compatibility
    from agentfolio.errors import AgentfolioError

    if output_schema is None and input_schema is None:
        _matrix()
        return
    if output_schema is None or input_schema is None:
        _fail("give both OUTPUT_SCHEMA and INPUT_SCHEMA, or neither for the example matrix", 2)
    out = _schema(output_schema, max_bytes)  # type: ignore[arg-type]
    inp = _schema(input_schema, max_bytes)  # type: ignore[arg-type]
    try:
        result = check_compatibility(out, inp, timeout=timeout)
    except AgentfolioError as exc:
        _fail(str(exc), 3 if exc.code == "too_complex" else 2)
    typer.echo(str(result))
    if not result:
        raise typer.Exit(1)


def _matrix() -> None:
    from agentfolio.body.compat import is_compatible
    from agentfolio.body.examples import EXAMPLES, load_schema

    schemas = {name: load_schema(name) for name in EXAMPLES}
    width = max(len(n) for n in EXAMPLES)
    typer.echo("Can the output of ROW be fed to an agent whose input schema is COLUMN?")
    typer.echo(" " * (width + 2) + "  ".join(n.center(width) for n in EXAMPLES))
    reasons = []
    for row in EXAMPLES:
        cells = []
        for col in EXAMPLES:
            result = is_compatible(schemas[row], schemas[col])
            cells.append(("yes" if result else "no").center(width))
            if not result:
                reasons.append(f"{row} -> {col}: {result.reason}\n    e.g. "
                               + result.counterexample.to_json().decode())  # type: ignore[union-attr]
        typer.echo(f"{row:>{width}}  " + "  ".join(cells))
    typer.echo("")
    for line in reasons:
        typer.echo(line)


@body_app.command("ls")
def ls(
    body: Path = typer.Argument(..., help="Body JSON file.", show_default=False),
    pattern: Optional[str] = typer.Argument(None, help="Name glob, e.g. '/sources/*'; default: every part."),
    max_bytes: int = MaxBytes,
) -> None:
    """List a body's parts (index, name, content type, size or URL), optionally only the
    named parts matching a glob."""
    from agentfolio.body.errors import BodyError
    from agentfolio.body.globs import name_glob

    if pattern is not None:
        try:
            name_glob(pattern)
        except BodyError as exc:
            _fail(str(exc), 2)
    b = _body(body, max_bytes)
    selected = b.list(pattern) if pattern is not None else list(b.parts)
    index = {id(p): i for i, p in enumerate(b.parts)}
    for part in selected:
        name = part.name if part.name is not None else "(main)"
        if part.content_url is not None:
            where = part.content_url if len(part.content_url) <= 60 else part.content_url[:57] + "..."
        else:
            where = f"{len(part.data())} bytes"
        typer.echo(clean(f"{index[id(part)]:>4}  {name}  {part.content_type}  {where}", markup=False))


if __name__ == "__main__":
    body_app(prog_name="agentfolio body")
