"""``[[forem]]`` manifest entries: what is accepted, and what each refusal says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.manifest import parse_manifest
from sources.forem.entry import ForemEntry, Instance, article_url_parts
from tests.conftest import REPO, cli
from warehouse.errors import ManifestError

CORPUS = '[corpus]\nname = "demo"\nnamespace = "demoCorpus"\n'
URL = "https://dev.to/ana/on-labels-2gc3"

VALID_ENTRIES = {
    "article url": f'url = "{URL}"',
    "url with query": f'url = "{URL}?utm_source=x"',
    "article id without comments": "id = 1001\ncomments = false",
    "username": 'username = "ana"',
    "organization slug": 'username = "the-org"',
    "other instance": 'username = "zed"\nbase_url = "https://community.example"',
    "url on its own instance": (
        'url = "https://community.example/zed/hi"\nbase_url = "https://community.example/"'
    ),
    "slower pace": "id = 1001\nreads_per_second = 0.5",
}

INVALID_ENTRIES = {
    "nothing named": (
        "comments = true",
        "field '(entry)': Value error, give exactly one of url, id, username (got none)",
    ),
    "two targets": (
        f'url = "{URL}"\nid = 5',
        "give exactly one of url, id, username (got url, id)",
    ),
    "url of a profile": (
        'url = "https://dev.to/ana"',
        "field 'url': Value error, must be an article URL like https://dev.to/<username>/<slug>",
    ),
    "url of a comment": (
        'url = "https://dev.to/ana/comment/3ee98"',
        "field 'url': Value error, must be an article URL like",
    ),
    "url without scheme": (
        'url = "dev.to/ana/post"',
        "field 'url': Value error, must be an http(s) URL of an article",
    ),
    "id zero": ("id = 0", "field 'id': Input should be greater than 0"),
    "id as text": ('id = "1001"', "field 'id': Input should be a valid integer"),
    "comments as text": (
        'id = 1\ncomments = "yes"',
        "field 'comments': Input should be a valid boolean",
    ),
    "username with a space": ('username = "a b"', "field 'username': String should match"),
    "base_url without scheme": (
        'id = 1\nbase_url = "dev.to"',
        "field 'base_url': Value error, must be an http(s) URL of a Forem instance",
    ),
    "url on another host than base_url": (
        f'url = "{URL}"\nbase_url = "https://community.example"',
        "url host 'dev.to' differs from base_url host 'community.example'",
    ),
    "no pace": ("id = 1\nreads_per_second = 0", "field 'reads_per_second': Input should be"),
    "user info before the host": (
        'url = "https://dev.to@evil.example/ana/post"',
        "field 'url': Value error, 'https://dev.to@evil.example/ana/post' has user info "
        "before '@': its host is 'evil.example'",
    ),
    "base_url with user info": (
        'id = 1\nbase_url = "https://dev.to:x@evil.example"',
        "field 'base_url': Value error, 'https://dev.to:x@evil.example' has user info",
    ),
    "control character in url": (
        'url = "https://dev.to/ana/po\\u0007st"',
        "field 'url': Value error, contains a control character (U+0007)",
    ),
    "typo": (
        "id = 1\ncomment = false",
        "field 'comment': unknown field; valid fields: base_url, comments, id, "
        "reads_per_second, url, username",
    ),
}


@pytest.mark.parametrize("entry", VALID_ENTRIES.values(), ids=VALID_ENTRIES.keys())
def test_valid_entries(entry: str) -> None:
    manifest = parse_manifest(CORPUS + "[[forem]]\n" + entry + "\n", Path("m.toml"))
    assert manifest.sources() == ["forem"]
    assert isinstance(manifest.entries["forem"][0], ForemEntry)


@pytest.mark.parametrize(("entry", "message"), INVALID_ENTRIES.values(), ids=INVALID_ENTRIES.keys())
def test_invalid_entries_name_the_field(entry: str, message: str) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(CORPUS + "[[forem]]\n" + entry + "\n", Path("manifests/bad.toml"))
    assert str(caught.value).startswith("manifests/bad.toml: [[forem]] entry 1")
    assert message in str(caught.value)


def test_the_instance_is_the_declared_host_and_the_environment_only_redirects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_devto = ForemEntry(url=URL)
    elsewhere = ForemEntry(url="https://community.example/zed/hi")
    assert Instance.of(on_devto) == Instance(host="dev.to", url="https://dev.to")
    assert Instance.of(elsewhere).doc_id("article", "7") == "forem/article/community.example/7"
    monkeypatch.setenv("RECEIPTS_FOREM_URL", "http://127.0.0.1:9/")
    assert Instance.of(on_devto) == Instance(host="dev.to", url="http://127.0.0.1:9")
    assert Instance.of(on_devto).doc_id("comment", "3ee98") == "forem/comment/3ee98"


def test_the_ask_the_record_manifest_declares_the_example_article() -> None:
    path = REPO / "manifests" / "ask-the-record.toml"
    result = cli("manifest", "check", path, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["corpus"], report["entries"]) == ("ask-the-record", {"forem": 1})
    [entry] = parse_manifest(path.read_text(), path).entries["forem"]
    assert entry.comments is True
    assert article_url_parts(entry.url) == (
        "https://dev.to",
        "kenielzep97",
        "my-harness-used-one-label-for-three-different-failures-2gc3",
    )
