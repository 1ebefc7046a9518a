"""The generations as data: one value per generation, one table of versions, detection from what
each generation declares. No HTTP here: the plans are driven with recorded answers."""

from __future__ import annotations

import dataclasses
import json

import pytest

from airflow_provider_linkstats.client import generations as table
from airflow_provider_linkstats.client.contract import LINK_STAT_NAMES, LINKS, WEBSITE_STAT_NAMES
from airflow_provider_linkstats.client.detection import Ambiguous, NotTheApi, identify, probes
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.generations import (
    PHPANALYTICS_3,
    PHPANALYTICS_31,
    PHPSHORT_44,
    PHPSHORT_46,
    VersionRange,
    generation_for,
    generations,
)
from airflow_provider_linkstats.client.protocol import ApiResponse, drive
from airflow_provider_linkstats.client.records import normalize


def answer(status: int, body: object, content_type: str = "application/json") -> ApiResponse:
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    return ApiResponse(status, {"content-type": content_type}, raw, url="http://x.test/api/v1/stats/0")


V44 = answer(422, {"message": {"name": ["The selected name is invalid."]}, "status": 422})
V46 = answer(404, {"message": "Resource not found.", "status": 404})


def run(plan, *answers: ApiResponse):
    sent = []
    replies = iter(answers)

    def send(request):
        sent.append(request)
        return next(replies)

    return drive(plan, send), sent


@pytest.mark.parametrize(
    ("service", "version", "expected"),
    [
        ("links", "44", PHPSHORT_44),
        ("links", "45", PHPSHORT_44),
        ("links", "45.2", PHPSHORT_44),
        ("links", "46", PHPSHORT_46),
        ("links", 49, PHPSHORT_46),
        ("analytics", "3", PHPANALYTICS_3),
        ("analytics", "3.6", PHPANALYTICS_3),
        ("analytics", "3.7", PHPANALYTICS_31),
        ("analytics", "31", PHPANALYTICS_31),
        ("links", "auto", None),
        ("links", None, None),
    ],
)
def test_the_versions_table_names_each_versions_generation(service, version, expected):
    assert generation_for(service, version) is expected


@pytest.mark.parametrize("version", ["43", "50", "fifty", "3"])
def test_a_version_outside_the_table_is_refused_listing_the_table(version):
    with pytest.raises(LinkstatsInputError) as caught:
        generation_for("links", version)
    assert caught.value.field == "api_version"
    assert "44 to 45 (phpShort 44-45), 46 to 49 (phpShort 46+)" in str(caught.value)


def test_each_generation_is_a_value_with_its_own_names():
    assert PHPSHORT_46.wire_name("expiration_clicks") == "clicks_limit" and PHPSHORT_44.wire_name("alias") == "alias"
    assert PHPSHORT_46.lacks("disabled") and not PHPSHORT_44.lacks("disabled")
    for generation in generations("links"):
        assert set(generation.stats_names) == set(LINK_STAT_NAMES)
    for generation in generations("analytics"):
        assert set(generation.stats_names) == set(WEBSITE_STAT_NAMES)
    assert not hasattr(PHPSHORT_46, "newer") and not hasattr(PHPSHORT_46, "column")


@pytest.mark.parametrize(("reply", "expected"), [(V44, PHPSHORT_44), (V46, PHPSHORT_46)])
def test_one_probe_tells_the_listed_generations_apart(reply, expected):
    assert probes("links") == ("click",)
    (found, note), sent = run(identify("links"), reply)
    assert found is expected and len(sent) == 1
    assert dict(sent[0].params)["name"] == "click" and str(reply.status) in note


@pytest.mark.parametrize(
    "reply",
    [
        answer(404, "<html><title>404 Not Found</title></html>", "text/html"),
        # The web app's own JSON 404 for a path outside the API (a typo such as /pubilc/api/v1).
        answer(404, {"message": "This link does not exist or is disabled."}),
        answer(404, {"message": "The route pubilc/api/v1/stats/0 could not be found."}),
    ],
)
def test_an_answer_without_the_apis_shape_is_not_the_api(reply):
    with pytest.raises(NotTheApi):
        run(identify("links"), reply)


# -- a made-up generation, registered in the table alone ---------------------------------------

PHPSHORT_50 = dataclasses.replace(
    PHPSHORT_46,
    name="50",
    label="phpShort 50",
    form_fields={**PHPSHORT_46.form_fields, "alias": "slug"},
    record_keys={**PHPSHORT_46.record_keys, "alias": "slug"},
    record_marks=("slug",),
)


@pytest.fixture
def phpshort_50(monkeypatch):
    """phpShort "50", renaming ``alias`` to ``slug``: one entry and one range row, nothing else."""
    monkeypatch.setattr(table, "VERSIONS", (*table.VERSIONS, VersionRange("50", "50", PHPSHORT_50)))
    return PHPSHORT_50


def test_a_new_generation_is_one_entry_and_one_row(phpshort_50):
    assert generation_for("links", "50") is phpshort_50
    assert phpshort_50 in generations("links")
    wire = phpshort_50.to_wire(LINKS, {"url": "https://example.com", "alias": "spring", "expiration_clicks": 5})
    assert wire == {"url": "https://example.com", "slug": "spring", "clicks_limit": 5}
    record = normalize(LINKS, {"id": 1, "slug": "spring", "clicks_limit": 5, "targets_type": None})
    assert record["alias"] == "spring" and record["expiration_clicks"] == 5  # recognised by its mark


def test_generations_no_probe_tells_apart_are_named_plainly(phpshort_50):
    with pytest.raises(Ambiguous) as caught:
        run(identify("links"), V46)
    assert "cannot tell phpShort 46+ from phpShort 50" in str(caught.value)
    assert "set the connection's api_version extra" in str(caught.value)
    (found, _), _ = run(identify("links"), V44)  # the older one still stands apart
    assert found is PHPSHORT_44
