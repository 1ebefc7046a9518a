"""The emulator's own form decoder follows PHP's $_POST rules and Laravel's input middleware."""

from __future__ import annotations

from airflow_provider_linkstats.emulator.formdata import decode, decode_body
from tests.support.emulator_http import Api


def test_brackets_nest_and_empty_brackets_append():
    data = decode(b"country%5B0%5D%5Bkey%5D=US&country%5B0%5D%5Bvalue%5D=https%3A%2F%2Fa&pixel_ids[]=5&pixel_ids[]=6")
    assert data == {"country": {0: {"key": "US", "value": "https://a"}}, "pixel_ids": {0: "5", 1: "6"}}


def test_php_name_rules_last_value_wins_dots_become_underscores():
    assert decode("a=1&a=2&x.y=3&p q=4&[bad]=5") == {"a": "2", "x_y": "3", "p_q": "4"}


def test_scalar_and_array_stay_distinct():
    assert decode("pixel_ids=5") == {"pixel_ids": "5"}
    assert decode("pixel_ids[]=5") == {"pixel_ids": {0: "5"}}


def test_strings_are_trimmed_and_empty_ones_are_null():
    assert decode("alias=%20%20&url=%20https%3A%2F%2Fe.com%20&rotation[0][value]=") == {
        "alias": None,
        "url": "https://e.com",
        "rotation": {0: {"value": None}},
    }


def test_json_bodies_are_input_too():
    body = b'{"url": "https://e.com", "domain_id": 1, "disabled": true, "pixel_ids": [3]}'
    assert decode_body(body, "application/json") == {
        "url": "https://e.com",
        "domain_id": "1",
        "disabled": "1",
        "pixel_ids": {0: "3"},
    }


def test_a_json_create_over_http(emu):
    api = Api(emu.url)
    response = api.session.post(api.root + "/links", json={"url": "https://e.com", "domain_id": 1}, timeout=10)
    assert response.status_code == 201 and response.json()["data"]["url"] == "https://e.com"
