"""``agentfolio alerts`` and ``agentfolio risk-profiles``: the account's alerts (list,
count, acknowledge) and the risk profiles its agents are scored under (list, show,
create, assign), on the local store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from agentfolio import _json
from agentfolio.cli.instances import run_registry
from agentfolio.cli.output import EXIT_USAGE, AccountOption, Safe, clean, fail, one_line, print_json
from agentfolio.cli.output import stdout as _stdout

if TYPE_CHECKING:
    from agentfolio.app import Agentfolio
    from agentfolio.app.registry import Principal

__all__ = ["register"]

alerts_app = typer.Typer(name="alerts", help="Alerts: flagged and schema-breaking spans, critical risk "
                         "combinations, terminated runs. List, count, acknowledge.", no_args_is_help=True)
profiles_app = typer.Typer(name="risk-profiles", help="Risk profiles: list, show, create, assign to an agent.",
                           no_args_is_help=True)

SEVERITY_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow"}


def register(app: typer.Typer) -> None:
    app.add_typer(alerts_app, name="alerts")
    app.add_typer(profiles_app, name="risk-profiles")


# --------------------------------------------------------------------------- alerts


@alerts_app.command("ls")
def alerts_list(
    everything: bool = typer.Option(False, "--all", help="Acknowledged alerts too."),
    kind: Optional[str] = typer.Option(None, "--kind", help="schema_breaking_span, flagged_span, "
                                       "critical_risk_combination or terminated_instance."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Only this agent's (its id)."),
    account: str = AccountOption,
    limit: int = typer.Option(50, "--limit", min=1, max=100, help="Alerts to show (newest first)."),
    as_json: bool = typer.Option(False, "--json", help="Print the API's list answer as JSON."),
) -> None:
    """Open alerts, newest first (--all: acknowledged ones too)."""
    from agentfolio.app.registry import AlertList, PageRequest, Sorting

    page = run_registry(account, lambda folio, principal: folio.registry.run(principal, AlertList(
        page=PageRequest(0, limit, Sorting("id", "desc")), acknowledged=None if everything else False,
        kind=kind, agent_id=agent)))
    rows = [alert.model_dump(mode="json") for alert in page.items]
    if as_json:
        print_json({"status": "success", "summaries": rows, "pagination": page.pagination, "sorting": page.sorting})
        return
    if not rows:
        _stdout().print("no open alerts" if not everything else "no alerts", highlight=False)
        return
    from rich.table import Table

    table = Table(box=None, highlight=False)
    table.add_column("id", no_wrap=True, min_width=32)
    for column in ("severity", "kind", "about", "raised"):
        table.add_column(column, overflow="fold")
    for row in rows:
        about = row["agent_span_id"] or row["agent_instance_id"] or row["agent_schema_version_id"] or row["agent_id"]
        severity = row["severity"] + (" (acknowledged)" if row["acknowledged"] else "")
        table.add_row(row["id"], severity, row["kind"], f"{about}: {one_line(row['message'], 160)}",
                      row["inserted_at"])
    _stdout().print(Safe(table))


@alerts_app.command("count")
def alerts_count(account: str = AccountOption) -> None:
    """How many alerts are open (what the dashboard shows)."""
    from agentfolio.app.registry import AlertCount

    counted = run_registry(account, lambda folio, principal: folio.registry.run(principal, AlertCount()))
    _stdout().print(str(counted.count), highlight=False)


@alerts_app.command("ack")
def alerts_acknowledge(
    alert_ids: Optional[list[str]] = typer.Argument(None, help="The alerts' ids.", show_default=False),
    everything: bool = typer.Option(False, "--all", help="Every open alert (with --kind/--agent: those)."),
    kind: Optional[str] = typer.Option(None, "--kind", help="With --all: only this kind."),
    agent: Optional[str] = typer.Option(None, "--agent", help="With --all: only this agent's."),
    account: str = AccountOption,
) -> None:
    """Acknowledge alerts: they no longer count as open."""
    from agentfolio.app.registry import AlertAcknowledge

    if not alert_ids and not everything:
        fail("name the alerts to acknowledge, or give --all", EXIT_USAGE)
    done = run_registry(account, lambda folio, principal: folio.registry.run(principal, AlertAcknowledge(
        alert_ids=tuple(alert_ids or ()), everything=everything, kind=kind, agent_id=agent)))
    _stdout().print(f"acknowledged {done.acknowledged}; {done.count} open", highlight=False)


# --------------------------------------------------------------------------- risk profiles


@profiles_app.command("ls")
def profiles_list(
    account: str = AccountOption,
    as_json: bool = typer.Option(False, "--json", help="Print the API's list answer as JSON."),
) -> None:
    """The account's risk profiles, and the default agents without one are scored under."""
    from agentfolio.app.registry import PageRequest, RiskProfileGet, RiskProfileList, Sorting

    def both(folio: Agentfolio, principal: Principal) -> tuple[Any, Any]:
        return (folio.registry.run(principal, RiskProfileGet("default")),
                folio.registry.run(principal, RiskProfileList(page=PageRequest(0, 100, Sorting("name", "asc")))))

    default, page = run_registry(account, both)
    rows = [profile.model_dump(mode="json") for profile in page.items]
    if as_json:
        print_json({"status": "success", "summaries": rows, "pagination": page.pagination, "sorting": page.sorting})
        return
    from rich.table import Table

    table = Table("id", "name", "agents", "thresholds (medium/high/critical)", box=None, highlight=False)
    for row in [default.model_dump(mode="json"), *rows]:
        thresholds = row["thresholds"]
        table.add_row(row["id"], clean(row["name"]), str(row["agent_count"]),
                      f"{thresholds['medium']:g} / {thresholds['high']:g} / {thresholds['critical']:g}")
    _stdout().print(Safe(table))


