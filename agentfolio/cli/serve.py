"""``serve``: the HTTP API and the viewer (``--demo``: a throw-away store with samples)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import typer

from agentfolio.cli import startup
from agentfolio.cli.output import EXIT_USAGE, fail, stdout

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)


def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", help="Port to listen on."),
    demo: bool = typer.Option(False, "--demo", help="A throw-away store with a demo account and sample sessions."),
    workers: int = typer.Option(1, "--workers", min=1, max=64,
                                help="Server processes on this port (each a core; they share the store)."),
) -> None:
    """Run the viewer at / and the HTTP API at /api/v1 (OpenAPI at /docs and /openapi.json;
    /healthz, /readyz and /metrics for operations)."""
    import uvicorn

    from agentfolio._logs import logging_config
    from agentfolio.app import Agentfolio
    from agentfolio.app.demo import load_demo
    from agentfolio.server import create_server, memory
    from agentfolio.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        fail(str(error), EXIT_USAGE)
    if demo and workers > 1:
        fail("--demo runs one process (its store is thrown away with it); leave out --workers", EXIT_USAGE)
    log_level = os.environ.get("AGENTFOLIO_LOG_LEVEL", "info").lower()
    log_config = logging_config(log_level, settings.log_format)
    temporary = None
    if demo:
        temporary = tempfile.TemporaryDirectory(prefix="agentfolio-demo-")
        settings = settings.with_(data_dir=Path(temporary.name), database_url=None, blob_url=None)
    try:
        folio = Agentfolio.open(settings)
    except Exception as error:  # a database that cannot be reached or opened
        fail(f"cannot open the store: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    account = None
    try:
        if demo:
            token, account = folio.accounts.create_token("demo", label="demo")
            loaded = load_demo(folio, account)
            out = stdout()
            out.print(f"agentfolio demo: {loaded} sample session(s) in a throw-away store")
            out.print(f"  viewer: {base}/")
            out.print(f"  API:   {base}/api/v1/sessions")
            out.print(f"  docs:  {base}/docs")
            out.print(f"  token: {token}")
            out.print(f'  try:   curl -H "Authorization: Bearer {token}" {base}/api/v1/sessions', soft_wrap=True)
            # What a Prefactor SDK needs, as the two lines of its quick start's HttpClientConfig(...)
            # they replace; with an account token a run finds (or makes) its agent by name.
            out.print("  Prefactor SDK: paste these two lines into HttpClientConfig(...):", soft_wrap=True)
            out.print(f'    api_url="{base}",', soft_wrap=True)
            out.print(f'    api_token="{token}",', soft_wrap=True)
        else:
            stdout().print(f"agentfolio viewer on {base}/ (sign in with a token), API on {base}/api/v1 "
                           f"(docs at {base}/docs); tokens: agentfolio token create --account NAME")
        sys.stdout.flush()
        # Collection resumes (see cli.startup); a serving process freezes its own start-up below.
        startup.over(freeze=False)
        if workers > 1:
            folio.close()  # the store was opened (and migrated) once here; each worker opens its own
            _serve_workers(host, port, workers, log_level, log_config)
            return
        server = create_server(settings, folio=folio, viewer_account=account)
        memory.freeze_start_up()  # this process serves: its start-up objects live as long as it does
        # A request still running must not hold the server past a few seconds after SIGTERM.
        uvicorn.run(server, host=host, port=port, log_level=log_level, log_config=log_config,
                    timeout_graceful_shutdown=10)
    finally:
        folio.close()
        if temporary is not None:
            temporary.cleanup()


def _serve_workers(host: str, port: int, workers: int, log_level: str, log_config: dict[str, object]) -> None:
    """``workers`` processes on one socket, each serving the environment's settings. Their
    metrics are added up through files in PROMETHEUS_MULTIPROC_DIR (a fresh folder unless set)."""
    import uvicorn

    from agentfolio.server.metrics import MULTIPROCESS_ENV

    folder = None
    if not os.environ.get(MULTIPROCESS_ENV):
        folder = tempfile.TemporaryDirectory(prefix="agentfolio-metrics-")
        os.environ[MULTIPROCESS_ENV] = folder.name
    try:
        uvicorn.run("agentfolio.server:app_from_env", factory=True, host=host, port=port, workers=workers,
                    log_level=log_level, log_config=log_config, timeout_graceful_shutdown=10,
                    # A worker answers its first health check once it has imported itself: slow on a busy machine.
                    timeout_worker_healthcheck=60)
    finally:
        if folder is not None:
            folder.cleanup()
