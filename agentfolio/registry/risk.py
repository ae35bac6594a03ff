"""Data risk: the declarations span types carry, risk profiles that score them, roll-ups.

A span type declares a :class:`DataRisk` (Prefactor's agent schema versions): an *action profile* (which actions
it may perform: each ``unknown`` / ``allowed`` / ``disallowed``) and the *data
categories* present in its params and in its result (each ``unknown`` / ``included`` /
``excluded``, plus a ``classification`` level).

A :class:`RiskProfile` (one per account, or assigned per agent) gives each data category
a weight 0-10, each action a multiplier, and Medium/High/Critical thresholds.  Scoring
follows the hosted model:

* a span type scores ``Σ weight(c) × multiplier(a)`` over every *included* category
  ``c`` (in params or result) and every *allowed* action ``a`` that the profile keeps in
  scope;
* an instance scores the sum over its spans, i.e. ``Σ score(type) × count(type)``;
* the level is the band the score falls in: ``low`` below Medium, then ``medium``,
  ``high``, ``critical`` at or above each threshold — the same thresholds for a span
  type, a span (its type's score and level) and an instance;
* a level is never below the flags of what it covers (:func:`scale_level`): a span type
  that sends health data out is ``critical`` however few points it scores;
* ``unknown`` is not ``low``: a score of 0 that only the undeclared (``unknown``) parts
  of a declaration explain says nothing about the risk, so its level is ``unknown``.

A :func:`rollup` (per schema version or per agent) takes the union of the declarations,
the highest classification, and raises :class:`RiskFlag` s for dangerous combinations,
each explained in words and naming the span types responsible.

Declarations are checked field by field: every value against its enumeration, and every
key against the known fields, with errors naming the field.  Omitted fields default to
``unknown`` (the published SDKs document that and send partial declarations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentfolio.registry.errors import FieldProblem, RegistryError, invalid, join_field
from agentfolio.registry.jsonschemas import json_type

ActionValue = Literal["unknown", "allowed", "disallowed"]
CategoryValue = Literal["unknown", "included", "excluded"]
Classification = Literal["unknown", "public", "internal", "confidential", "restricted", "secret"]
RiskLevel = Literal["unknown", "low", "medium", "high", "critical"]

ACTION_VALUES: tuple[str, ...] = ("unknown", "allowed", "disallowed")
CATEGORY_VALUES: tuple[str, ...] = ("unknown", "included", "excluded")
CLASSIFICATIONS: tuple[str, ...] = ("unknown", "public", "internal", "confidential", "restricted", "secret")
RISK_LEVELS: tuple[str, ...] = ("unknown", "low", "medium", "high", "critical")
#: Levels a score can reach, least severe first (``unknown`` is no place on this scale).
KNOWN_LEVELS: tuple[str, ...] = ("low", "medium", "high", "critical")
_LEVEL_NAMES: dict[str, RiskLevel] = {"low": "low", "medium": "medium", "high": "high", "critical": "critical"}

#: Action fields and their meaning, as the API documents them.
ACTIONS: dict[str, str] = {
    "create_data": "Creates data",
    "read_data": "Reads data",
    "update_data": "Updates data",
    "destroy_data": "Destroys data",
    "financial_transactions": "Performs financial transactions",
    "external_communication": "Sends external communications",
}

#: Data-category fields (``classification`` aside) and their meaning.
CATEGORIES: dict[str, str] = {
    "personal_identifiers": "Personal identifiers",
    "contact_information": "Contact information",
    "financial_information": "Financial information",
    "health_and_medical": "Health and medical data",
    "criminal_justice": "Criminal justice data",
    "authentication_and_secrets": "Authentication and secrets",
    "organisational_confidential": "Organisational confidential data",
    "minors_data": "Minors' data",
    "location_and_tracking": "Location and tracking data",
    "behavioural_and_inferred": "Behavioural and inferred data",
    "gdpr_racial_or_ethnic_origin": "GDPR: racial or ethnic origin",
    "gdpr_political_opinions": "GDPR: political opinions",
    "gdpr_religious_or_philosophical_beliefs": "GDPR: religious or philosophical beliefs",
    "gdpr_trade_union_membership": "GDPR: trade union membership",
    "gdpr_genetic_data": "GDPR: genetic data",
    "gdpr_biometric_for_identification": "GDPR: biometric data for identification",
    "gdpr_sex_life_or_sexual_orientation": "GDPR: sex life or sexual orientation",
}

DATA_RISK_PARTS: tuple[str, ...] = ("action_profile", "params_data_categories", "result_data_categories")


class ActionProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    create_data: ActionValue = "unknown"
    read_data: ActionValue = "unknown"
    update_data: ActionValue = "unknown"
    destroy_data: ActionValue = "unknown"
    financial_transactions: ActionValue = "unknown"
    external_communication: ActionValue = "unknown"

    def allowed(self) -> set[str]:
        return {name for name in ACTIONS if getattr(self, name) == "allowed"}


class DataCategories(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    personal_identifiers: CategoryValue = "unknown"
    contact_information: CategoryValue = "unknown"
    financial_information: CategoryValue = "unknown"
    health_and_medical: CategoryValue = "unknown"
    criminal_justice: CategoryValue = "unknown"
    authentication_and_secrets: CategoryValue = "unknown"
    organisational_confidential: CategoryValue = "unknown"
    minors_data: CategoryValue = "unknown"
    location_and_tracking: CategoryValue = "unknown"
    behavioural_and_inferred: CategoryValue = "unknown"
    gdpr_racial_or_ethnic_origin: CategoryValue = "unknown"
    gdpr_political_opinions: CategoryValue = "unknown"
    gdpr_religious_or_philosophical_beliefs: CategoryValue = "unknown"
    gdpr_trade_union_membership: CategoryValue = "unknown"
    gdpr_genetic_data: CategoryValue = "unknown"
    gdpr_biometric_for_identification: CategoryValue = "unknown"
    gdpr_sex_life_or_sexual_orientation: CategoryValue = "unknown"
    classification: Classification = "unknown"

    def included(self) -> set[str]:
        return {name for name in CATEGORIES if getattr(self, name) == "included"}


class DataRisk(BaseModel):
    model_config = ConfigDict(frozen=True)

    action_profile: ActionProfile = Field(default_factory=ActionProfile)
    params_data_categories: DataCategories = Field(default_factory=DataCategories)
    result_data_categories: DataCategories = Field(default_factory=DataCategories)

    def included_categories(self) -> set[str]:
        return self.params_data_categories.included() | self.result_data_categories.included()

    def allowed_actions(self) -> set[str]:
        return self.action_profile.allowed()

    def classification(self) -> str:
        return highest_classification((self.params_data_categories.classification,
                                       self.result_data_categories.classification))

    def is_undeclared(self) -> bool:
        """Nothing declared at all: every action and category ``unknown``."""
        return self == UNDECLARED

    def to_json(self) -> dict[str, Any]:
        return self.model_dump()


UNDECLARED = DataRisk()


def parse_data_risk(raw: object, field_path: str = "data_risk") -> DataRisk:
    """A :class:`DataRisk` from request JSON, or a :class:`RegistryError` listing every
    bad field.  ``None`` (or omission) means nothing declared."""
    problems = data_risk_problems(raw, field_path)
    if problems:
        raise RegistryError(problems)
    if raw is None:
        return UNDECLARED
    assert isinstance(raw, Mapping)
    return DataRisk(
        action_profile=ActionProfile(**(raw.get("action_profile") or {})),
        params_data_categories=DataCategories(**(raw.get("params_data_categories") or {})),
        result_data_categories=DataCategories(**(raw.get("result_data_categories") or {})),
    )


def data_risk_problems(raw: object, field_path: str = "data_risk") -> list[FieldProblem]:
    """Every problem with a ``data_risk`` object, each naming its field."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [invalid(field_path, f"must be an object with {', '.join(DATA_RISK_PARTS)}, found {json_type(raw)}")]
    problems: list[FieldProblem] = []
    # Other top-level keys are tolerated (the SDK's model allows extras); the three
    # known parts are checked strictly, since a misspelt key would silently read as
    # "unknown" and hide a declaration.
    problems += _enum_object_problems(raw.get("action_profile"), join_field(field_path, "action_profile"),
                                      dict.fromkeys(ACTIONS, ACTION_VALUES))
    category_fields = dict.fromkeys(CATEGORIES, CATEGORY_VALUES) | {"classification": CLASSIFICATIONS}
    for part in ("params_data_categories", "result_data_categories"):
        problems += _enum_object_problems(raw.get(part), join_field(field_path, part), category_fields)
    return problems