@profiles_app.command("show")
def profiles_show(
    profile: str = typer.Argument(..., help="The profile's id, or default.", show_default=False),
    account: str = AccountOption,
) -> None:
    """A profile as JSON: weights, multipliers, thresholds."""
    from agentfolio.app.registry import RiskProfileGet

    found = run_registry(account, lambda folio, principal: folio.registry.run(principal, RiskProfileGet(profile)))
    print_json(found.model_dump(mode="json"))


@profiles_app.command("create")
def profiles_create(
    name: str = typer.Argument(..., help="The profile's name (unique in the account).", show_default=False),
    template: str = typer.Option("default", "--from", help="Start from: default (the built-in weights) or empty."),
    weights: Optional[list[str]] = typer.Option(None, "--weight", help="CATEGORY=WEIGHT (0-10), repeatable."),
    multipliers: Optional[list[str]] = typer.Option(None, "--multiplier", help="ACTION=MULTIPLIER, repeatable."),
    thresholds: Optional[str] = typer.Option(None, "--thresholds", help="MEDIUM,HIGH,CRITICAL."),
    from_file: Optional[Path] = typer.Option(None, "--file", help="A JSON file with categories/actions/thresholds."),
    description: Optional[str] = typer.Option(None, "--description"),
    account: str = AccountOption,
) -> None:
    """Create a risk profile; prints its id."""
    from agentfolio.app.registry import RiskProfileCreate

    raw: dict[str, Any] = {}
    if from_file is not None:
        try:
            raw = _json.loads(from_file.read_bytes())
        except (OSError, ValueError) as error:
            fail(f"{from_file}: {error}", EXIT_USAGE)
        if not isinstance(raw, dict):
            fail(f"{from_file}: must hold a JSON object", EXIT_USAGE)
    categories = dict(raw.get("categories") or {})
    for item in weights or ():
        key, value = _pair(item, "--weight")
        categories[key] = {"weight": value}
    actions = dict(raw.get("actions") or {})
    for item in multipliers or ():
        key, value = _pair(item, "--multiplier")
        actions[key] = {"multiplier": value}
    bands = raw.get("thresholds")
    if thresholds is not None:
        parts = thresholds.split(",")
        if len(parts) != 3:
            fail("--thresholds takes MEDIUM,HIGH,CRITICAL", EXIT_USAGE)
        try:
            bands = dict(zip(("medium", "high", "critical"), (float(part) for part in parts), strict=True))
        except ValueError:
            fail(f"--thresholds {thresholds!r}: not three numbers", EXIT_USAGE)

    def create(folio: Agentfolio, principal: Principal) -> Any:
        return folio.registry.run(principal, RiskProfileCreate(
            name=name, description=description or raw.get("description"), template=template,
            categories=categories or None, actions=actions or None, thresholds=bands))

    made = run_registry(account, create)
    _stdout().print(made.id, highlight=False)


def _pair(item: str, option: str) -> tuple[str, float]:
    key, _, value = item.partition("=")
    try:
        return key.strip(), float(value)
    except ValueError:
        fail(f"{option} {item!r}: expected NAME=NUMBER", EXIT_USAGE)


@profiles_app.command("assign")
def profiles_assign(
    agent: str = typer.Argument(..., help="The agent's id.", show_default=False),
    profile: str = typer.Argument(..., help="The profile's id, or default.", show_default=False),
    account: str = AccountOption,
) -> None:
    """Score an agent under a profile (default: the account's default)."""
    from agentfolio.app.registry import AgentUpdate

    updated = run_registry(account, lambda folio, principal: folio.registry.run(principal, AgentUpdate(
        agent_id=agent, risk_profile_id=None if profile == "default" else profile)))
    _stdout().print(f"agent {updated.id} is scored under risk profile {updated.risk_profile_id or 'default'}",
                    highlight=False)
