"""The ``agentfolio`` command: one module per command group, one convention for output and
errors (:mod:`agentfolio.cli.output`).

Start-up matters for a command line (a pre-commit hook validates one file per process):
command modules import the store, the server and the formats' heavier parts inside the
commands that need them, never at module level; and the collector leaves what a command
loads alone until the command has started (:mod:`agentfolio.cli.startup`).
"""

from __future__ import annotations

import sys

import typer

from agentfolio.cli import (
    agents,
    body,
    database,
    documents,
    governance,
    instances,
    serve,
    sessions,
    startup,
    tokens,
    traces,
)

__all__ = ["app", "main"]

app = typer.Typer(
    name="agentfolio",
    help="Validate, convert, store and show the records AI agents leave behind.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for group in (documents, sessions, tokens, agents, instances, governance, traces, body, serve, database):
    group.register(app)


def main() -> None:
    startup.begin()
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    finally:
        startup.over(freeze=False)
