"""``token create|ls|revoke``: bearer tokens for the HTTP service and the viewer."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from agentfolio.cli.output import EXIT_USAGE, AccountOption, clean, fail, open_folio, print_json, stderr, stdout

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


@token_app.command("ls")
def token_ls(
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the account's tokens, account and deployment tokens, revoked ones too (never the tokens themselves)."""
    from agentfolio.errors import AgentfolioError

    with open_folio() as folio:
        try:
            found = folio.accounts.tokens(folio.accounts.require(account))
        except AgentfolioError as error:
            fail(error.message, EXIT_USAGE)
    if as_json:
        print_json([token.to_json() for token in found])
        return
    from rich.table import Table

    table = Table("id", "type", "starts with", "label", "created", "revoked", "agent")
    for token in found:
        fields = token.to_json()
        table.add_row(*(clean(value or "") for value in (
            fields["id"], fields["type"], fields["prefix"] + "…", fields["label"], fields["created_at"],
            fields["revoked_at"], fields["agent_id"])))
    stdout().print(table)


@token_app.command("revoke")
def token_revoke(
    token_id: str = typer.Argument(..., help="The token's id from 'agentfolio token ls' (afk-<n> or afd-<n>)."),
    account: str = AccountOption,
) -> None:
    """Revoke a token: every request with it is refused from now on, and viewer sign-ins with it end."""
    from agentfolio.errors import AgentfolioError

    with open_folio() as folio:
        try:
            revoked = folio.accounts.revoke_token(folio.accounts.require(account), token_id)
        except AgentfolioError as error:
            fail(error.message, EXIT_USAGE)
    stderr().print(f"token {clean(revoked.id)} of account {clean(repr(account))} is revoked")