def _enum_object_problems(raw: object, path: str, allowed: Mapping[str, tuple[str, ...]]) -> list[FieldProblem]:
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        return [invalid(path, f"must be an object, found {json_type(raw)}")]
    problems = []
    for key, value in raw.items():
        key_path = join_field(path, str(key))
        if key not in allowed:
            problems.append(invalid(key_path, f"unknown field {key!r}: expected one of {', '.join(allowed)}"))
        elif value not in allowed[key]:
            shown = repr(value) if isinstance(value, str) else json_type(value)
            problems.append(invalid(key_path, f"{shown} is not one of {', '.join(allowed[key])}"))
    return problems


def highest_classification(levels: Iterable[str]) -> str:
    """The most restrictive classification; ``unknown`` only when nothing is known."""
    rank = {name: index for index, name in enumerate(CLASSIFICATIONS)}
    return max(levels, key=lambda level: rank.get(level, 0), default="unknown")


# --------------------------------------------------------------------------- profiles


class CategoryRule(BaseModel):
    """A data category in a risk profile: its weight, and whether it is in agreed scope."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    weight: float = Field(ge=0, le=10)
    included: bool = True


class ActionRule(BaseModel):
    """An action in a risk profile: its multiplier, and whether it is in agreed scope."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    multiplier: float = Field(ge=0, le=100)
    included: bool = True


