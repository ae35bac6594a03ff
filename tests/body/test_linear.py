"""Glob matching is linear in the name whatever the glob; globs and schemas are bounded."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentfolio.body import BodyError, GlobError, MessageBody, MessageBodySchema, name_glob
from agentfolio.body.globs import MAX_GLOB_WILDCARDS
from agentfolio.body.linear import backtracking_safe, union_fullmatch
from agentfolio.body.schema import MAX_SCHEMA_PARTS
from tests.bombs import GLOBSTAR_CHAIN, NEAR_MISS, TWENTY_STARS, two_big_schemas, within_deadline


def test_a_twenty_star_glob_says_no_to_a_near_miss_at_once():
    glob = name_glob(TWENTY_STARS)
    assert not glob.backtracking_safe  # so it runs on RE2, not on re
    assert within_deadline(lambda: glob.matches(NEAR_MISS)) is False
    assert glob.matches("/" + "a" * 40)
    schema = MessageBodySchema.parse({"parts": [{"name": TWENTY_STARS}]})
    body = MessageBody.parse({"parts": [{"name": NEAR_MISS, "content_type": "text/plain", "content": "x"}]})
    report = within_deadline(lambda: schema.validate_body(body))
    assert not report.ok and "no name glob matches" in report.problems[0]
    assert within_deadline(lambda: body.list(TWENTY_STARS)) == []


def test_a_chain_of_sixty_globstars_is_refused_as_too_complex():
    with pytest.raises(GlobError, match=f"too complex: it has 60 '\\*'/'\\*\\*' wildcards; the limit is "
                                        f"{MAX_GLOB_WILDCARDS}"):
        within_deadline(lambda: name_glob(GLOBSTAR_CHAIN))
    chain = "/**/a" * MAX_GLOB_WILDCARDS  # at the limit: accepted, and still linear
    assert within_deadline(lambda: name_glob(chain).matches("/a" * 200 + "/b")) is False
    assert name_glob(chain).matches("/a" * MAX_GLOB_WILDCARDS)


def test_two_thousand_part_schemas_are_refused_as_too_complex():
    output, _ = two_big_schemas()
    with pytest.raises(BodyError, match=f"too complex: it has 2,000 parts; the limit is {MAX_SCHEMA_PARTS}"):
        within_deadline(lambda: MessageBodySchema.parse(output))
    with pytest.raises(ValueError, match="too complex"):
        MessageBodySchema(parts=tuple(MessageBodySchema.parse(two_big_schemas(MAX_SCHEMA_PARTS)[0]).parts) * 2)


def test_few_wildcards_stay_on_re_and_many_go_to_re2():
    assert name_glob("/src/*.py").backtracking_safe
    assert name_glob("/data/*.{csv,tsv}").backtracking_safe
    assert not name_glob("/src/**/*.py").backtracking_safe
    assert not name_glob("/{a,b}{c,d}{e,f}{g,h}{i,j}/*").backtracking_safe  # 32 alternatives
    assert backtracking_safe(1, 16) and not backtracking_safe(2, 1)


def test_a_union_of_safe_and_unsafe_globs_matches_either():
    safe, unsafe = name_glob("/a/*"), name_glob(TWENTY_STARS)
    either = union_fullmatch([safe.regex], [unsafe.regex])
    assert either("/a/x") and either("/" + "a" * 20) and not either(NEAR_MISS)
    assert not union_fullmatch([], [])("/a")


GLOB_PIECES = st.sampled_from(["*", "**", "?", "a", "b", ".", "{a,b*}", "{*,ab}"])
NAME_PIECES = st.sampled_from(["a", "b", "ab", ".", "x"])


@st.composite
def globs(draw: st.DrawFn) -> str:
    segments = draw(st.lists(st.lists(GLOB_PIECES, min_size=1, max_size=4), min_size=1, max_size=4))
    parts = []
    for pieces in segments:
        if "**" in pieces:
            parts.append("**")  # '**' must be a whole segment
        else:
            parts.append("".join(pieces))
    return "/" + "/".join(parts)


@settings(max_examples=300, deadline=None)
@given(pattern=globs(), names=st.lists(st.lists(NAME_PIECES, min_size=1, max_size=4), min_size=1, max_size=4))
def test_re2_and_re_agree_on_every_glob(pattern, names):
    """The linear matcher is an optimisation of the same regex, never a different language."""
    try:
        glob = name_glob(pattern)
    except GlobError:
        return
    name = "/" + "/".join("".join(segment) for segment in names)
    assert bool(glob.matches(name)) == (re.fullmatch(glob.regex, name) is not None), (pattern, name)
