"""What every command shares: the two consoles, one way to fail, the exit codes, and the
rule that stored text is printed as text.

Exit codes: 0 done (or valid), 1 invalid input or a failed item, 2 usage (bad arguments,
unreadable files, settings). Errors are one line on stderr, never a traceback.

Stored strings come from whoever wrote the record. Printed through Rich they could be
markup (``[/oops]`` raises, ``[link=...]`` hides a URL) and printed at all they could be
terminal escape sequences (clear the screen, set the window title, reorder text with
bidi controls). :func:`clean` neutralises both; :class:`Safe` does it for any renderable
(tables, trees) after Rich has laid it out.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from typing import TYPE_CHECKING, Any, NoReturn

import orjson
import typer

from agentfolio import _json
from agentfolio.cli import startup

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult

    from agentfolio.app import Agentfolio

__all__ = [
    "EXIT_INVALID",
    "EXIT_USAGE",
    "AccountOption",
    "MaxBytesOption",
    "Safe",
    "clean",
    "fail",
    "one_line",
    "open_folio",
    "print_json",
    "say",
    "stderr",
    "stdout",
]

EXIT_INVALID = 1
EXIT_USAGE = 2
DEFAULT_ACCOUNT = "default"

# C0 and C1 controls (ESC, BEL, CSI...), DEL, and the bidi/zero-width controls that
# reorder or hide text on screen. Tab and newline are kept where the caller allows them.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_CONTROL_AND_NEWLINES = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}" if ord(match.group()) < 0x100 else f"\\u{ord(match.group()):04x}"


def clean(text: object, *, markup: bool = True, newlines: bool = True) -> str:
    """``text`` safe to print: control characters shown as ``\\xNN`` and, for a string
    that goes through Rich markup, square brackets escaped."""
    value = (_CONTROL if newlines else _CONTROL_AND_NEWLINES).sub(_visible, str(text))
    if markup:
        from rich.markup import escape

        value = escape(value)
    return value


def one_line(text: object, limit: int = 200) -> str:
    """A stored value for a table cell: one line, no controls, at most ``limit`` characters."""
    value = clean(text, markup=False, newlines=False)
    return value if len(value) <= limit else value[: limit - 1] + "…"


class Safe:
    """Wraps a renderable so that whatever stored text it lays out is printed without its
    control characters (Rich keeps them in segments as given)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        for segment in console.render(self.renderable, options):
            if segment.control or not segment.text:
                yield segment
            else:
                yield Segment(_CONTROL.sub(_visible, segment.text), segment.style)


# Consoles are made on first use: importing Rich's console costs start-up time that a
# command which prints JSON never needs.
@cache
def stdout() -> Console:
    from rich.console import Console

    return Console(soft_wrap=False, highlight=False)


@cache
def stderr() -> Console:
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, highlight=False)


def say(text: str, *, color: str | None = None, label: str | None = None, dim: bool = False,
         err: bool = False) -> None:
    """One plain line (``label`` in ``color`` before ``text``), printed without loading Rich:
    a command whose output needs no layout (``validate``'s report) starts faster.  ``text``
    is printed as given: pass stored strings through :func:`clean` with ``markup=False``."""
    if label is not None:
        text = typer.style(label, fg=color, dim=dim) + " " + text if text else typer.style(label, fg=color, dim=dim)
    elif dim:
        text = typer.style(text, dim=True)
    typer.echo(text, err=err)


def fail(message: str, code: int = EXIT_INVALID) -> NoReturn:
    """One line on stderr and exit with ``code``. ``message`` is plain text (it may hold
    stored or user-given strings; it is never read as markup)."""
    stderr().print("[red]error:[/] " + clean(message), soft_wrap=True)
    raise typer.Exit(code)


def print_json(value: Any) -> None:
    sys.stdout.buffer.write(_json.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def open_folio() -> Agentfolio:
    """The application over the store the settings name (``AGENTFOLIO_DATABASE_URL``, else
    the SQLite file in ``AGENTFOLIO_DATA_DIR``); exits 2 when it cannot be opened."""
    from agentfolio.app import Agentfolio
    from agentfolio.settings import Settings, SettingsError

    try:
        folio = Agentfolio.open(Settings.from_env())
    except SettingsError as error:
        fail(str(error), EXIT_USAGE)
    except Exception as error:  # a database that cannot be reached or opened
        first = str(error).splitlines()[0] if str(error) else ""
        fail(f"cannot open the store: {type(error).__name__}: {first}")
    startup.over()
    return folio


AccountOption = typer.Option(DEFAULT_ACCOUNT, "--account", help="The account to work as.")


def MaxBytesOption() -> Any:  # noqa: N802 - reads as the option it makes
    from agentfolio.formats.jsonio import DEFAULT_MAX_BYTES

    return typer.Option(DEFAULT_MAX_BYTES, "--max-bytes", help="Refuse files larger than this many bytes.")
