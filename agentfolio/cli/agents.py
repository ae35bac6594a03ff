"""``agentfolio agents``: the registry from the command line, on the local store.

``agentfolio agents ls`` lists agents with their instance counts; ``agentfolio agents
risk AGENT`` shows the risk roll-up per agent and per schema version (the same
``RiskRollup`` the API answers with ``include_risk_rollup=true``); ``agentfolio agents
token AGENT`` makes a deployment-scoped bearer token for one agent.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Optional

import orjson
import typer

from agentfolio import _json
from agentfolio.cli.output import AccountOption, Safe, clean, fail, open_folio
from agentfolio.cli.output import stderr as _stderr
from agentfolio.cli.output import stdout as _stdout
from agentfolio.errors import AgentfolioError

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.app.registry import Principal

__all__ = ["register"]

agents_app = typer.Typer(name="agents", help="Agents of the registry: list them, their risk, deployment tokens.",
                         no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(agents_app, name="agents")


SEVERITY_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "info": "dim"}


def _principal(folio: Agentfolio, account: str) -> Principal:
    from agentfolio.app.registry import Principal

    found = folio.accounts.get(account)
    if found is None:
        fail(f"no account named {account!r} (create one with: agentfolio token create --account {account})")
    return Principal(found)


@agents_app.command("ls")
def list_command(
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print the API's list answer as JSON."),
    limit: int = typer.Option(100, "--limit", min=1, max=100, help="Agents to show (newest first)."),
) -> None:
    """List agents: id, name, status, instances."""
    folio = open_folio()
    try:
        from agentfolio.app.registry import AgentGet, AgentList, PageRequest, Sorting

        principal = _principal(folio, account)
        service = folio.registry
        try:
            page = service.list_agents(principal, AgentList(page=PageRequest(0, limit, Sorting("id", "desc"))))
        except AgentfolioError as error:
            fail(error.message)
        agents = [agent.model_dump(mode="json") for agent in page.items]
        if as_json:
            listed = {"status": "success", "summaries": agents, "pagination": page.pagination,
                      "sorting": page.sorting}
            sys.stdout.write(_json.dumps(listed, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        from rich.table import Table

        table = Table(box=None, highlight=False)
        table.add_column("id", no_wrap=True, min_width=32)  # whole ids, even when piped
        for column in ("name", "external id", "status", "instances", "risk"):
            table.add_column(column, overflow="fold")
        table.add_column("updated", no_wrap=True, min_width=27)
        from agentfolio.present.risk import risk_label

        for agent in agents:
            counts = service.get_agent(principal, AgentGet(agent["id"])).instance_counts or {}
            total = counts.get("total", 0)
            report = service.agent_risk(principal, agent["id"])
            table.add_row(agent["id"], clean(agent["name"]), clean(agent["external_identifier"] or ""),
                          agent["status"], str(total), risk_label(report.risk_level, report.risk_score),
                          agent["updated_at"])
        if agents:
            _stdout().print(Safe(table))
        else:
            _stdout().print("no agents yet (create one with POST /api/v1/agent)", highlight=False)
    finally:
        folio.close()


@agents_app.command("risk")
def risk_command(
    agent: str = typer.Argument(..., help="The agent's id or external identifier.", show_default=False),
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print the roll-up as JSON."),
) -> None:
    """Risk roll-up of an agent and of each of its schema versions: actions, data, flags."""
    folio = open_folio()
    try:
        principal = _principal(folio, account)
        try:
            report = folio.registry.agent_risk(principal, agent).model_dump(mode="json")
            profile = folio.registry.risk_profile(principal, report["agent_id"])
        except AgentfolioError as error:
            fail(error.message)
        if as_json:
            sys.stdout.write(_json.dumps(report, option=orjson.OPT_INDENT_2).decode() + "\n")
            return
        from agentfolio.present.risk import scale_legend

        _print_report(report, scale_legend(profile))
    finally:
        folio.close()


def _print_report(report: dict[str, Any], legend: list[str]) -> None:
    from agentfolio.present.risk import display_score, risk_label

    name = clean(report["name"])
    level = risk_label(report["risk_level"], report["risk_score"])
    _stdout().print(f"[bold]{name}[/] {report['agent_id']} — risk {level} under risk profile "
                    f"{clean(report['risk_profile'])}", highlight=False)
    _print_rollup("agent (all schema versions)", report["rollup"])
    for version in report["schema_versions"]:
        label = f"schema version {version['id']}"
        if version["external_identifier"]:
            label += f" ({clean(version['external_identifier'])})"
        if version["current"]:
            label += " [current]"
        _print_rollup(label, version["rollup"])
        from rich.table import Table

        table = Table("span type", "risk", "terms", box=None, highlight=False)
        for score in version["span_types"]:
            terms = ", ".join(f"{t['category']}×{t['action']}={display_score(t['points'])}" for t in score["terms"])
            if score["risk_level"] == "unknown" and not terms:
                terms = "declares no data risk to score"
            table.add_row(clean(score["span_type"]), risk_label(score["risk_level"], score["risk_score"]),
                          clean(terms or "-"))
        _stdout().print(Safe(table))
    _stdout().print("")
    for line in legend:
        _stdout().print(f"[dim]{clean(line)}[/]", highlight=False, soft_wrap=True)


def _print_rollup(label: str, rollup: dict[str, Any]) -> None:
    _stdout().print(f"\n[bold]{clean(label)}[/]", highlight=False)
    actions = rollup.get("action_profile") or {}
    allowed = [name for name, value in actions.items() if value == "allowed"]
    _stdout().print(f"  actions allowed: {', '.join(allowed) or 'none declared'}", highlight=False)
    categories = rollup.get("data_categories") or rollup.get("params_data_categories") or {}
    included = [name for name, value in categories.items() if value == "included"]
    _stdout().print(f"  data included:   {', '.join(included) or 'none declared'}", highlight=False)
    if rollup.get("classification"):
        _stdout().print(f"  classification:  {rollup['classification']}", highlight=False)
    flags = rollup.get("flags") or []
    if not flags:
        _stdout().print("  flags: none", highlight=False)
    for flag in flags:
        style = SEVERITY_STYLE.get(flag.get("severity", ""), "")
        _stdout().print(f"  [{style}]{flag.get('severity')}[/] {clean(flag.get('code', ''))}: "
                     f"{clean(flag.get('explanation') or flag.get('message') or '')}", highlight=False)


@agents_app.command("token")
def token_command(
    agent: str = typer.Argument(..., help="The agent's id.", show_default=False),
    account: str = AccountOption,
    environment: Optional[str] = typer.Option(None, "--environment", help="Environment name (default: default)."),
    label: Optional[str] = typer.Option(None, "--label", help="A note to tell tokens apart."),
) -> None:
    """Create a deployment-scoped token: the SDK then omits agent_id and environment_id."""
    folio = open_folio()
    try:
        principal = _principal(folio, account)
        try:
            made = folio.registry.create_deployment_token(principal, agent, environment=environment, label=label)
        except AgentfolioError as error:
            fail(error.message)
    finally:
        folio.close()
    sys.stdout.write(made.token + "\n")
    _stderr().print(f"deployment token for agent {made.agent_id} in environment {made.environment_id}: "
                 "keep it, it is not shown again", highlight=False)


@agents_app.command("create")
def create_command(
    name: str = typer.Argument(..., help="The agent's name.", show_default=False),
    account: str = AccountOption,
    external_id: Optional[str] = typer.Option(None, "--external-id",
                                              help="Its external identifier (default: the name)."),
    description: Optional[str] = typer.Option(None, "--description", help="What the agent does."),
) -> None:
    """Create an agent (or find it by its external identifier) and a deployment token for it.

    Prints the agent's id, then the token, one per line: what a Prefactor SDK needs."""
    from agentfolio.app.registry import AgentCreate, AgentShow, NotFound, Principal

    folio = open_folio()
    try:
        service = folio.registry
        external = external_id or name
        try:
            principal = Principal(folio.accounts.ensure(account))
            try:
                agent, found = service.show_agent(principal, AgentShow(external_identifier=external)), True
            except NotFound:
                agent, found = service.create_agent(principal, AgentCreate(
                    name=name, external_identifier=external, description=description)), False
            made = service.create_deployment_token(principal, agent.id, label=f"agents create {name}"[:200])
        except AgentfolioError as error:
            fail(error.message)
    finally:
        folio.close()
    sys.stdout.write(f"{agent.id}\n{made.token}\n")
    sys.stdout.flush()
    _stderr().print(("found agent " if found else "created agent ") + clean(f"{name!r} ({agent.id})")
                    + "; the second line is a deployment token for it: keep it, it is not shown again")
