"""Property tests: is_compatible against brute force over enumerated bodies.

Two comparisons:

* **exact**: compat is run inside a small finite universe of names and content
  types (the same one the brute force enumerates), so the two must agree on every
  pair of random schemas, both ways. Small universes make names scarce, which
  exercises the unique-name reasoning hardest.
* **real universe**: compat runs on the real (infinite) name space; whenever brute
  force over the small universe finds a counter-example, compat must say "no",
  and every counter-example compat returns must really be accepted by the output
  schema and rejected by the input schema, checked by the independent oracle.

Brute force enumerates bodies of up to (required output parts + 1) parts: a
smallest counter-example never needs more (keep one witness per required output
part, plus the offending part), so that bound loses nothing.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentfolio.body import MessageBodySchema, is_compatible, name_glob
from agentfolio.body.compat import Universe

from .oracle import brute_force_counterexample, oracle_glob, oracle_valid

SEGMENTS = ["a", "b", ".a"]
SMALL_NAMES = [f"/{x}" for x in SEGMENTS] + [f"/{x}/{y}" for x in SEGMENTS for y in SEGMENTS]
SMALL_CTS = ["a/a", "a/b", "b/a", "b/b"]
SMALL = Universe(
    names=r"/(?:a|b|\.a)(?:/(?:a|b|\.a))?",
    content_types=r"(?:a|b)/(?:a|b)",
)

name_segment = st.sampled_from(
    ["a", "b", ".a", "*", "?", "a*", "*a", "{a,b}", "{a,.a}", "{,a}", "{a/b,b}", "**", "."]
)
name_globs = st.lists(name_segment, min_size=1, max_size=3).map(lambda segs: "/" + "/".join(segs))
ct_globs = st.one_of(
    st.none(),
    st.just("**"),
    st.tuples(st.sampled_from(["a", "b", "*", "{a,b}", "?"]), st.sampled_from(["a", "b", "*", "{a,b}"])).map(
        "/".join
    ),
)
schema_parts = st.fixed_dictionaries(
    {"name": st.one_of(st.none(), name_globs), "content_type": ct_globs, "required": st.booleans()}
).map(lambda d: {k: v for k, v in d.items() if v is not None})


def schemas(max_required: int):
    return st.lists(schema_parts, max_size=3).filter(
        lambda ps: sum(bool(p.get("required")) for p in ps) <= max_required
    ).map(lambda ps: {"parts": ps})


def n_required(schema: dict) -> int:
    return sum(bool(p.get("required")) for p in schema["parts"])


def keys_of(body) -> list[tuple[str | None, str]]:
    return [(p.name, p.essence) for p in body.parts]


# BODY_PROPERTY_EXAMPLES=5000 for a long soak; 300 keeps the suite fast.
EXAMPLES = int(os.environ.get("BODY_PROPERTY_EXAMPLES", "300"))
PROPS = settings(max_examples=EXAMPLES, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@PROPS
@given(out=schemas(max_required=2), inp=schemas(max_required=3))
def test_exact_agreement_with_brute_force_in_a_small_universe(out: dict, inp: dict) -> None:
    result = is_compatible(out, inp, universe=SMALL)
    brute = brute_force_counterexample(
        out, inp, [*SMALL_NAMES, None], SMALL_CTS, max_parts=n_required(out) + 1
    )
    event("compatible" if result else "incompatible")
    assert bool(result) == (brute is None), (result, brute)
    if not result:
        for problem in result.problems:
            keys = keys_of(problem.counterexample)
            assert all(n is None or n in SMALL_NAMES for n, _ in keys)
            assert all(c in SMALL_CTS for _, c in keys)
            assert oracle_valid(out, keys), (problem.reason, keys)
            assert not oracle_valid(inp, keys), (problem.reason, keys)


@PROPS
@given(out=schemas(max_required=2), inp=schemas(max_required=3))
def test_real_universe_answers_are_sound(out: dict, inp: dict) -> None:
    result = is_compatible(out, inp)
    brute = brute_force_counterexample(
        out, inp, [*SMALL_NAMES, None], SMALL_CTS, max_parts=n_required(out) + 1
    )
    if brute is not None:
        assert not result, f"brute force found {brute} but compat said {result}"
    for problem in result.problems:
        keys = keys_of(problem.counterexample)
        assert oracle_valid(out, keys), (problem.reason, keys)
        assert not oracle_valid(inp, keys), (problem.reason, keys)
        # The validator agrees with the oracle on the counter-example too.
        assert MessageBodySchema.parse(out).is_valid(problem.counterexample)
        assert not MessageBodySchema.parse(inp).is_valid(problem.counterexample)


deep_names = st.lists(st.sampled_from(["a", "b", ".a", "ab", "a.b", "ba"]), min_size=1, max_size=5).map(
    lambda segs: "/" + "/".join(segs)
)


@settings(max_examples=max(1000, EXAMPLES), deadline=None)
@given(glob=name_globs, name=deep_names)
def test_name_glob_regex_agrees_with_oracle(glob: str, name: str) -> None:
    assert name_glob(glob).matches(name) == oracle_glob(glob, name)


@PROPS
@given(schema=schemas(max_required=3))
def test_schema_is_compatible_with_itself(schema: dict) -> None:
    assert is_compatible(schema, schema)


@PROPS
@given(a=schemas(max_required=2), b=schemas(max_required=2), c=schemas(max_required=2))
def test_compatibility_is_transitive_in_small_universe(a: dict, b: dict, c: dict) -> None:
    if is_compatible(a, b, universe=SMALL) and is_compatible(b, c, universe=SMALL):
        assert is_compatible(a, c, universe=SMALL)


bodies = st.lists(
    st.tuples(st.sampled_from([*SMALL_NAMES, None, None]), st.sampled_from([*SMALL_CTS, "A/B; q=1"])),
    max_size=5,
).map(lambda keys: list({(n if n is not None else object()): (n, c) for n, c in keys}.values()))


@PROPS
@given(schema=schemas(max_required=3), keys=bodies)
def test_batch_and_streaming_validation_agree_with_the_definition(schema: dict, keys: list) -> None:
    from agentfolio.body import MessageBody, PartRejected, SchemaValidationError, StreamValidator

    body = MessageBody.of([{"name": n, "content_type": c} for n, c in keys])
    expected = oracle_valid(schema, [(n, c.split(";")[0].lower()) for n, c in keys])
    parsed = MessageBodySchema.parse(schema)
    assert parsed.is_valid(body) == expected
    v = StreamValidator(parsed)
    try:
        v.feed_all(body.parts)
        v.close()
        streamed = True
    except (PartRejected, SchemaValidationError):
        streamed = False
    assert streamed == expected