class Thresholds(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    medium: float = Field(gt=0)
    high: float
    critical: float

    @model_validator(mode="after")
    def _ascending(self) -> Thresholds:
        if not self.medium < self.high < self.critical:
            raise ValueError("thresholds must be strictly ascending: 0 < medium < high < critical")
        return self

    def level(self, score: float) -> RiskLevel:
        if score >= self.critical:
            return "critical"
        if score >= self.high:
            return "high"
        if score >= self.medium:
            return "medium"
        return "low"


class RiskProfile(BaseModel):
    """Weights (0-10) per data category, multipliers per action, and level thresholds.

    A category the profile does not list weighs 0; an action it does not list has
    multiplier 1.  ``included: false`` takes a category or action out of the agreed
    scope: it scores nothing, and a span type that declares it is flagged as exceeding
    the agreed risk.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = "default"
    description: str | None = None
    categories: dict[str, CategoryRule] = Field(default_factory=dict)
    actions: dict[str, ActionRule] = Field(default_factory=dict)
    thresholds: Thresholds

    @model_validator(mode="after")
    def _known_names(self) -> RiskProfile:
        unknown = [name for name in self.categories if name not in CATEGORIES]
        unknown += [name for name in self.actions if name not in ACTIONS]
        if unknown:
            raise ValueError(f"unknown category or action {', '.join(map(repr, unknown))}")
        return self

    @classmethod
    def from_json(cls, raw: object, field_path: str = "risk_profile") -> RiskProfile:
        """Parse, turning pydantic's errors into a :class:`RegistryError` naming fields."""
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            problems = []
            for item in error.errors():
                path = field_path
                for step in item["loc"]:
                    path = join_field(path, step if isinstance(step, int) else str(step))
                problems.append(invalid(path, item["msg"]))
            raise RegistryError(problems) from None

    def weight(self, category: str) -> float:
        rule = self.categories.get(category)
        return rule.weight if rule is not None and rule.included else 0.0

    def multiplier(self, action: str) -> float:
        rule = self.actions.get(action)
        if rule is None:
            return 1.0
        return rule.multiplier if rule.included else 0.0

    def category_in_scope(self, category: str) -> bool:
        rule = self.categories.get(category)
        return rule is None or rule.included

    def action_in_scope(self, action: str) -> bool:
        rule = self.actions.get(action)
        return rule is None or rule.included

    def level(self, score: float) -> RiskLevel:
        return self.thresholds.level(score)


#: The profile used when an account has configured none.  Weights rank how harmful
#: exposure of each category is (secrets, health, minors, criminal and GDPR special
#: categories highest); multipliers rank how much an action amplifies that harm (reading
#: is neutral, destroying data and moving money most).  Thresholds are for an instance
#: total: one span that reads personal identifiers scores 6 (low); a run that reads
#: health records a few times and e-mails them out reaches high or critical.
DEFAULT_RISK_PROFILE = RiskProfile(
    name="default",
    description="Built-in default: weights by harm of exposure, multipliers by how far an action amplifies it.",
    categories={
        "personal_identifiers": CategoryRule(weight=6),
        "contact_information": CategoryRule(weight=4),
        "financial_information": CategoryRule(weight=8),
        "health_and_medical": CategoryRule(weight=9),
        "criminal_justice": CategoryRule(weight=9),
        "authentication_and_secrets": CategoryRule(weight=10),
        "organisational_confidential": CategoryRule(weight=6),
        "minors_data": CategoryRule(weight=9),
        "location_and_tracking": CategoryRule(weight=5),
        "behavioural_and_inferred": CategoryRule(weight=4),
        "gdpr_racial_or_ethnic_origin": CategoryRule(weight=8),
        "gdpr_political_opinions": CategoryRule(weight=8),
        "gdpr_religious_or_philosophical_beliefs": CategoryRule(weight=8),
        "gdpr_trade_union_membership": CategoryRule(weight=7),
        "gdpr_genetic_data": CategoryRule(weight=9),
        "gdpr_biometric_for_identification": CategoryRule(weight=9),
        "gdpr_sex_life_or_sexual_orientation": CategoryRule(weight=8),
    },
    actions={
        "read_data": ActionRule(multiplier=1.0),
        "create_data": ActionRule(multiplier=1.2),
        "update_data": ActionRule(multiplier=1.5),
        "external_communication": ActionRule(multiplier=2.0),
        "destroy_data": ActionRule(multiplier=2.5),
        "financial_transactions": ActionRule(multiplier=3.0),
    },
    thresholds=Thresholds(medium=25, high=100, critical=250),
)


# --------------------------------------------------------------------------- scoring


@dataclass(frozen=True, slots=True)
class ScoreTerm:
    category: str
    action: str
    weight: float
    multiplier: float

    @property
    def points(self) -> float:
        return self.weight * self.multiplier


def highest_level(levels: Iterable[str]) -> RiskLevel:
    """The most severe known level; ``unknown`` only when no level is known."""
    known = [level for level in levels if level in KNOWN_LEVELS]
    return _LEVEL_NAMES[max(known, key=KNOWN_LEVELS.index)] if known else "unknown"


def floor_of(flags: Iterable[RiskFlag]) -> RiskLevel | None:
    """The level flags hold a score up to: a critical flag makes it critical, a high one
    at least high; ``info`` flags raise nothing."""
    levels = [flag.severity for flag in flags if flag.severity in KNOWN_LEVELS]
    return highest_level(levels) if levels else None


def _open_terms(risk: DataRisk, profile: RiskProfile) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Undeclared (``unknown``) categories and actions that could still add points: an
    unknown category beside an allowed or unknown action, or the other way round, each
    with a weight and multiplier the profile counts."""
    params, result = risk.params_data_categories, risk.result_data_categories
    categories = {c: "included" if "included" in (v := {getattr(params, c), getattr(result, c)})
                  else "unknown" if "unknown" in v else "excluded" for c in CATEGORIES}
    actions = {a: getattr(risk.action_profile, a) for a in ACTIONS}
    live_categories = [c for c, v in categories.items() if v != "excluded" and profile.weight(c)]
    live_actions = [a for a, v in actions.items() if v != "disallowed" and profile.multiplier(a)]
    unknown_categories = tuple(c for c in live_categories if categories[c] == "unknown"
                               and any(actions[a] in ("allowed", "unknown") for a in live_actions))
    unknown_actions = tuple(a for a in live_actions if actions[a] == "unknown"
                            and any(categories[c] in ("included", "unknown") for c in live_categories))
    return unknown_categories, unknown_actions


@dataclass(frozen=True, slots=True)
class SpanTypeScore:
    """A span type's score under a profile, the terms that make it up, and its level.

    The level is the band the score falls in under the profile's thresholds, raised to
    the severity of the span type's own flags (a type that sends health data out is
    critical whatever its points); it is ``unknown`` when the score is 0 only because
    the declaration leaves open what the type touches or does (``open_categories`` /
    ``open_actions``: what could still add points)."""

    span_type: str
    score: float
    level: RiskLevel
    terms: tuple[ScoreTerm, ...]
    #: Declared categories/actions the profile keeps out of agreed scope.
    exceeds_agreed_risk: tuple[str, ...]
    flags: tuple[RiskFlag, ...] = ()
    open_categories: tuple[str, ...] = ()
    open_actions: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "span_type": self.span_type,
            "risk_score": _round(self.score),
            "risk_level": self.level,
            "terms": [{"category": t.category, "action": t.action, "weight": t.weight,
                       "multiplier": t.multiplier, "points": _round(t.points)} for t in self.terms],
            "exceeds_agreed_risk": list(self.exceeds_agreed_risk),
            "flags": [flag.code for flag in self.flags if flag.severity in KNOWN_LEVELS],
            "undeclared": {"data_categories": list(self.open_categories), "actions": list(self.open_actions)},
        }


def score_span_type(span_type: str, risk: DataRisk, profile: RiskProfile = DEFAULT_RISK_PROFILE) -> SpanTypeScore:
    categories = sorted(risk.included_categories(), key=list(CATEGORIES).index)
    actions = sorted(risk.allowed_actions(), key=list(ACTIONS).index)
    terms = tuple(
        ScoreTerm(category, action, profile.weight(category), profile.multiplier(action))
        for category in categories for action in actions
        if profile.weight(category) and profile.multiplier(action)
    )
    score = sum(term.points for term in terms)
    exceeds = tuple([f"category:{c}" for c in categories if not profile.category_in_scope(c)]
                    + [f"action:{a}" for a in actions if not profile.action_in_scope(a)])
    flags = rollup([(span_type, risk)]).flags
    open_categories, open_actions = _open_terms(risk, profile)
    level = scale_level(score, profile, floor=floor_of(flags), open_ended=bool(open_categories or open_actions))
    return SpanTypeScore(span_type, score, level, terms, exceeds, flags, open_categories, open_actions)


def scale_level(score: float, profile: RiskProfile, *, floor: RiskLevel | None, open_ended: bool) -> RiskLevel:
    """The one rule every level follows: ``unknown`` when nothing scored, nothing is
    flagged and the declarations leave points open; else the band of ``score`` under the
    profile's thresholds, never below ``floor`` (the severity of the flags)."""
    if score <= 0 and floor is None and open_ended:
        return "unknown"
    return highest_level((profile.level(score), floor or "low"))


