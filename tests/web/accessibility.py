"""axe-core, vendored (``tests/web/vendor/axe.min.js``, MPL-2.0, from the npm package
``axe-core``), run inside a page the browser tests have opened.

The script is handed to the page through the DevTools protocol, not as a ``<script>``:
the pages' Content-Security-Policy refuses inline and foreign scripts, and the audit must
see the page exactly as it is served.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

AXE = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
# What a page may not have: the impacts axe calls serious or critical.
BLOCKING = ("serious", "critical")
RUN = """(blocking) => axe.run(document, {resultTypes: ["violations"]}).then(result => result.violations
  .filter(v => blocking.includes(v.impact))
  .map(v => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ") + " :: " + (n.failureSummary || ""))})))"""


@cache
def axe_source() -> str:
    return AXE.read_text(encoding="utf-8") + "\n;undefined"


def serious_violations(page: Any) -> list[dict[str, Any]]:
    """The serious and critical violations axe finds on the page as it stands now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    found: list[dict[str, Any]] = page.evaluate(RUN, list(BLOCKING))
    return found


def describe(violations: list[dict[str, Any]]) -> str:
    lines = []
    for violation in violations:
        lines.append(f"{violation['impact']} {violation['id']}: {violation['help']}")
        lines.extend(f"    {node}" for node in violation["nodes"])
    return "\n".join(lines)


def assert_accessible(page: Any) -> None:
    violations = serious_violations(page)
    assert violations == [], f"axe-core found on {page.url}:\n{describe(violations)}"
