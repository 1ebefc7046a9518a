"""Messages a user reads after a failed task name the thing to fix (issue 32 item 4).

- a 404 on an id the request refers to (``domain_id``, ``space_id``, ``pixel_ids``) names the field
  and the value, not only Laravel's "No query results for model [App\\Models\\Domain]." (phpShort
  46+ answers that for an unknown domain before it validates anything);
- a route miss (a typo in the API path: real installs answer ``{"message": ""}`` to a path outside
  the API) names the connection's Base URL to fix;
- the API's own "no such record" stays as it was;
- a bulk launch names its bad rows by the file's line (and the alias), one sentence each, with no
  doubled punctuation.

Real HTTP on 127.0.0.1: the scripted server (the answers above, word for word) and the emulator.
"""

from __future__ import annotations

import re

import pytest

from airflow_provider_linkstats.client.errors import (
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsRouteMissError,
)
from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator
from tests.conftest import connection_json, fails_without_retry, run_operator

pytestmark = pytest.mark.timeout(60)

CONN = "linkstats_links_default"


@pytest.fixture
def links(make_hook, scripted):
    return make_hook("links", scripted.url, retry_wait=0.01, max_retries=0)


# -- a 404 on a referenced id names the field and the value ------------------------------------------


@pytest.mark.parametrize(
    ("fields", "model", "said"),
    [
        ({"domain_id": 999}, "Domain", "domain_id=999 is not a domain of this account"),
        ({"space_id": 77}, "Space", "space_id=77 is not a space of this account"),
        ({"pixel_ids": [3, 404]}, "Pixel", "pixel_ids=[3, 404] holds one that is not a pixel of this account"),
    ],
)
def test_a_404_on_a_referenced_id_names_the_field_and_the_value(links, scripted, fields, model, said):
    laravel = f"No query results for model [App\\Models\\{model}]."
    scripted.add(("respond", 404, {"message": laravel}))
    with pytest.raises(LinkstatsNotFoundError) as caught:
        links.create_link(url="https://example.com/spring", alias="spring", **fields)
    text = str(caught.value)
    assert text.startswith(f"POST {scripted.url}/public/api/v1/links HTTP 404: {said} (the service answered "), text
    assert laravel in text.replace("\\\\", "\\") and f"[connection {CONN!r}]" in text
    field = next(iter(fields))
    assert text.endswith(f". Check {field}: give the id of a {model.lower()} this account can use"), text
    assert ".." not in text


def test_an_unknown_domain_on_phpshort_49_names_domain_id(emulators, make_hook, monkeypatch):
    """The emulator of phpShort 49 answers an unknown domain_id as the real one: 404, Laravel's words."""
    emu = emulators("49")
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    hook = make_hook("links", max_retries=0)
    with pytest.raises(LinkstatsNotFoundError) as caught:
        hook.create_link(url="https://example.com/spring", alias="spring-404", domain_id=987654)
    text = str(caught.value)
    assert "HTTP 404: domain_id=987654 is not a domain of this account" in text, text
    assert "Check domain_id: give the id of a domain this account can use" in text


# -- a route miss names the Base URL -----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"message": ""},  # phpShort 49 and phpAnalytics as observed: Laravel's route miss, rendered as JSON
        {"message": "The route pubilc/api/v1/links could not be found."},  # other Laravel builds
        {"detail": "Not Found"},  # a bare ASGI app in front of nothing
    ],
)
def test_a_route_miss_names_the_base_url_to_fix(links, scripted, body):
    scripted.add(("respond", 404, body))
    with pytest.raises(LinkstatsRouteMissError) as caught:
        links.list_links(search="promo", max_items=1)
    text = str(caught.value)
    root = f"{scripted.url}/public/api/v1"
    url = f"{root}/links?search=promo&per_page=100"
    assert text.startswith(f"GET {url} HTTP 404: the service has no route /links "), text
    assert f"under {root} (a 404 with " in text and "a path outside its API)" in text
    assert text.endswith(
        f"[connection {CONN!r}]. Check the Base URL of connection {CONN!r}: the API usually answers at <site>/api/v1 "
        "or <site>/public/api/v1"
    ), text
    if body == {"message": ""}:
        assert "(a 404 with an empty message:" in text


def test_a_route_miss_is_never_a_record_already_gone(links, scripted):
    """A delete with missing_ok counts the API's 404 as "already deleted"; a 404 from outside the
    API (a Base URL typo) deleted nothing, so it fails, naming the Base URL, and is not retried."""
    from airflow_provider_linkstats.hooks.outcomes import retry_advice

    scripted.add(("respond", 404, {"message": ""}))
    with pytest.raises(LinkstatsRouteMissError) as caught:
        links.delete_link(41, missing_ok=True)
    assert "Base URL" in str(caught.value)
    assert not isinstance(caught.value, LinkstatsNotFoundError)
    assert retry_advice(caught.value)[0] == "fail"
    scripted.add(("respond", 404, {"message": "Resource not found.", "status": 404}))
    assert links.delete_link(41, missing_ok=True) is False  # the API's own: gone already


