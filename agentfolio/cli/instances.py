"""``agentfolio instances``: an agent's runs on the local store — list them, stop one.

``agentfolio instances terminate ID`` sets a running instance ``terminated`` with a
reason; the Prefactor SDKs see it on their next span answer (or their 30-second poll)
and stop the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import typer

from agentfolio.cli.output import AccountOption, Safe, fail, one_line, open_folio, print_json
from agentfolio.cli.output import stdout as _stdout
from agentfolio.errors import AgentfolioError

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.app.registry import Principal

__all__ = ["account_principal", "register", "registry_call"]

instances_app = typer.Typer(name="instances", help="Runs of agents: list them, terminate one.",
                            no_args_is_help=True)

T = TypeVar("T")


def register(app: typer.Typer) -> None:
    app.add_typer(instances_app, name="instances")


def account_principal(folio: Agentfolio, account: str) -> Principal:
    """The principal of an existing account (a command never creates one by reading)."""
    from agentfolio.app.registry import Principal

    found = folio.accounts.get(account)
    if found is None:
        fail(f"no account named {account!r} (create one with: agentfolio token create --account {account})")
    return Principal(found)


@contextmanager
def registry_call(account: str) -> Iterator[tuple[Agentfolio, Principal]]:
    """The application and the account's principal for one command; a refusal is one line
    on stderr and exit 1, and the store is closed whatever happens."""
    folio = open_folio()
    try:
        principal = account_principal(folio, account)
        try:
            yield folio, principal
        except AgentfolioError as error:
            fail(error.message)
    finally:
        folio.close()


def run_registry(account: str, action: Callable[[Agentfolio, Principal], T]) -> T:
    with registry_call(account) as (folio, principal):
        return action(folio, principal)


@instances_app.command("ls")
def list_command(
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's runs (its id)."),
    status: Optional[str] = typer.Option(None, "--status", help="Only runs in this status (active, terminated…)."),
    account: str = AccountOption,
    limit: int = typer.Option(25, "--limit", min=1, max=100, help="Runs to show (newest first)."),
    as_json: bool = typer.Option(False, "--json", help="Print the API's list answer as JSON."),
) -> None:
    """List runs, newest first: id, agent, status, purpose, spans, risk."""
    from agentfolio.app.registry import InstanceList, PageRequest, Sorting

    def listed(folio: Agentfolio, principal: Principal) -> Any:
        return folio.registry.list_instances(principal, InstanceList(
            page=PageRequest(0, limit, Sorting("id", "desc")), agent_id=agent, status=status,
            include_risk_level=True))

    page = run_registry(account, listed)
    rows = [instance.model_dump(mode="json") for instance in page.items]
    if as_json:
        print_json({"status": "success", "summaries": rows, "pagination": page.pagination, "sorting": page.sorting})
        return
    if not rows:
        _stdout().print("no runs" + (" of this agent" if agent else "") + " yet", highlight=False)
        return
    from rich.table import Table

    table = Table(box=None, highlight=False)
    table.add_column("id", no_wrap=True, min_width=32)  # whole ids, even when piped
    for column in ("status", "purpose", "spans", "risk", "started"):
        table.add_column(column, overflow="fold")
    for row in rows:
        status_text = row["status"] + (f" ({one_line(row['termination_reason'], 60)})"
                                       if row.get("termination_reason") else "")
        table.add_row(row["id"], status_text, row["purpose"], str(row["span_counts"]["total"]), _risk_text(row),
                      row["started_at"] or "-")
    _stdout().print(Safe(table))


def _risk_text(row: dict[str, Any]) -> str:
    from agentfolio.present.risk import risk_label

    return risk_label(row.get("risk_level"), row.get("risk_score"))


@instances_app.command("terminate")
def terminate_command(
    instance: str = typer.Argument(..., help="The instance's id.", show_default=False),
    reason: Optional[str] = typer.Option(None, "--reason", help="Why it is stopped (the agent is told)."),
    account: str = AccountOption,
) -> None:
    """Stop a running instance: it becomes terminated, and the agent's SDK stops it."""
    from agentfolio.app.registry import InstanceTerminate

    def stop(folio: Agentfolio, principal: Principal) -> Any:
        return folio.registry.run(principal, InstanceTerminate(agent_instance_id=instance, reason=reason))

    stopped = run_registry(account, stop)
    _stdout().print(f"terminated {stopped.id}: {one_line(stopped.termination_reason or '')}", highlight=False)
