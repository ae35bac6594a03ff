"""``token create``: bearer tokens for the HTTP service and the viewer."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from agentfolio.cli.output import EXIT_USAGE, AccountOption, clean, fail, open_folio, stderr

__all__ = ["register"]

token_app = typer.Typer(name="token", help="Bearer tokens for the HTTP service.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    account: str = AccountOption,
    label: Optional[str] = typer.Option(None, "--label", help="A note to tell tokens apart."),
) -> None:
    """Create a bearer token for one account (created if needed). It is shown once: only its hash is kept."""
    from agentfolio.errors import AgentfolioError

    with open_folio() as folio:
        try:
            token, _ = folio.accounts.create_token(account, label=label)
        except AgentfolioError as error:
            fail(error.message, EXIT_USAGE)
    sys.stdout.write(token + "\n")
    stderr().print(f"token for account {clean(repr(account))}: keep it, it is not shown again")
