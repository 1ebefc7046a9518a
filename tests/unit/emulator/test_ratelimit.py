"""Rate limits as a real install applies them, under a scaled window (20 per 2 s for 60 per 60 s).

phpShort: per client IP before authentication, and per key (twice the IP limit) after it;
phpAnalytics: per client IP. Every throttled answer carries the limit headers; a 429 adds
Retry-After and X-RateLimit-Reset. Windows follow the emulator's clock.
"""

from __future__ import annotations

import time

import pytest
import requests

from airflow_provider_linkstats.emulator import Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import Api
from tests.unit.emulator.test_process import cli

OTHER_KEY = "rate-limit-other-key"


@pytest.fixture(scope="module")
def limited():
    with Emulator(api_keys=(API_KEY, OTHER_KEY), rate_limit=20, rate_limit_window=2) as running:
        yield running


@pytest.fixture
def lim(limited):
    limited.reset()
    limited.set_rate_limit(20, window=2)
    yield limited
    limited.reset()


def test_limits_are_off_by_default_in_unit_tests(emu):
    responses = [Api(emu.url).get("/links") for _ in range(70)]
    assert {r.status_code for r in responses} == {200}
    assert "X-RateLimit-Limit" not in responses[-1].headers


def test_every_answer_carries_the_limit_headers_and_the_21st_is_429(lim):
    api = Api(lim.url)
    remaining = []
    for _ in range(20):
        response = api.get("/links")
        assert response.status_code == 200 and response.headers["X-RateLimit-Limit"] == "20"
        remaining.append(int(response.headers["X-RateLimit-Remaining"]))
    assert remaining == list(range(19, -1, -1))
    throttled = api.get("/links")
    assert throttled.status_code == 429
    assert throttled.json() == {"message": "Too Many Attempts."}
    assert throttled.headers["X-RateLimit-Remaining"] == "0"
    assert 1 <= int(throttled.headers["Retry-After"]) <= 2
    reset_at = int(throttled.headers["X-RateLimit-Reset"])
    assert abs(reset_at - (lim.clock.now().timestamp() + int(throttled.headers["Retry-After"]))) <= 2
    assert lim.stats.count(status=429) == 1 and lim.stats.endpoints()["GET /links"] == {"200": 20, "429": 1}


def test_a_new_window_opens_when_the_emulators_clock_moves(lim):
    api = Api(lim.url)
    for _ in range(20):
        api.get("/links")
    assert api.get("/links").status_code == 429
    lim.clock.advance(2)
    response = api.get("/links")
    assert response.status_code == 200 and response.headers["X-RateLimit-Remaining"] == "19"


def test_recovers_after_the_real_window(lim):
    lim.set_rate_limit(3, window=0.5)
    api = Api(lim.url)
    assert [api.get("/links").status_code for _ in range(4)] == [200, 200, 200, 429]
    time.sleep(0.6)
    assert api.get("/links").status_code == 200


def test_the_client_ip_limit_comes_before_authentication(lim):
    bad = Api(lim.url, key="wrong-key")
    assert {bad.get("/links").status_code for _ in range(20)} == {401}
    assert bad.get("/links").status_code == 429  # counted although never authenticated
    assert Api(lim.url).get("/links").status_code == 429  # same IP, same budget


def test_a_load_balancers_forwarded_address_is_counted_from_loopback(lim):
    """Behind Laravel's TrustProxies a trusted proxy's request counts for the address its
    X-Forwarded-For ends with: two forwarded clients have a budget each."""
    first, second = Api(lim.url), Api(lim.url)
    first.session.headers["X-Forwarded-For"] = "203.0.113.7, 10.0.0.1"  # the proxy appended 10.0.0.1
    second.session.headers["X-Forwarded-For"] = "10.0.0.2"
    assert [first.get("/links").status_code for _ in range(21)] == [200] * 20 + [429]
    assert second.get("/links").status_code == 200  # another address, its own budget
    plain = Api(lim.url)
    assert plain.get("/links").status_code == 200  # the proxy's own address is another one still


def test_the_per_key_limit_after_authentication(lim):
    lim.set_rate_limit(50, window=60, key_limit=5)
    first, second = Api(lim.url), Api(lim.url, key=OTHER_KEY)
    assert [first.get("/links").status_code for _ in range(6)] == [200] * 5 + [429]
    throttled = first.get("/links")
    assert throttled.status_code == 429 and throttled.json() == {"message": "Too Many Attempts."}
    assert throttled.headers["X-RateLimit-Limit"] == "50"  # the outer (per IP) limiter writes the headers last
    assert "Retry-After" in throttled.headers
    assert second.get("/links").status_code == 200  # another key, its own budget


def test_the_analytics_service_has_its_own_budget(lim):
    lim.set_rate_limit(3, window=60, analytics_limit=2)
    links, analytics = Api(lim.url), Api(lim.analytics_url)
    assert [analytics.get("/websites").status_code for _ in range(3)] == [200, 200, 429]
    assert analytics.get("/websites").headers["X-RateLimit-Limit"] == "2"
    assert links.get("/links").status_code == 200


def test_a_429_without_accept_json_is_html(lim):
    lim.set_rate_limit(1, window=60)
    url = lim.url + "/api/v1/links"
    requests.get(url, timeout=5)
    response = requests.get(url, timeout=5)
    assert response.status_code == 429 and response.headers["Content-Type"].startswith("text/html")


def test_switched_at_runtime_over_the_admin_route(lim):
    admin = lim.url + "/__emulator__/rate_limit"
    assert requests.post(admin, json={"limit": 2, "window": 60}, timeout=5).json()["per_key"] == 4
    api = Api(lim.url)
    assert [api.get("/links").status_code for _ in range(3)] == [200, 200, 429]
    assert requests.post(admin, json={"limit": None}, timeout=5).json()["per_ip"] is None
    response = api.get("/links")
    assert response.status_code == 200 and "X-RateLimit-Limit" not in response.headers
    assert requests.post(admin, json={"limit": 0}, timeout=5).status_code == 422


def test_the_cli_flags_turn_the_limits_on():
    with cli("--api-key", API_KEY, "--rate-limit", "3", "--rate-limit-window", "60") as urls:
        api = Api(urls["links"])
        answers = [api.get("/links") for _ in range(4)]
        assert [r.status_code for r in answers] == [200, 200, 200, 429]
        assert answers[0].headers["X-RateLimit-Limit"] == "3"


def test_moving_the_clock_back_does_not_hold_a_window_open_for_the_distance_travelled():
    from airflow_provider_linkstats.emulator.clock import Clock
    from airflow_provider_linkstats.emulator.ratelimit import RateLimiter

    clock = Clock()
    limiter = RateLimiter(clock)
    limiter.configure(2, 60.0)
    clock.advance(seconds=7200)
    assert limiter.hit(("ip",), 2).allowed and limiter.hit(("ip",), 2).allowed
    assert not limiter.hit(("ip",), 2).allowed
    clock.reset()  # two hours back: the window that began "later" is over
    assert limiter.hit(("ip",), 2).allowed
