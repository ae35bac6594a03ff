"""JSON logs: one object per line, the fields a collector indexes, nothing a client sent
able to forge a field or break the line."""

from __future__ import annotations

import io
import json
import logging
import logging.config

from agentfolio._logs import logging_config


def lines_of(log_format: str, emit) -> list[str]:  # type: ignore[no-untyped-def]
    config = logging_config("info", log_format)
    stream = io.StringIO()
    # What other code in this process did to logging's global state (a blanket
    # logging.disable, loggers disabled by another configuration) is not under test here.
    disabled_below, logging.root.manager.disable = logging.root.manager.disable, logging.NOTSET
    emitters = [logging.getLogger(name) for name in ("agentfolio.server", "agentfolio.api", "uvicorn.access")]
    were_disabled = [logger.disabled for logger in emitters]
    for logger in emitters:
        logger.disabled = False
    logging.config.dictConfig(config)
    try:
        for name in ("", "uvicorn.access"):
            for handler in logging.getLogger(name).handlers:
                handler.setStream(stream)  # type: ignore[attr-defined]
        emit()
    finally:
        logging.config.dictConfig({"version": 1, "disable_existing_loggers": False})
        for name in ("", "uvicorn.access"):
            logging.getLogger(name).handlers.clear()
        logging.root.manager.disable = disabled_below
        for logger, was_disabled in zip(emitters, were_disabled, strict=True):
            logger.disabled = was_disabled
    return stream.getvalue().splitlines()


def test_each_record_is_one_json_line() -> None:
    def emit() -> None:
        logging.getLogger("agentfolio.server").info("swept %d blob(s)\n{\"level\": \"forged\"}", 3)
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("agentfolio.api").exception("a request failed")
        logging.getLogger("alembic.runtime.migration").info("chatter below warnings is left out")

    lines = lines_of("json", emit)
    assert len(lines) == 2, lines
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "info" and first["logger"] == "agentfolio.server"
    assert first["message"] == 'swept 3 blob(s)\n{"level": "forged"}'
    assert first["time"].endswith("Z") and isinstance(first["process"], int)
    assert second["level"] == "error" and "ValueError: boom" in second["exception"]


def test_an_access_line_has_its_request_fields() -> None:
    def emit() -> None:
        logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET",
                                                 '/api/v1/sessions?q="x"\nforged', "1.1", 404)

    (line,) = lines_of("json", emit)
    record = json.loads(line)
    assert (record["client"], record["method"], record["path"], record["http_version"], record["status"]) == \
        ("127.0.0.1:5000", "GET", '/api/v1/sessions?q="x"\nforged', "1.1", 404)


def test_text_stays_the_default() -> None:
    def emit() -> None:
        logging.getLogger("agentfolio.server").warning("plain")

    (line,) = lines_of("text", emit)
    assert "agentfolio.server: plain" in line and not line.startswith("{")