def test_the_apis_own_not_found_is_still_about_the_record(links, scripted):
    scripted.add(("respond", 404, {"message": "Resource not found.", "status": 404}))
    with pytest.raises(LinkstatsNotFoundError) as caught:
        links.get_link(41)
    text = str(caught.value)
    assert text == f"GET {scripted.url}/public/api/v1/links/41 HTTP 404: Resource not found. [connection {CONN!r}]"


# -- bulk rows are named by the file's line and the alias, one sentence each ---------------------------


def write_csv(tmp_path, lines: list[str]) -> str:
    path = tmp_path / "autumn.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"file://{path}"


def bulk(**arguments) -> LinkstatsBulkCreateLinksOperator:
    return LinkstatsBulkCreateLinksOperator(task_id="launch", **arguments)


def test_bad_csv_rows_are_named_by_their_line_and_alias(emu, tmp_path):
    source = write_csv(
        tmp_path,
        [
            "sku,url",  # line 1: the header
            "A1,https://shop.example.com/a1",
            "A2,https://shop.example.com/a2",
            "",  # a blank line: skipped, still counted
            "A3,ftp://shop.example.com/a3",  # line 5
            'A4,"https://shop.example.com/a4"',
            '"A 2",https://shop.example.com/a2-again',  # line 7: autumn-a-2, another alias
            "A2,https://shop.example.com/a2-twin",  # line 8: autumn-a2 again
            ",https://shop.example.com/no-sku",  # line 9: no sku
        ],
    )
    with fails_without_retry(LinkstatsInputError) as caught:
        run_operator(bulk(source=source, alias_column="sku", alias_prefix="autumn-"))
    text = str(caught.value.__cause__)
    lines = text.splitlines()
    assert lines[0] == f"3 of 7 rows of source {source!r} are invalid; nothing was sent:", text
    assert lines[1].startswith("- line 5 (alias 'autumn-a3'): invalid value for 'url': 'ftp://shop.example.com/a3'; ")
    assert lines[2] == "- line 8 (alias 'autumn-a2'): the alias again, first on line 3."
    assert lines[3] == "- line 9: no 'sku' value to derive the alias from."
    for line in lines[1:]:  # one sentence each: one full stop, at the end
        assert line.endswith(".") and not line.endswith(".."), line
    assert ".." not in text and "Allowed: every row valid" not in text
    assert emu.stats.requests() == []


def test_bad_items_of_a_list_are_named_by_their_index(emu):
    links = [
        {"url": "https://a.example", "alias": "a"},
        {"url": "ftp://b.example", "alias": "b"},
        {"url": "https://c.example", "alias": "a"},
        {"url": "https://d.example"},
    ]
    with fails_without_retry(LinkstatsInputError) as caught:
        run_operator(bulk(links=links))
    lines = str(caught.value.__cause__).splitlines()
    assert lines[0] == "3 of 4 rows of links are invalid; nothing was sent:"
    assert lines[1].startswith("- links[1] (alias 'b'): invalid value for 'url': 'ftp://b.example'; allowed: ")
    assert lines[2] == "- links[2] (alias 'a'): the alias again, first at links[0]."
    assert lines[3] == "- links[3]: no alias (give one per link, or alias_column)."
    assert not any(re.search(r"\.\.$", line) for line in lines)
    assert emu.stats.requests() == []


def test_an_input_error_never_ends_in_two_full_stops():
    error = LinkstatsInputError("url", "ftp://x", "an http(s) URL, e.g. https://example.com/.")
    assert str(error) == "Invalid value for 'url': 'ftp://x'. Allowed: an http(s) URL, e.g. https://example.com/."


def test_bad_items_of_a_json_file_are_named_by_their_place_in_it(emu, tmp_path):
    path = tmp_path / "spring.json"
    path.write_text('[{"url": "https://a.example", "alias": "a"}, {"url": "mailto:b@example.com", "alias": "b"}]')
    with fails_without_retry(LinkstatsInputError) as caught:
        run_operator(bulk(source=f"file://{path}"))
    lines = str(caught.value.__cause__).splitlines()
    assert lines[0] == f"1 of 2 rows of source 'file://{path}' are invalid; nothing was sent:"
    assert lines[1].startswith("- item 2 (alias 'b'): invalid value for 'url': 'mailto:b@example.com'; allowed: ")
    assert emu.stats.requests() == []
