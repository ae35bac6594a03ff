from __future__ import annotations

import pytest

from agentfolio.body import MessageBodySchema, is_compatible


def s(*parts: dict) -> dict:
    return {"parts": list(parts)}


def assert_counterexample(out: dict, inp: dict) -> None:
    result = is_compatible(out, inp)
    assert not result
    body = result.counterexample
    assert body is not None
    assert MessageBodySchema.parse(out).is_valid(body)
    assert not MessageBodySchema.parse(inp).is_valid(body)


def test_identical_and_narrower_outputs_are_compatible() -> None:
    wide = s({"content_type": "text/*"}, {"name": "/files/**"})
    narrow = s({"content_type": "text/plain", "required": True},
               {"name": "/files/*.py", "content_type": "text/x-python"})
    assert is_compatible(wide, wide)
    assert is_compatible(narrow, wide)
    assert_counterexample(wide, narrow)


def test_glob_inclusion_across_segments() -> None:
    assert is_compatible(s({"name": "/a/*/b"}), s({"name": "/a/**"}))
    assert is_compatible(s({"name": "/a/{x,y}/b"}), s({"name": "/a/*/b"}))
    result = is_compatible(s({"name": "/a/**"}), s({"name": "/a/*/b"}))
    assert not result
    assert result.counterexample.parts[0].name == "/a"  # the shortest name '/a/**' allows


def test_required_input_part_must_be_guaranteed() -> None:
    out = s({"content_type": "text/plain", "required": True}, {"content_type": "image/png"})
    inp = s({"content_type": "text/*", "required": True}, {"content_type": "image/*"})
    assert is_compatible(out, inp)
    inp_needs_image = s({"content_type": "text/*"}, {"content_type": "image/*", "required": True})
    result = is_compatible(out, inp_needs_image)
    assert not result
    problem = result.problems[0]
    assert problem.kind == "missing_required" and problem.input_part == 1
    assert [p.content_type for p in result.counterexample.parts] == ["text/plain"]


def test_required_met_through_a_different_but_included_output_part() -> None:
    out = s({"name": "/report.md", "content_type": "text/markdown", "required": True})
    inp = s({"name": "/*.md", "content_type": "text/*", "required": True})
    assert is_compatible(out, inp)


def test_empty_output_schema_only_fits_inputs_without_required_parts() -> None:
    assert is_compatible(s(), s())
    assert is_compatible(s(), s({"content_type": "text/plain"}))
    result = is_compatible(s(), s({"content_type": "text/plain", "required": True}))
    assert not result and len(result.counterexample) == 0
    assert "empty body" in result.reason


def test_unsatisfiable_output_is_vacuously_compatible() -> None:
    # Both required parts need the one name '/x' with different types: no body exists.
    out = s({"name": "/x", "content_type": "text/plain", "required": True},
            {"name": "/x", "content_type": "image/png", "required": True})
    result = is_compatible(out, s())
    assert result and not result.output_satisfiable
    assert "unique names" in result.reason
    dead = is_compatible(s({"name": "/a/./b", "required": True}), s())
    assert dead and "can match no valid part" in dead.reason


def test_unique_names_limit_what_an_output_part_can_contribute() -> None:
    # '/x' must be text (required); the optional image '/x' can then never appear,
    # so an input that refuses images named '/x' is still compatible.
    out = s({"name": "/x", "content_type": "text/plain", "required": True},
            {"name": "/x", "content_type": "image/png"})
    assert is_compatible(out, s({"name": "/x", "content_type": "text/plain", "required": True}))
    # With two names available the image becomes possible.
    out2 = s({"name": "/{x,y}", "content_type": "text/plain", "required": True},
             {"name": "/x", "content_type": "image/png"})
    result = is_compatible(out2, s({"name": "/{x,y}", "content_type": "text/plain"}))
    assert not result
    names = {p.name: p.content_type for p in result.counterexample.parts}
    assert names == {"/x": "image/png", "/y": "text/plain"}


def test_unnamed_and_named_never_match_each_other() -> None:
    assert_counterexample(s({"content_type": "text/plain"}), s({"name": "/**", "content_type": "text/plain"}))
    assert_counterexample(s({"name": "/a"}), s({}))
    assert is_compatible(s({}), s({"content_type": "**"}))


def test_content_type_without_glob_means_any() -> None:
    assert is_compatible(s({"content_type": "video/mp4"}), s({}))
    result = is_compatible(s({}), s({"content_type": "*/*"}))
    assert result  # every essence is type/subtype
    assert_counterexample(s({}), s({"content_type": "text/*"}))


