"""What both phpShort generations share, checked on each: the pixel types of config/pixels.php
("x", not "twitter"), and v44's language targeting (target_type 3), which its docs leave out."""

from __future__ import annotations

import pytest
import requests

from airflow_provider_linkstats.emulator import Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import Api, form

PIXEL_TYPES = ("adroll", "bing", "facebook", "google-ads", "google-analytics", "google-tag-manager", "linkedin",
               "pinterest", "quora", "x")  # fmt: skip


@pytest.fixture(scope="module")
def emu49():
    with Emulator(api_keys=(API_KEY,), links_version="49") as running:
        yield running


@pytest.fixture(params=["44", "49"])
def api(request, emulator, emu49):
    emu = emulator if request.param == "44" else emu49
    emu.reset()
    assert emu.links_version == request.param
    yield Api(emu.url)
    emu.reset()


def test_every_pixel_type_of_real_installs_is_taken_and_twitter_is_not(api):
    for kind in PIXEL_TYPES:
        response = api.post("/pixels", form({"name": kind, "type": kind, "value": "123"}))
        assert response.status_code == 201, (kind, response.text)
    refused = api.post("/pixels", form({"name": "t", "type": "twitter", "value": "123"}))
    assert refused.status_code == 422 and list(refused.json()["message"]) == ["type"]


def test_language_targeting_on_v44_follows_accept_language(emulator):
    emulator.reset()
    api = Api(emulator.url)
    rules = [{"key": "de", "value": "https://de.example.com"}, {"key": "fr", "value": "https://fr.example.com"}]
    created = api.post("/links", form({"url": "https://example.com/", "domain_id": 1, "alias": "lang",
                                       "target_type": 3, "language": rules}))  # fmt: skip
    assert created.status_code == 201, created.text
    shown = api.get(f"/links/{created.json()['data']['id']}").json()["data"]
    assert (shown["target_type"], shown["language_target"]) == (3, rules)

    def goes(accept_language: str) -> str:
        headers = {"Accept-Language": accept_language}
        response = requests.get(f"{emulator.url}/lang", headers=headers, allow_redirects=False, timeout=10)
        return response.headers["location"]

    assert goes("de-DE,de;q=0.9,en;q=0.8") == "https://de.example.com"  # v44 reads the first two letters
    assert goes("fr") == "https://fr.example.com"
    assert goes("en-US") == "https://example.com/"
    bad = api.post("/links", form({"url": "https://example.com/", "domain_id": 1, "target_type": 3,
                                   "language": [{"key": "german", "value": "https://de.example.com"}]}))  # fmt: skip
    assert bad.status_code == 422 and list(bad.json()["message"]) == ["language.0.key"]
    emulator.reset()
