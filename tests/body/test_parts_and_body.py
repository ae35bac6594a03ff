from __future__ import annotations

import base64

import pytest

from agentfolio.body import BodyError, ContentError, MessageBody, MessagePart, PartError, is_valid_name
from agentfolio.body.names import content_type_essence, name_problem


@pytest.mark.parametrize(
    "name",
    ["/a", "/foo/bar.png", "/sources/1/urls/5", "/a-b_c.d/E9", "/...", "/.hidden", "/a/..b", "/x.."],
)
def test_valid_names(name: str) -> None:
    assert is_valid_name(name)
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("a/b", "must start with '/'"),
        ("", "must start with '/'"),
        ("/", "no segment"),
        ("/a//b", "'//'"),
        ("/a/", "must not end with '/'"),
        ("/a/./b", "'.' or '..' segment"),
        ("/a/..", "'.' or '..' segment"),
        ("/.", "'.' or '..' segment"),
        ("/a b", "' ' at position 2"),
        ("/a\n", "'\\n' at position 2"),
        ("/caf\u00e9", "'\u00e9' at position 4"),
        ("/a*", "'*' at position 2"),
    ],
)
def test_invalid_names_say_which_rule(name: str, rule: str) -> None:
    assert not is_valid_name(name)
    problem = name_problem(name)
    assert problem is not None and rule in problem


def test_part_errors_name_the_index_and_rule() -> None:
    with pytest.raises(PartError) as exc:
        MessageBody.parse({"parts": [{"content": "ok"}, {"name": "/a/../b", "content": "x"}]})
    assert exc.value.index == 1
    assert "part 1" in str(exc.value) and "'..' segment" in str(exc.value)


def test_duplicate_names_are_refused_with_both_indexes() -> None:
    with pytest.raises(PartError, match=r"part 2: name '/a' is already used by part 0"):
        MessageBody.of([{"name": "/a"}, {"name": "/b"}, {"name": "/a"}])


def test_unnamed_parts_may_repeat() -> None:
    body = MessageBody.of([{"content": "a"}, {"content": "a"}])
    assert len(body.main) == 2


def test_prefix_names_coexist() -> None:
    body = MessageBody.of([{"name": "/sources/1"}, {"name": "/sources/1/urls/5"}])
    assert body.names() == ["/sources/1", "/sources/1/urls/5"]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"content": "x", "content_url": "https://a/b"}, "either content or content_url"),
        ({"content": "!!", "content_encoding": "base64"}, "not valid base64"),
        ({"content_encoding": "gzip"}, "content_encoding"),
        ({"content_type": None}, "not null"),
        ({"content_type": "text"}, "is not a media type"),
        ({"content_url": "not a url"}, "not an absolute URL"),
        ({"contentType": "text/plain"}, "contentType: unknown field"),
        ("text", "must be an object"),
    ],
)
def test_part_rules(part: object, message: str) -> None:
    with pytest.raises(PartError, match=message):
        MessageBody.of([part])  # type: ignore[list-item]


def test_acp_style_defaults() -> None:
    part = MessagePart.parse({"content": "hi", "content_encoding": None})
    assert part.content_type == "text/plain" and part.content_encoding == "plain"
    # A metadata-only part (ACP citation marker) is allowed and has empty content.
    marker = MessagePart.parse({"metadata": {"kind": "citation", "url": "https://x.org"}})
    assert marker.data() == b""