@dataclass(frozen=True, slots=True)
class Contribution:
    span_type: str
    count: int
    type_score: float
    #: the span type's own level (``unknown`` for a span name the schema version does not declare)
    type_level: RiskLevel = "unknown"

    @property
    def points(self) -> float:
        return self.type_score * self.count


@dataclass(frozen=True, slots=True)
class InstanceScore:
    """An instance's score: the sum over its spans of their span type's score; its level
    by the same rule as a span type's, with the flags of the span types it ran."""

    score: float
    level: RiskLevel
    contributions: tuple[Contribution, ...]
    #: Span names with no declaration in the schema version; they score nothing.
    undeclared_span_types: tuple[str, ...]
    flags: tuple[RiskFlag, ...] = ()

    def to_json(self) -> dict[str, Any]:
        total_spans = sum(c.count for c in self.contributions) or 1
        return {
            "risk_score": _round(self.score),
            "risk_level": self.level,
            "contributions": [{"span_type": c.span_type, "count": c.count, "share": _round(c.count / total_spans),
                               "type_score": _round(c.type_score), "type_level": c.type_level,
                               "points": _round(c.points)}
                              for c in self.contributions],
            "undeclared_span_types": list(self.undeclared_span_types),
            "flags": [flag.code for flag in self.flags if flag.severity in KNOWN_LEVELS],
        }


