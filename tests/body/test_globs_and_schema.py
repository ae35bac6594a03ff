from __future__ import annotations

import re

import pytest
from wcmatch import glob as wcglob

from agentfolio.body import (
    BodyError,
    GlobError,
    MessageBody,
    MessageBodySchema,
    SchemaValidationError,
    content_type_glob,
    name_glob,
)
from agentfolio.body.globs import MAX_EXPANSIONS


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("/sources/*", ["/sources/1", "/sources/.x"], ["/sources/1/urls/5", "/sources", "/other/1"]),
        ("/sources/**", ["/sources", "/sources/1", "/sources/1/urls/5"], ["/sourcesX/1", "/x/sources/1"]),
        ("/**/*.md", ["/a.md", "/docs/x/y.md"], ["/a.mdx", "/docs/md"]),
        ("/a/**/b", ["/a/b", "/a/x/b", "/a/x/y/b"], ["/a/xb", "/ab"]),
        ("/**", ["/a", "/a/b/c"], []),
        ("/{a,b/c}/d", ["/a/d", "/b/c/d"], ["/b/d", "/c/d"]),
        ("/f.{md,{txt,rst}}", ["/f.md", "/f.txt", "/f.rst"], ["/f.", "/f.py"]),
        ("/x{,.bak}", ["/x", "/x.bak"], ["/x.b"]),
        ("/n/??", ["/n/12"], ["/n/1", "/n/123"]),
        ("/a/**/**", ["/a", "/a/b"], ["/ab"]),
    ],
)
def test_name_glob_semantics(glob: str, yes: list[str], no: list[str]) -> None:
    g = name_glob(glob)
    assert all(g.matches(n) for n in yes), [n for n in yes if not g.matches(n)]
    assert not any(g.matches(n) for n in no), [n for n in no if g.matches(n)]


@pytest.mark.parametrize(
    ("glob", "yes", "no"),
    [
        ("image/*", ["image/png", "image/svg+xml"], ["text/plain", "image"]),
        ("text/{plain,markdown}", ["text/plain", "text/markdown"], ["text/html"]),
        ("*/*", ["a/b"], []),
        ("**", ["text/plain"], []),
        ("Text/PLAIN", ["text/plain"], []),
        ("application/*+json", ["application/ld+json"], ["application/json"]),
    ],
)
def test_content_type_glob_semantics(glob: str, yes: list[str], no: list[str]) -> None:
    g = content_type_glob(glob)
    assert all(g.matches(c) for c in yes)
    assert not any(g.matches(c) for c in no)


@pytest.mark.parametrize(
    ("glob", "message"),
    [
        ("sources/*", "must start with '/'"),
        ("/a/", "ends with '/'"),
        ("/a//b", "contains '//'"),
        ("/a**", "must be a whole path segment"),
        ("/**b", "must be a whole path segment"),
        ("/{a,**}", "must be a whole path segment"),
        ("/a{", "never closed"),
        ("/a}", "unmatched '}'"),
        ("/a,b", "only allowed inside braces"),
        ("/[ab]", "'[' at position 1 is not a glob operator"),
        ("/a b", "' ' at position 2"),
        ("", "is empty"),
        ("/" + "{" * 9 + "a" + "}" * 9, "nested deeper"),
        ("/" + "x" * 600, "limit is 512"),
    ],
)
def test_bad_name_globs_are_refused_clearly(glob: str, message: str) -> None:
    with pytest.raises(GlobError, match=re.escape(message)):
        name_glob(glob)


def test_content_type_glob_without_slash_is_refused() -> None:
    with pytest.raises(GlobError, match="has no '/'"):
        content_type_glob("*")


def test_pathological_braces_are_refused_without_expanding_them() -> None:
    # 2**40 expansions if expanded: refused by counting (bench/checks.py times it).
    pattern = "/" + "{a,b}" * 40
    with pytest.raises(GlobError, match=f"more than {MAX_EXPANSIONS} alternatives"):
        name_glob(pattern)
    # Within the limit, braces compile to alternation, so the regex stays linear.
    ok = name_glob("/" + "{a,b}" * 12)
    assert len(ok.regex) < 200 and ok.matches("/" + "ab" * 6)


@pytest.mark.parametrize(
    "glob", ["/sources/*", "/a/**/b", "/**/*.md", "/{a,b/c}/d", "/f.{md,{txt,rst}}", "/n/??", "/x/*/y/*.json"]
)
@pytest.mark.parametrize(
    "name", ["/sources/1", "/sources/1/u", "/a/b", "/a/x/y/b", "/z.md", "/d/e/z.md", "/a/d", "/b/c/d",
             "/f.md", "/f.rst", "/n/12", "/x/1/y/a.json", "/.md", "/sources/.env"]
)
def test_agrees_with_wcmatch_where_semantics_coincide(glob: str, name: str) -> None:
    flags = wcglob.GLOBSTAR | wcglob.BRACE | wcglob.DOTGLOB
    assert name_glob(glob).matches(name) == wcglob.globmatch(name, glob, flags=flags)


# -- schema ----------------------------------------------------------------------