def test_body_json_round_trip() -> None:
    raw = {
        "parts": [
            {"content_type": "text/markdown", "content": "# Hi"},
            {"name": "/img.png", "content_type": "image/png", "content": "AAEC", "content_encoding": "base64"},
            {"name": "/ref", "content_type": "text/html", "content_url": "https://example.com/x",
             "metadata": {"kind": "citation"}},
        ]
    }
    body = MessageBody.parse(raw)
    assert MessageBody.from_json(body.to_json()) == body
    assert body.to_dict() == raw


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([1], "part 0: must be an object"),
        ({"parts": {}}, "'parts' must be a list"),
        ({"parts": [], "colour": "red"}, "unknown field"),  # "role" is accepted: a whole ACP Message
        ("x", "must be an object"),
    ],
)
def test_body_shape_errors(obj: object, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        MessageBody.parse(obj)


def test_from_json_rejects_non_json() -> None:
    with pytest.raises(BodyError, match="not JSON"):
        MessageBody.from_json(b"{nope")


# -- filesystem-like access ------------------------------------------------------


@pytest.fixture
def research() -> MessageBody:
    return MessageBody.of([
        {"content_type": "text/markdown", "content": "# Findings"},
        {"name": "/sources/1", "content_type": "text/html", "content_url": "https://a.example/1"},
        {"name": "/sources/1/urls/5", "content_type": "text/uri-list", "content": "https://b.example/"},
        {"name": "/sources/2", "content_type": "application/pdf", "content_url": "https://a.example/2"},
        {"content_type": "text/plain", "content": " and more"},
        {"name": "/report.md", "content_type": "text/markdown", "content": "body"},
    ])


def test_list_get_and_main(research: MessageBody) -> None:
    assert [p.name for p in research.list("/sources/*")] == ["/sources/1", "/sources/2"]
    assert [p.name for p in research.list("/sources/**")] == ["/sources/1", "/sources/1/urls/5", "/sources/2"]
    assert [p.name for p in research.list()] == research.names()
    assert research.get("/report.md").content == "body"  # type: ignore[union-attr]
    assert research.get("/nope") is None
    assert "/sources/2" in research and "/sources" not in research
    with pytest.raises(KeyError, match="no part named '/x'"):
        research["/x"]
    assert [p.content for p in research.main] == ["# Findings", " and more"]
    assert research.main_text() == "# Findings and more"
    assert len(research.attachments) == 4


def test_walk_is_top_down_like_os_walk(research: MessageBody) -> None:
    walked = [(d, subdirs, [p.name for p in ps]) for d, subdirs, ps in research.walk()]
    assert walked == [
        ("/", ["sources"], ["/report.md"]),
        ("/sources", ["1"], ["/sources/1", "/sources/2"]),
        ("/sources/1", ["urls"], []),
        ("/sources/1/urls", [], ["/sources/1/urls/5"]),
    ]
    assert [d for d, _, _ in research.walk("/sources/1")] == ["/sources/1", "/sources/1/urls"]
    assert list(research.walk("/missing")) == []


# -- content unification ----------------------------------------------------------


def test_content_helpers_unify_encodings() -> None:
    payload = {"answer": 42}
    b64 = base64.b64encode(b'{"answer": 42}').decode()
    plain = MessagePart(content_type="application/json", content='{"answer": 42}')
    encoded = MessagePart(content_type="application/json", content=b64, content_encoding="base64")
    data_url = MessagePart(content_type="application/json", content_url=f"data:application/json;base64,{b64}")
    pct_url = MessagePart(content_type="text/plain", content_url="data:,hello%20world")
    for part in (plain, encoded, data_url):
        assert part.json() == payload
        assert part.data() == b'{"answer": 42}'
    assert pct_url.text() == "hello world"
    latin = MessagePart(content_type="text/plain; charset=latin-1",
                        content=base64.b64encode("caf\u00e9".encode("latin-1")).decode(),
                        content_encoding="base64")
    assert latin.text() == "caf\u00e9"


def test_remote_urls_are_not_fetched_without_allow_list() -> None:
    calls: list[str] = []

    def fetch(url: str) -> bytes:
        calls.append(url)
        return b"remote"

    part = MessagePart(content_type="text/plain", content_url="http://169.254.169.254/latest/meta-data")
    with pytest.raises(ContentError, match="allow-list"):
        part.data(fetch=fetch)
    with pytest.raises(ContentError, match="not under any allowed"):
        part.data(allow=["https://cdn.example.com/"], fetch=fetch)
    assert calls == []

    ok = MessagePart(content_type="text/plain", content_url="https://cdn.example.com/files/a.txt")
    assert ok.text(allow=["https://cdn.example.com/files/"], fetch=fetch) == "remote"
    assert calls == ["https://cdn.example.com/files/a.txt"]


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://cdn.example.com/files/a", True),
        ("https://cdn.example.com/files", False),
        ("https://cdn.example.com/files/../admin", False),
        ("https://cdn.example.com/files/%2e%2e/admin", False),
        ("https://cdn.example.com/filesX/a", False),
        ("https://cdn.example.com.evil.net/files/a", False),
        ("http://cdn.example.com/files/a", False),
        ("https://cdn.example.com:8443/files/a", False),
        ("https://user@cdn.example.com/files/a", True),
        ("file:///etc/passwd", False),
    ],
)
def test_url_allow_list_matching(url: str, allowed: bool) -> None:
    from agentfolio.body.content import url_allowed

    assert url_allowed(url, ["https://cdn.example.com/files/"]) is allowed


def test_bad_data_url_and_bad_text() -> None:
    with pytest.raises(ContentError, match="no ','"):
        MessagePart(content_url="data:text/plain").data()
    with pytest.raises(ContentError, match="not utf-8 text"):
        MessagePart(content_type="text/plain", content="/w==", content_encoding="base64").text()
    with pytest.raises(ContentError, match="not JSON"):
        MessagePart(content_type="application/json", content="{").json()


def test_essence_is_lowercased_without_parameters() -> None:
    assert content_type_essence("Text/HTML; charset=UTF-8") == "text/html"
    assert MessagePart(content_type="Image/PNG").essence == "image/png"