def score_instance(span_counts: Mapping[str, int], span_types: Mapping[str, DataRisk],
                   profile: RiskProfile = DEFAULT_RISK_PROFILE) -> InstanceScore:
    """Score a run from how many spans of each type it recorded."""
    contributions = []
    undeclared = []
    ran: list[tuple[str, DataRisk]] = []
    for name in sorted(span_counts):
        count = span_counts[name]
        if count <= 0:
            continue
        risk = span_types.get(name)
        if risk is None:
            undeclared.append(name)
            contributions.append(Contribution(name, count, 0.0, "unknown"))
            continue
        ran.append((name, risk))
        scored = score_span_type(name, risk, profile)
        contributions.append(Contribution(name, count, scored.score, scored.level))
    score = sum(c.points for c in contributions)
    flags = rollup(ran).flags
    open_ended = any(c.type_level == "unknown" for c in contributions)
    level = scale_level(score, profile, floor=floor_of(flags), open_ended=open_ended)
    return InstanceScore(score, level, tuple(contributions), tuple(undeclared), flags)


def score_agent(span_types: Iterable[tuple[str, DataRisk]],
                profile: RiskProfile = DEFAULT_RISK_PROFILE) -> tuple[float, RiskLevel]:
    """An agent's risk over the span types of all its schema versions: the highest span
    type score, and the highest level of any span type or of their combinations' flags
    (``unknown`` when no span type's level is known)."""
    pairs = list(span_types)
    scores = [score_span_type(name, risk, profile) for name, risk in pairs]
    floor = floor_of(rollup(pairs).flags)
    level = highest_level([score.level for score in scores] + ([floor] if floor else []))
    return max((score.score for score in scores), default=0.0), level


