"""How a server logs: Python's logging as text (the default) or, with
``AGENTFOLIO_LOG_FORMAT=json``, one JSON object per line for a log collector.

A light module of its own: each worker of ``serve --workers N`` configures logging from
it before it answers its supervisor's first health check, so it must import quickly.

A JSON line has ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger``,
``message``, ``process``; an error adds ``exception`` (the traceback as one string); an
access line (uvicorn's) adds ``client``, ``method``, ``path``, ``http_version`` and
``status``.  Every value a client sent is a JSON string, so no request can forge a field
or break a line.
"""

from __future__ import annotations

import json
import logging
import logging.config
from datetime import UTC, datetime
from typing import Any

__all__ = ["JsonFormatter", "configure", "logging_config"]

ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
                    .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "process": record.process,
        }
        args = record.args
        if record.name == "uvicorn.access" and isinstance(args, tuple) and len(args) == len(ACCESS_FIELDS):
            line.update(zip(ACCESS_FIELDS, args, strict=True))
            line["message"] = f"{args[1]} {args[2]} {args[4]}"
        else:
            line["message"] = record.getMessage()
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def logging_config(level: str = "info", log_format: str = "text") -> dict[str, Any]:
    """A ``logging.config.dictConfig`` for uvicorn (``log_config=``) and agentfolio alike."""
    level = level.upper()
    if log_format == "json":
        formatters: dict[str, Any] = {"default": {"()": "agentfolio._logs.JsonFormatter"},
                                      "access": {"()": "agentfolio._logs.JsonFormatter"}}
    else:
        formatters = {
            "default": {"()": "uvicorn.logging.DefaultFormatter", "fmt": "%(levelprefix)s %(name)s: %(message)s"},
            "access": {"()": "uvicorn.logging.AccessFormatter",
                       "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'},
        }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": formatters,
        "handlers": {
            "default": {"class": "logging.StreamHandler", "formatter": "default", "stream": "ext://sys.stderr"},
            "access": {"class": "logging.StreamHandler", "formatter": "access", "stream": "ext://sys.stderr"},
        },
        # Other libraries' chatter (alembic, markdown-it) only from warnings up.
        "root": {"handlers": ["default"], "level": max(level, "WARNING", key=logging.getLevelName)},
        "loggers": {
            "agentfolio": {"handlers": [], "level": level, "propagate": True},
            "uvicorn": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.error": {"handlers": [], "level": level, "propagate": True},
            "uvicorn.access": {"handlers": ["access"], "level": level, "propagate": False},
        },
    }


def configure(level: str = "info", log_format: str = "text") -> None:
    logging.config.dictConfig(logging_config(level, log_format))
