"""Data-risk declarations, risk-profile scoring (the documented hosted model), roll-ups."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentfolio.registry.errors import RegistryError
from agentfolio.registry.risk import (
    ACTIONS,
    CATEGORIES,
    DEFAULT_RISK_PROFILE,
    DataRisk,
    RiskProfile,
    parse_data_risk,
    rollup,
    score_instance,
    score_span_type,
)


def risk(actions=None, params=None, result=None) -> DataRisk:
    return parse_data_risk({"action_profile": actions or {}, "params_data_categories": params or {},
                            "result_data_categories": result or {}})


def test_partial_declarations_default_to_unknown_as_the_sdk_documents():
    declared = parse_data_risk({"action_profile": {"read_data": "allowed"},
                                "params_data_categories": {"personal_identifiers": "included"},
                                "result_data_categories": {}})
    assert declared.action_profile.read_data == "allowed"
    assert declared.action_profile.destroy_data == "unknown"
    assert declared.result_data_categories.classification == "unknown"
    assert parse_data_risk(None).is_undeclared()


def test_every_bad_value_is_reported_with_its_field_and_the_allowed_values():
    with pytest.raises(RegistryError) as caught:
        parse_data_risk({"action_profile": {"read_data": "maybe", "reads_data": "allowed"},
                         "params_data_categories": {"classification": "top-secret"},
                         "result_data_categories": {"minors_data": True}},
                        "details.span_type_schemas[0].data_risk")
    errors = caught.value.errors
    assert caught.value.code == "invalid_value"
    assert "'maybe' is not one of unknown, allowed, disallowed" in \
        errors["details.span_type_schemas[0].data_risk.action_profile.read_data"]
    assert "unknown field 'reads_data'" in errors["details.span_type_schemas[0].data_risk.action_profile.reads_data"]
    assert "public, internal, confidential, restricted, secret" in \
        errors["details.span_type_schemas[0].data_risk.params_data_categories.classification"]
    assert "a boolean is not one of unknown, included, excluded" in \
        errors["details.span_type_schemas[0].data_risk.result_data_categories.minors_data"]


def test_non_object_data_risk_is_refused():
    with pytest.raises(RegistryError, match="data_risk: must be an object"):
        parse_data_risk(["read_data"])


def test_documented_example_scores_12_per_span_and_41_for_the_run():
    # The hosted docs: reads personal identifiers (8) and contact information (4) under
    # read_data 1.0 scores 12; three such spans and one span type scoring 5 total 41.
    profile = RiskProfile.from_json({
        "categories": {"personal_identifiers": {"weight": 8}, "contact_information": {"weight": 4},
                       "location_and_tracking": {"weight": 5}},
        "actions": {"read_data": {"multiplier": 1.0}},
        "thresholds": {"medium": 40, "high": 80, "critical": 160},
    })
    lookup = risk({"read_data": "allowed"}, {"personal_identifiers": "included"}, {"contact_information": "included"})
    locate = risk({"read_data": "allowed"}, {"location_and_tracking": "included"})
    assert score_span_type("lookup", lookup, profile).score == 12
    run = score_instance({"lookup": 3, "locate": 1}, {"lookup": lookup, "locate": locate}, profile)
    assert run.score == 41 and run.level == "medium"
    assert [(c.span_type, c.count, c.points) for c in run.contributions] == [("locate", 1, 5), ("lookup", 3, 36)]


def test_score_sums_weight_times_multiplier_over_every_included_category_and_allowed_action():
    declared = risk({"read_data": "allowed", "destroy_data": "allowed", "create_data": "disallowed"},
                    {"health_and_medical": "included", "contact_information": "excluded"},
                    {"financial_information": "included"})
    scored = score_span_type("t", declared, DEFAULT_RISK_PROFILE)
    # (9 health + 8 financial) × (1.0 read + 2.5 destroy)
    assert scored.score == pytest.approx(17 * 3.5)
    assert {(t.category, t.action) for t in scored.terms} == {
        ("health_and_medical", "read_data"), ("health_and_medical", "destroy_data"),
        ("financial_information", "read_data"), ("financial_information", "destroy_data")}


def test_unknown_and_unlisted_score_nothing_and_levels_follow_the_bands():
    assert score_span_type("t", DataRisk(), DEFAULT_RISK_PROFILE).score == 0
    thresholds = DEFAULT_RISK_PROFILE.thresholds
    assert [thresholds.level(s) for s in (0, 24.9, 25, 99, 100, 250, 10_000)] == \
        ["low", "low", "medium", "medium", "high", "critical", "critical"]


def test_out_of_scope_categories_and_actions_score_nothing_and_are_reported():
    profile = RiskProfile.from_json({
        "categories": {"health_and_medical": {"weight": 9, "included": False}, "contact_information": {"weight": 4}},
        "actions": {"external_communication": {"multiplier": 2, "included": False}},
        "thresholds": {"medium": 10, "high": 20, "critical": 30},
    })
    declared = risk({"external_communication": "allowed", "read_data": "allowed"},
                    {"health_and_medical": "included", "contact_information": "included"})
    scored = score_span_type("mailer", declared, profile)
    assert scored.score == 4  # contact × read only
    assert scored.exceeds_agreed_risk == ("category:health_and_medical", "action:external_communication")


@pytest.mark.parametrize("raw,field", [
    ({"categories": {"health_and_medical": {"weight": 11}}, "thresholds": {"medium": 1, "high": 2, "critical": 3}},
     "risk_profile.categories.health_and_medical.weight"),
    ({"thresholds": {"medium": 5, "high": 5, "critical": 9}}, "risk_profile.thresholds"),
    ({"actions": {"teleport": {"multiplier": 1}}, "thresholds": {"medium": 1, "high": 2, "critical": 3}},
     "risk_profile"),
    ({}, "risk_profile.thresholds"),
])
def test_bad_profiles_are_refused_naming_the_field(raw, field):
    with pytest.raises(RegistryError) as caught:
        RiskProfile.from_json(raw)
    assert field in caught.value.errors


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(list(CATEGORIES)), st.sampled_from(["unknown", "included", "excluded"])),
       st.dictionaries(st.sampled_from(list(ACTIONS)), st.sampled_from(["unknown", "allowed", "disallowed"])),
       st.integers(0, 50))
def test_instance_score_is_count_times_type_score(categories, actions, count):
    declared = risk(actions, categories)
    type_score = score_span_type("t", declared).score
    assert type_score >= 0
    assert score_instance({"t": count}, {"t": declared}).score == pytest.approx(type_score * count)


def test_undeclared_span_names_score_zero_but_are_named():
    run = score_instance({"ghost": 2}, {})
    assert run.score == 0 and run.undeclared_span_types == ("ghost",)


def test_rollup_unions_declarations_takes_highest_classification_and_flags_combinations():
    span_types = [
        ("read_chart", risk({"read_data": "allowed"}, {"health_and_medical": "included", "classification": "confidential"})),
        ("send_email", risk({"external_communication": "allowed", "read_data": "disallowed"},
                            {"contact_information": "included", "classification": "internal"})),
        ("purge", risk({"destroy_data": "allowed"})),
        ("login", risk({}, {}, {"authentication_and_secrets": "included", "classification": "secret"})),
        ("noop", DataRisk()),
    ]
    rolled = rollup(span_types)
    assert rolled.action_profile["read_data"] == "allowed"  # allowed anywhere wins over disallowed
    assert rolled.action_profile["update_data"] == "unknown"
    assert rolled.data_categories["health_and_medical"] == "included"
    assert rolled.classification == "secret"
    codes = [flag.code for flag in rolled.flags]
    assert codes == ["external_communication_with_sensitive_data", "destroys_data", "secrets_in_results",
                     "undeclared_data_risk"]
    external = rolled.flags[0]
    assert external.severity == "critical"
    assert "send_email" in external.message and "health and medical data (span types: read_chart)" in external.message
    assert set(external.span_types) == {"send_email", "read_chart", "login"}
    assert rolled.highest_severity == "critical"
    assert rolled.to_json()["flags"][1]["code"] == "destroys_data"


def test_rollup_says_when_one_step_both_sends_and_handles_sensitive_data():
    rolled = rollup([("notify", risk({"external_communication": "allowed"}, {"minors_data": "included"}))])
    assert "do both in one step" in rolled.flags[0].message


def test_rollup_of_harmless_span_types_raises_no_flags():
    rolled = rollup([("search", risk({"read_data": "allowed"}, {"classification": "public"}))])
    assert rolled.flags == () and rolled.classification == "public"


def test_rollup_merges_the_same_span_type_across_versions():
    rolled = rollup([("tool", risk({"read_data": "allowed"})), ("tool", risk({"update_data": "allowed"}))])
    assert rolled.span_types == ("tool",)
    assert rolled.action_profile["read_data"] == rolled.action_profile["update_data"] == "allowed"


# --------------------------------------------------------------------------- one scale


def test_a_span_type_that_declares_nothing_is_unknown_not_low():
    assert score_span_type("noop", DataRisk()).level == "unknown"
    assert score_instance({"noop": 3}, {"noop": DataRisk()}).level == "unknown"
    assert score_instance({"ghost": 3}, {}).level == "unknown"  # a span type the version does not declare
    # Declared fully and harmless: low, a real 0.
    harmless = risk(dict.fromkeys(ACTIONS, "disallowed"), dict.fromkeys(CATEGORIES, "excluded"))
    assert score_span_type("harmless", harmless).level == "low"
    # Reads something, but what is not said: unknown, and the open categories are named.
    reader = score_span_type("reader", risk({"read_data": "allowed"}))
    assert reader.level == "unknown" and "health_and_medical" in reader.open_categories
    assert reader.to_json()["undeclared"]["data_categories"] == list(reader.open_categories)
    # No run at all touched nothing: low.
    assert score_instance({}, {}).level == "low"


def test_a_span_types_level_is_never_below_its_own_flags():
    mailer = risk({"external_communication": "allowed"}, {"health_and_medical": "included"})
    scored = score_span_type("mailer", mailer)
    assert scored.score == 18 and DEFAULT_RISK_PROFILE.level(18) == "low"
    assert scored.level == "critical" and scored.to_json()["flags"] == ["external_communication_with_sensitive_data"]
    purge = score_span_type("purge", risk({"destroy_data": "allowed"}))
    assert purge.score == 0 and purge.level == "high"  # flagged, though what it destroys is not declared
    # A run is never below the flags of the span types it ran, together: one reads health
    # records, another writes to the outside world.
    reader = risk({"read_data": "allowed"}, {"health_and_medical": "included"})
    sender = risk({"external_communication": "allowed"}, {"contact_information": "included"})
    run = score_instance({"reader": 1, "sender": 1}, {"reader": reader, "sender": sender})
    assert run.score == 9 + 8 and run.level == "critical"


PROFILES = st.builds(
    lambda weights, multipliers, medium, gaps: RiskProfile.from_json({
        "categories": {name: {"weight": weight, "included": included} for name, (weight, included) in weights.items()},
        "actions": {name: {"multiplier": mult, "included": included}
                    for name, (mult, included) in multipliers.items()},
        "thresholds": {"medium": medium, "high": medium + gaps[0], "critical": medium + gaps[0] + gaps[1]}}),
    st.dictionaries(st.sampled_from(list(CATEGORIES)), st.tuples(st.integers(0, 10), st.booleans())),
    st.dictionaries(st.sampled_from(list(ACTIONS)), st.tuples(st.floats(0, 100, allow_nan=False), st.booleans())),
    st.floats(0.5, 500, allow_nan=False), st.tuples(st.floats(0.5, 500), st.floats(0.5, 500)))
DECLARATIONS = st.builds(
    risk,
    st.dictionaries(st.sampled_from(list(ACTIONS)), st.sampled_from(["unknown", "allowed", "disallowed"])),
    st.dictionaries(st.sampled_from(list(CATEGORIES)), st.sampled_from(["unknown", "included", "excluded"])),
    st.dictionaries(st.sampled_from([*CATEGORIES, "classification"]), st.sampled_from(["unknown", "included"])
                    ).map(lambda found: {key: ("secret" if key == "classification" and value == "included" else
                                               "unknown" if key == "classification" else value)
                                         for key, value in found.items()}))
ORDER = ("unknown", "low", "medium", "high", "critical")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(DECLARATIONS, PROFILES)
def test_the_level_of_a_span_type_follows_the_one_rule(declared, profile):
    scored = score_span_type("t", declared, profile)
    floor = [flag.severity for flag in scored.flags if flag.severity != "info"]
    assert scored.score == pytest.approx(sum(t.weight * t.multiplier for t in scored.terms))
    if scored.level == "unknown":
        assert scored.score == 0 and not floor and (scored.open_categories or scored.open_actions)
    else:
        band = profile.level(scored.score)
        assert ORDER.index(scored.level) == max(ORDER.index(level) for level in [band, *floor])
    if declared.is_undeclared() and any(profile.weight(c) for c in CATEGORIES) and \
            any(profile.multiplier(a) for a in ACTIONS):
        assert scored.level == "unknown"


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "ghost"]), st.integers(0, 1000), max_size=4),
       st.fixed_dictionaries({"a": DECLARATIONS, "b": DECLARATIONS, "c": DECLARATIONS}), PROFILES,
       st.sampled_from(["a", "b", "c", "ghost"]), st.integers(1, 1000))
def test_a_run_scores_its_spans_and_more_spans_never_lower_its_level(counts, declared, profile, extra, more):
    run = score_instance(counts, declared, profile)
    expected = sum(score_span_type(n, declared[n], profile).score * c for n, c in counts.items() if n in declared)
    assert run.score == pytest.approx(expected)
    ran = {name: score_span_type(name, declared[name], profile).level if name in declared else "unknown"
           for name, count in counts.items() if count}
    if run.level == "unknown":  # only when nothing scored and some span type's risk is unknown
        assert run.score == 0 and "unknown" in ran.values()
    else:  # never below a span type it ran
        assert all(ORDER.index(run.level) >= ORDER.index(level) for level in ran.values())
    grown = score_instance({**counts, extra: counts.get(extra, 0) + more}, declared, profile)
    # More spans never lower a known level; they can make it unknown only while nothing scores.
    if "unknown" in (grown.level, run.level):
        assert grown.level != "unknown" or grown.score == 0
    else:
        assert ORDER.index(grown.level) >= ORDER.index(run.level)