# --------------------------------------------------------------------------- roll-up

Severity = Literal["info", "medium", "high", "critical"]
SEVERITIES: tuple[str, ...] = ("info", "medium", "high", "critical")

#: Categories whose presence turns outbound communication into a flagged combination.
SENSITIVE_CATEGORIES: tuple[str, ...] = (
    "health_and_medical", "financial_information", "minors_data", "authentication_and_secrets",
    "criminal_justice", "gdpr_racial_or_ethnic_origin", "gdpr_political_opinions",
    "gdpr_religious_or_philosophical_beliefs", "gdpr_trade_union_membership", "gdpr_genetic_data",
    "gdpr_biometric_for_identification", "gdpr_sex_life_or_sexual_orientation",
)
SECRET_CLASSIFICATIONS: tuple[str, ...] = ("restricted", "secret")


@dataclass(frozen=True, slots=True)
class RiskFlag:
    code: str
    severity: Severity
    message: str
    span_types: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity, "message": self.message,
                "span_types": list(self.span_types)}


@dataclass(frozen=True)
class RiskRollup:
    """The union of declarations over a set of span types (a schema version, an agent)."""

    span_types: tuple[str, ...]
    action_profile: dict[str, str]
    params_data_categories: dict[str, str]
    result_data_categories: dict[str, str]
    data_categories: dict[str, str]
    classification: str
    flags: tuple[RiskFlag, ...]
    undeclared_span_types: tuple[str, ...] = field(default=())

    @property
    def highest_severity(self) -> str | None:
        return max((flag.severity for flag in self.flags), key=SEVERITIES.index, default=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "span_types": list(self.span_types),
            "action_profile": dict(self.action_profile),
            "params_data_categories": dict(self.params_data_categories),
            "result_data_categories": dict(self.result_data_categories),
            "data_categories": dict(self.data_categories),
            "classification": self.classification,
            "flags": [flag.to_json() for flag in self.flags],
            "highest_severity": self.highest_severity,
            "undeclared_span_types": list(self.undeclared_span_types),
        }


# Union order: a value wins over the ones to its right.
_ACTION_UNION = ("allowed", "unknown", "disallowed")
_CATEGORY_UNION = ("included", "unknown", "excluded")


def _union(values: Iterable[str], order: tuple[str, ...]) -> str:
    present = set(values)
    return next((value for value in order if value in present), "unknown")