def test_report_names_parts_and_prints_counterexample() -> None:
    result = is_compatible(s({"content_type": "image/*"}), s({"content_type": "text/*"}))
    text = str(result)
    assert text.startswith("not compatible: output schema part #0 (unnamed, content type 'image/*')")
    assert '"content_type":"image/png"' in text


@pytest.mark.parametrize("n", [6, 10])
def test_many_disjoint_parts_stay_fast(n: int) -> None:
    out = s(*({"name": f"/d{i}/*", "content_type": f"text/t{i}", "required": True} for i in range(n)))
    inp = s(*({"name": f"/d{i}/**", "content_type": "text/*"} for i in range(n)),
            {"name": "/d0/x", "required": True})
    result = is_compatible(out, inp)
    assert not result and result.problems[0].kind == "missing_required"


def test_disjoint_parts_cost_products_in_proportion_to_the_parts(monkeypatch) -> None:
    """Splitting names into regions compares each glob only with the regions that share its
    literal prefix: 64 parts named /p0/*, /p1/*, ... take a few products each, not one per
    region (which made a 256-part schema, at the limit, run past the deadline)."""
    from agentfolio.body import automata

    products = 0
    plain_intersect = automata.intersect

    def counted(a, b):  # type: ignore[no-untyped-def]
        nonlocal products
        products += 1
        return plain_intersect(a, b)

    monkeypatch.setattr(automata, "intersect", counted)
    n = 64
    out = s(*({"name": f"/p{i}/*", "required": i % 2 == 0} for i in range(n)))
    inp = s(*({"name": f"/p{i}/**"} for i in range(n)))
    assert is_compatible(out, inp)
    assert products <= 8 * n, products
    products = 0
    missing = s(*({"name": f"/p{i}/**"} for i in range(1, n)))
    result = is_compatible(out, missing)
    assert not result and result.counterexample.parts[0].name.startswith("/p0/")
    assert products <= 8 * n, products


def test_a_literal_prefix_is_what_every_accepted_word_starts_with() -> None:
    from agentfolio.body.automata import fsm, literal_prefix
    from agentfolio.body.globs import name_glob

    assert literal_prefix(fsm(name_glob("/p12/*").regex)) == "/p12/"
    assert literal_prefix(fsm(name_glob("/a/{x,y}/b").regex)) == "/a/"
    assert literal_prefix(fsm(name_glob("/a/**").regex)) == "/a"  # "/a" itself matches
    assert literal_prefix(fsm(name_glob("/**").regex)) == ""  # so does the empty name
    assert literal_prefix(fsm("abc|abd")) == "ab"
    assert literal_prefix(fsm("ab|abc")) == "ab"
    assert literal_prefix(fsm("[]")) == ""


# -- under a deadline --------------------------------------------------------------------


def test_the_checked_answer_is_the_plain_answer():
    from agentfolio.body.compat import check_compatibility
    from agentfolio.body.examples import load_schema

    for out, inp in (("chat", "multimodal-chat"), ("multimodal-chat", "chat")):
        checked = check_compatibility(load_schema(out), load_schema(inp), timeout=60)
        plain = is_compatible(load_schema(out), load_schema(inp))
        assert checked.compatible == plain.compatible and checked.reason == plain.reason
        assert [p.counterexample for p in checked.problems] == [p.counterexample for p in plain.problems]


def test_a_check_that_would_run_for_minutes_is_stopped_as_too_complex():
    from agentfolio._deadline import DeadlineExceededError
    from agentfolio.body.compat import check_compatibility
    from tests.bombs import EXPLODING, within_deadline

    exploding = {"parts": [{"name": EXPLODING, "required": True}]}
    with pytest.raises(DeadlineExceededError, match="compatibility check took longer than 2 s") as raised:
        within_deadline(lambda: check_compatibility(exploding, {"parts": [{"name": "/x/**"}]}, timeout=2))
    assert raised.value.code == "too_complex"


def test_oversized_schemas_are_refused_before_any_work():
    from agentfolio.body import BodyError
    from agentfolio.body.compat import check_compatibility
    from tests.bombs import two_big_schemas, within_deadline

    output, input_ = two_big_schemas()
    with pytest.raises(BodyError, match="too complex: it has 2,000 parts"):
        within_deadline(lambda: check_compatibility(output, input_, timeout=60))


def test_automata_over_their_state_limit_are_refused(monkeypatch):
    from agentfolio.body import automata
    from agentfolio.body.errors import TooComplexError

    monkeypatch.setattr(automata, "MAX_STATES", 10)
    automata.fsm.cache_clear()
    try:
        with pytest.raises(TooComplexError, match="states \\(limit 10\\)"):
            is_compatible({"parts": [{"name": "/abcdefghijklmnop/*"}]}, {"parts": [{"name": "/**"}]})
    finally:
        automata.fsm.cache_clear()
