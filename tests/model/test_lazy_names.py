"""The model package gives its records' names on first use (see its docstring)."""

from __future__ import annotations

import subprocess
import sys

import agentfolio.model


def test_every_name_the_package_gives_is_found_where_it_says() -> None:
    assert sorted(agentfolio.model._MODULE_OF) == sorted(agentfolio.model.__all__)
    for name in agentfolio.model.__all__:
        assert getattr(agentfolio.model, name) is not None


def test_importing_the_package_builds_no_record() -> None:
    probe = ("import sys, agentfolio.model, agentfolio.model.analysis; "
             "print('pydantic' in sys.modules); from agentfolio.model import Session; print('pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["False", "True"]