def rollup(span_types: Iterable[tuple[str, DataRisk]]) -> RiskRollup:
    """Roll up ``(span type name, declaration)`` pairs.  Names may repeat (the same
    span type in several schema versions of one agent): their declarations are unioned."""
    pairs = list(span_types)
    names = tuple(dict.fromkeys(name for name, _ in pairs))
    actions = {a: _union((getattr(r.action_profile, a) for _, r in pairs), _ACTION_UNION) for a in ACTIONS}
    params = {c: _union((getattr(r.params_data_categories, c) for _, r in pairs), _CATEGORY_UNION) for c in CATEGORIES}
    result = {c: _union((getattr(r.result_data_categories, c) for _, r in pairs), _CATEGORY_UNION) for c in CATEGORIES}
    params["classification"] = highest_classification(r.params_data_categories.classification for _, r in pairs)
    result["classification"] = highest_classification(r.result_data_categories.classification for _, r in pairs)
    combined = {c: _union((params[c], result[c]), _CATEGORY_UNION) for c in CATEGORIES}
    classification = highest_classification((params["classification"], result["classification"]))
    combined["classification"] = classification
    undeclared = tuple(dict.fromkeys(name for name, risk in pairs if risk.is_undeclared()))
    return RiskRollup(names, actions, params, result, combined, classification,
                      tuple(_flags(pairs, undeclared)), undeclared)


def _includes(category: str) -> Callable[[DataRisk], bool]:
    """Whether a span type's data risk includes ``category``."""
    return lambda risk: category in risk.included_categories()


def _who(pairs: list[tuple[str, DataRisk]], test: Callable[[DataRisk], bool]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(name for name, risk in pairs if test(risk)))


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def _flags(pairs: list[tuple[str, DataRisk]], undeclared: tuple[str, ...]) -> list[RiskFlag]:
    flags: list[RiskFlag] = []
    destroyers = _who(pairs, lambda r: r.action_profile.destroy_data == "allowed")
    payers = _who(pairs, lambda r: r.action_profile.financial_transactions == "allowed")
    senders = _who(pairs, lambda r: r.action_profile.external_communication == "allowed")

    if destroyers:
        flags.append(RiskFlag("destroys_data", "high",
                              f"Can destroy data (span types: {_names(destroyers)}); deletions cannot be undone "
                              "from the record, so these steps need review before they run unattended.",
                              destroyers))
    if payers:
        flags.append(RiskFlag("financial_transactions", "high",
                              f"Can perform financial transactions (span types: {_names(payers)}).", payers))
    if senders:
        handled = [(c, who) for c in SENSITIVE_CATEGORIES if (who := _who(pairs, _includes(c)))]
        secret = _who(pairs, lambda r: r.classification() in SECRET_CLASSIFICATIONS)
        if handled or secret:
            parts = [f"{CATEGORIES[c].lower()} (span types: {_names(who)})" for c, who in handled]
            if secret:
                parts.append(f"data classified restricted or secret (span types: {_names(secret)})")
            involved = tuple(dict.fromkeys(senders + tuple(n for _, who in handled for n in who) + secret))
            same_step = [name for name in senders if name in involved and (
                name in secret or any(name in who for _, who in handled))]
            where = (f"; span types {_names(same_step)} do both in one step" if same_step
                     else "; the data could flow from one step to another within a run")
            flags.append(RiskFlag("external_communication_with_sensitive_data", "critical",
                                  f"Sends external communications (span types: {_names(senders)}) "
                                  f"while handling {'; '.join(parts)}{where}.", involved))
    leakers = _who(pairs, lambda r: r.result_data_categories.authentication_and_secrets == "included")
    if leakers:
        flags.append(RiskFlag("secrets_in_results", "high",
                              f"Returns authentication secrets in span results (span types: {_names(leakers)}); "
                              "they are stored with the span's result payload.", leakers))
    if undeclared:
        flags.append(RiskFlag("undeclared_data_risk", "info",
                              f"{len(undeclared)} span type{'s' if len(undeclared) != 1 else ''} declare no data "
                              f"risk at all (span types: {_names(undeclared)}); their risk is unknown, not low.",
                              undeclared))
    order = {severity: index for index, severity in enumerate(reversed(SEVERITIES))}
    return sorted(flags, key=lambda flag: order[flag.severity])


def _round(value: float) -> float:
    return round(value, 6)
