"""Span operations of a registry transaction."""

from __future__ import annotations

from typing import Any, Mapping

import sqlalchemy as sa

from agentfolio import _json
from agentfolio.registry import ids
from agentfolio.registry.listing import list_body, page_info, parse_page_request
from agentfolio.registry.risk import DataRisk, RiskProfile, score_span_type
from agentfolio.registry.templates import summaries_budget
from agentfolio.registry.spans import (
    CompiledSchemaVersion,
    SpanProblem,
    SpanValidation,
    check_create,
    check_finish,
    validate_without_version,
)
from agentfolio.store.registry.operations import SPAN_SORT
from agentfolio.store.registry.rows import _eq
from agentfolio.store.registry.values import (
    MAX_PARENT_CHARS,
    Outcome,
    dumps,
    _flag,
    fmt,
    loads,
    not_found,
    now_us,
    _object,
    _optional_id,
    _problem,
    _text,
    _when,
)
from agentfolio.store.registry_tables import (
    registry_spans as t_spans,
)


class _SpanOps:
    """Span operations (a mixin of the transaction class)."""

    # -- spans ----------------------------------------------------------------------------

    def _compiled(self, version_id: str | None) -> CompiledSchemaVersion | None:
        return self.registry.versions.get(version_id) if version_id else None

    def _parent_found(self, parent: str | None, instance_id: str) -> bool | None:
        if parent is None:
            return None
        pending = self.pending_spans.get(parent)
        if pending is not None:
            return pending["instance_id"] == instance_id
        if not ids.is_id(parent):
            return False
        found = self.span_instances.get(parent)
        if found is None:
            found = self.conn.execute(sa.select(t_spans.c.instance_id).where(
                t_spans.c.id == parent, t_spans.c.account_pk == self.pk)).scalar()
            if found is not None:
                self.span_instances[parent] = found
        return found == instance_id

    def _validate_span(self, compiled: CompiledSchemaVersion | None, schema_name: str, payload: Any,
                       result: Any, status: str, parent_found: bool | None, sensitive: bool) -> SpanValidation:
        validation = (compiled.validate(schema_name, payload, result, status=status) if compiled is not None
                      else validate_without_version())
        if parent_found is False or sensitive:
            problems = list(validation.problems)
            notes = [validation.note] if validation.note else []
            state = validation.status
            if parent_found is False:
                message = "parent_span_id names no span of this instance"
                problems.append(SpanProblem("parent_span_id", "", message))  # type: ignore[arg-type]
                notes.append(message)
                state = "invalid"
            if sensitive:
                notes.append("payload is sensitive-encoded: the schema saw the {$sensitive, value} wrappers")
            validation = SpanValidation(state, tuple(problems), "; ".join(notes) or None)  # type: ignore[arg-type]
        return validation

    def span_json(self, row: Mapping[str, Any], *, summaries: bool = False, risk: RiskProfile | None = None,
                  decoded: tuple[Any, Any, Any] | None = None) -> dict[str, Any]:
        """A span's ``details``; ``decoded``: (payload, result payload, validation) when the
        caller already has them as objects."""
        compiled = self._compiled(row["schema_version_id"])
        if decoded is not None:
            payload, result, validation = decoded
        else:
            payload = loads(row["payload"])
            result = loads(row["result_payload"])
            validation = loads(row["validation"]) if row["validation"] is not None else None
        if validation is None:
            validation = {"status": row["validation_status"], "problems": [], "note": None}
        body = {
            "type": "agent_span", "id": row["id"], "account_id": self.info.id, "agent_id": row["agent_id"],
            "agent_instance_id": row["instance_id"], "agent_schema_version_id": row["schema_version_id"],
            "parent_span_id": row["parent_span_id"], "schema_name": row["schema_name"],
            "schema_title": compiled.title(row["schema_name"]) if compiled else row["schema_name"],
            "status": row["status"], "payload": payload, "result_payload": result,
            "summary": compiled.summary(row["schema_name"], payload, result) if summaries and compiled else None,
            "started_at": fmt(row["started_at"]), "finished_at": fmt(row["finished_at"]),
            "inserted_at": fmt(row["inserted_at"]), "updated_at": fmt(row["updated_at"]),
            "validation": validation, "sensitive_encoding": bool(row["sensitive_encoding"]),
            "session_id": row["session_id"],
        }
        if risk is not None:
            span_type = compiled.span_types.get(row["schema_name"]) if compiled else None
            score = score_span_type(row["schema_name"], span_type.data_risk if span_type else DataRisk(), risk)
            body["risk_score"] = round(score.score, 4)
            body["risk_level"] = score.level
        return body

    def _with_control(self, body: dict[str, Any], instance: Any) -> dict[str, Any]:
        if instance.status == "terminated":
            body["control"] = {"terminate": True, "reason": instance.termination_reason or "terminated"}
        return body

    def spans_create(self, f: Mapping[str, Any]) -> Outcome:
        instance = self._instance(f.get("agent_instance_id"), cached=True)
        schema_name = _text(f, "schema_name", required=True)
        status = check_create(f.get("status", "active"), result_payload=f.get("result_payload"),
                              finished_at=f.get("finished_at"), field_path="status")
        payload = f.get("payload")
        if payload is None:
            payload = {}
        elif not isinstance(payload, dict):
            raise _problem("payload", "invalid_value", "must be a JSON object")
        result = _object(f, "result_payload")
        span_id = _optional_id(f, "id")
        if span_id is not None and (span_id in self.pending_spans or self.conn.execute(
                sa.select(t_spans.c.id).where(t_spans.c.id == span_id)).first()):
            raise _problem("id", "invalid_value", f"{span_id!r} is already used")
        span_id = span_id or self.new_id()
        parent = f.get("parent_span_id")
        if parent is not None:  # kept as given (flagged if it names no span), never refused
            parent = (parent if isinstance(parent, str) else _json.dumps(parent).decode())
            parent = parent.replace("\x00", "\ufffd")[:MAX_PARENT_CHARS]
        sensitive = _flag(f.get("sensitive_encoding"), "sensitive_encoding")
        session_id = _text(f, "session_id", limit=200) or instance.session_id
        stamp = now_us()
        started = _when(f, "started_at")
        finished = _when(f, "finished_at")
        if status != "pending":  # a span that has not started keeps what the client said (usually nothing)
            started = started or stamp
        if status in ("complete", "failed", "cancelled"):
            finished = finished or stamp
        parent_found = self._parent_found(parent, instance.id)
        validation = self._validate_span(self._compiled(instance.schema_version_id), schema_name, payload, result,
                                         status, parent_found, sensitive)
        row = {"id": span_id, "account_pk": self.pk, "agent_id": instance.agent_id, "instance_id": instance.id,
               "schema_version_id": instance.schema_version_id, "parent_span_id": parent,
               "parent_found": parent_found, "schema_name": schema_name, "status": status,
               "payload": dumps(payload), "result_payload": None if result is None else dumps(result),
               "sensitive_encoding": sensitive, "validation_status": validation.status,
               "validation": None if validation.status == "valid" else dumps(validation.to_json()),
               "session_id": session_id, "started_at": started, "finished_at": finished,
               "inserted_at": stamp, "updated_at": stamp}
        self.pending_spans[span_id] = row
        details = self.span_json(row, decoded=(payload, result, validation.to_json()))
        body = self._with_control({"status": "success", "details": details}, instance)
        return Outcome(200, body)

    def _span(self, span_id: object) -> dict[str, Any]:
        pending = self.pending_spans.get(span_id)  # type: ignore[arg-type]
        if pending is not None:
            return pending
        if not ids.is_id(span_id):
            raise not_found("agent span", span_id)
        row = self.conn.execute(sa.select(t_spans).where(t_spans.c.id == span_id,
                                                         t_spans.c.account_pk == self.pk)).first()
        if row is None or (self.principal.scope == "deployment" and row.agent_id != self.principal.agent_id):
            raise not_found("agent span", span_id)
        return dict(row._mapping)

    def spans_finish(self, f: Mapping[str, Any]) -> Outcome:
        row = self._span(f.get("agent_span_id"))
        status = check_finish(row["status"], f.get("status"))
        result = _object(f, "result_payload")
        when = _when(f, "timestamp") or now_us()
        instance = self._instance(row["instance_id"], cached=True)
        payload = loads(row["payload"])
        validation = self._validate_span(self._compiled(row["schema_version_id"]), row["schema_name"], payload,
                                         result, status, row["parent_found"], bool(row["sensitive_encoding"]))
        changes = {"status": status, "result_payload": None if result is None else dumps(result),
                   "finished_at": when, "started_at": row["started_at"] or when, "updated_at": now_us(),
                   "validation_status": validation.status,
                   "validation": None if validation.status == "valid" else dumps(validation.to_json())}
        if row["id"] in self.pending_spans:
            self.pending_spans[row["id"]].update(changes)
        else:
            self.conn.execute(sa.update(t_spans).where(t_spans.c.id == row["id"]).values(**changes))
        row = {**row, **changes}
        return Outcome(200, self._with_control({"status": "success", "details": self.span_json(row)}, instance))

    def spans_get(self, f: Mapping[str, Any]) -> Outcome:
        row = self._span(f.get("agent_span_id"))
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        return Outcome(200, {"status": "success", "details": self.span_json(
            row, summaries=_flag(f.get("include_summaries"), "include_summaries"), risk=risk)})

    def spans_list(self, f: Mapping[str, Any]) -> Outcome:
        page = parse_page_request(f, list(SPAN_SORT))
        where = [t_spans.c.account_pk == self.pk]
        if self.principal.scope == "deployment":
            where.append(t_spans.c.agent_id == self.principal.agent_id)
        for key, column in (("agent_id", t_spans.c.agent_id), ("agent_instance_id", t_spans.c.instance_id),
                            ("status", t_spans.c.status), ("schema_name", t_spans.c.schema_name),
                            ("validation_status", t_spans.c.validation_status),
                            ("parent_span_id", t_spans.c.parent_span_id), ("session_id", t_spans.c.session_id)):
            if isinstance(f.get(key), str):
                where.append(_eq(column, f[key]))
        rows, total = self._page(t_spans, where, page, SPAN_SORT)
        summaries = _flag(f.get("include_summaries"), "include_summaries")
        risk = self._profile() if _flag(f.get("include_risk_level"), "include_risk_level") else None
        with summaries_budget():
            listed = [self.span_json(row._mapping, summaries=summaries, risk=risk) for row in rows]
        return Outcome(200, list_body(listed,
                                      page_info(total, page.offset, page.page_size, len(rows)), page.sorting))