RESEARCH = {
    "parts": [
        {"content_type": "text/markdown", "required": True},
        {"name": "/sources/*", "content_type": "{text/html,application/pdf}"},
        {"name": "/sources/*/urls/*", "content_type": "text/uri-list"},
        {"name": "/summary", "required": True},
    ]
}


def test_valid_body() -> None:
    schema = MessageBodySchema.parse(RESEARCH)
    body = MessageBody.of([
        {"content_type": "text/markdown; charset=utf-8", "content": "# r"},
        {"name": "/sources/1", "content_type": "Application/PDF", "content_url": "https://x/1.pdf"},
        {"name": "/sources/1/urls/1", "content_type": "text/uri-list", "content": "https://y"},
        {"name": "/summary", "content_type": "application/octet-stream"},
    ])
    report = schema.validate_body(body)
    assert report.ok and bool(report) and str(report) == "valid (4 parts)"
    schema.check(body)


def test_report_lists_every_offending_part_and_unmet_required() -> None:
    schema = MessageBodySchema.parse(RESEARCH)
    body = MessageBody.of([
        {"content_type": "text/plain", "content": "not markdown"},
        {"name": "/sources/1", "content_type": "image/png"},
        {"name": "/elsewhere", "content_type": "text/html"},
        {"name": "/sources/2", "content_type": "text/html"},
    ])
    report = schema.validate_body(body)
    assert not report.ok
    assert [i.index for i in report.issues] == [0, 1, 2]
    assert "no part for unnamed content" not in report.issues[0].reason
    assert "content type 'text/plain' is not accepted" in report.issues[0].reason
    assert "#1 '{text/html,application/pdf}'" in report.issues[1].reason
    assert "no name glob matches '/elsewhere'" in report.issues[2].reason
    assert [m.schema_index for m in report.missing] == [0, 3]
    text = str(report)
    assert "part 2 ('/elsewhere', text/html)" in text
    assert "required schema part #3 (name '/summary', any content type, required)" in text
    with pytest.raises(SchemaValidationError) as exc:
        schema.check(body)
    assert exc.value.report == report


def test_unnamed_matching_rules() -> None:
    # No name in the schema part: only unnamed parts. No content type: any type.
    schema = MessageBodySchema.parse({"parts": [{"content_type": "text/*"}, {"name": "/**"}]})
    assert schema.matching({"content_type": "text/plain"}) == [0]
    assert schema.matching({"name": "/a", "content_type": "text/plain"}) == [1]
    assert schema.matching({"name": "/a", "content_type": "image/png"}) == [1]
    assert schema.matching({"content_type": "image/png"}) == []
    only_named = MessageBodySchema.parse({"parts": [{"name": "/**"}]})
    assert not only_named.is_valid({"parts": [{"content": "unnamed"}]})
    any_unnamed = MessageBodySchema.parse({"parts": [{}]})
    assert any_unnamed.is_valid({"parts": [{"content_type": "video/mp4"}]})
    assert not any_unnamed.is_valid({"parts": [{"name": "/a"}]})


def test_empty_body_validity_depends_only_on_required() -> None:
    assert MessageBodySchema.parse({"parts": [{"content_type": "text/*"}]}).is_valid({"parts": []})
    assert not MessageBodySchema.parse({"parts": [{"content_type": "text/*", "required": True}]}).is_valid(
        {"parts": []})
    assert MessageBodySchema.parse({"parts": []}).is_valid({"parts": []})
    assert not MessageBodySchema.parse({"parts": []}).is_valid({"parts": [{}]})


def test_one_part_can_meet_several_required_schema_parts() -> None:
    schema = MessageBodySchema.parse({"parts": [
        {"name": "/a", "required": True}, {"name": "/*", "content_type": "text/plain", "required": True}]})
    assert schema.is_valid({"parts": [{"name": "/a", "content_type": "text/plain"}]})


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"parts": [{"name": "a"}]}, r"schema part #0: name: name glob 'a' must start with '/'"),
        ({"parts": [{}, {"content_type": "*"}]}, r"schema part #1: content_type: .* has no '/'"),
        ({"parts": [{"required": "maybe"}]}, r"schema part #0: required"),
        ({"parts": [{"contentType": "x/y"}]}, r"schema part #0: contentType: unknown field"),
        ({"parts": [3]}, "schema part #0: must be an object"),
        ({"parts": [], "x": 1}, "unknown field"),
        ([], "must be an object"),
    ],
)
def test_bad_schemas(schema: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        MessageBodySchema.parse(schema)


def test_schema_json_round_trip() -> None:
    schema = MessageBodySchema.parse(RESEARCH)
    again = MessageBodySchema.from_json(schema.to_json())
    assert again == schema
    assert again.to_dict()["parts"][1] == {"name": "/sources/*", "content_type": "{text/html,application/pdf}",
                                           "required": False}


def test_validate_accepts_raw_dicts_and_part_lists() -> None:
    schema = MessageBodySchema.parse({"parts": [{"content_type": "text/plain"}]})
    assert schema.is_valid({"parts": [{"content": "x"}]})
    assert schema.is_valid(MessageBody.of([{"content": "x"}]).parts)
    with pytest.raises(BodyError, match="part 0"):
        schema.is_valid({"parts": [{"name": "bad"}]})
