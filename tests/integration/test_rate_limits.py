"""Staying under a service's request budget: the rate limiter, alone and inside the hook.

The server here is a small fixed-window limiter like Laravel's (each window counts from its first
request; ``X-RateLimit-*`` on every answer, 429 with ``Retry-After`` past the limit), scaled down
so that a test sees many windows in seconds.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from airflow_provider_linkstats.client import LinkstatsRateLimitError
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from tests.conftest import connection_json


class FixedWindow:
    """The server side: ``limit`` requests per ``window`` seconds, counted from a window's first request."""

    def __init__(self, limit: int, window: float) -> None:
        self.limit, self.window = limit, window
        self.lock = threading.Lock()
        self.started = None
        self.count = 0
        self.throttled = 0
        self.served = 0

    def __call__(self, record: dict) -> tuple:
        with self.lock:
            now = time.monotonic()
            if self.started is None or now - self.started >= self.window:
                self.started, self.count = now, 0
            self.count += 1
            remaining = max(self.limit - self.count, 0)
            headers = {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": str(remaining)}
            if self.count > self.limit:
                self.throttled += 1
                wait = self.started + self.window - now
                headers["Retry-After"] = str(max(1, round(wait)))
                return ("respond", 429, {"message": "Too Many Attempts."}, headers)
            self.served += 1
            if record["method"] == "DELETE":
                body = {"id": int(record["path"].rsplit("/", 1)[1]), "object": "link", "deleted": True}
                return ("respond", 200, {**body, "status": 200}, headers)
            return ("respond", 200, {"data": {"id": 1, "alias": "a"}, "status": 200}, headers)


# -- the limiter on its own, on a clock the test moves ------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def headers(limit: int, remaining: int) -> dict[str, str]:
    return {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(remaining)}


def test_first_half_of_the_budget_goes_at_once_then_the_rest_is_spread_over_the_window():
    clock = Clock()
    limiter = RateLimiter(window=60.0, clock=clock)
    assert limiter.reserve() == 0.0
    limiter.observe(headers(60, 59), 200)  # the window opened now: it ends in 60 s
    sent_at_once = 1
    while limiter.reserve() == 0.0:
        limiter.observe(headers(60, 59 - sent_at_once), 200)
        sent_at_once += 1
    assert sent_at_once == 31  # half of 60 at once (the first request included), then pacing
    wait = limiter.reserve()
    assert 1.5 < wait < 2.5  # 30 left over about 60 s: one every 2 s or so


def test_an_empty_budget_waits_for_the_window_to_end():
    clock = Clock()
    limiter = RateLimiter(window=10.0, clock=clock)
    limiter.reserve()
    limiter.observe(headers(5, 0), 200)  # another client used the rest
    assert limiter.reserve() == pytest.approx(10.0, abs=0.1)
    clock.now += 10.1
    assert limiter.reserve() == 0.0  # a new window, a new budget


def test_429_without_any_header_leaves_the_pace_to_the_retry_backoff():
    limiter = RateLimiter(window=60.0, clock=Clock())
    limiter.reserve()
    limiter.observe({}, 429)
    assert limiter.throttled == 1 and limiter.reserve() == 0.0


def test_a_wait_longer_than_allowed_is_an_error_at_once():
    clock = Clock()
    limiter = RateLimiter(window=60.0, clock=clock)
    limiter.reserve()
    limiter.observe({"Retry-After": "300"}, 429)
    slept: list[float] = []
    with pytest.raises(LinkstatsRateLimitError, match="max_rate_limit_wait"):
        limiter.wait(max_wait=120.0, sleep=slept.append)
    assert slept == []


# -- inside the hook, against a real HTTP server -----------------------------------------------------


def test_threads_of_one_hook_share_one_budget_and_meet_no_429(scripted, make_hook):
    server = FixedWindow(limit=30, window=1.0)
    scripted.set_default(server)
    links = make_hook("links", scripted.url, rate_limit_window=1.0, retry_wait=0.01)
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(links.get_link, range(1, 151)))
    elapsed = time.monotonic() - started
    assert server.served == 150 and server.throttled == 0
    # 150 requests at 30 a second cannot take less than 4 full windows; pacing costs little more.
    assert 4.0 <= elapsed <= 150 / 30 * 1.5, elapsed


def test_bulk_delete_under_the_limit_loses_nothing_and_says_how_far_it_is(scripted, make_hook, caplog, capsys):
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator
    from tests.conftest import run_operator

    server = FixedWindow(limit=50, window=1.0)
    scripted.set_default(server)
    task = LinkstatsDeleteLinkOperator(task_id="cleanup", link_ids=list(range(1, 401)), max_workers=8)
    task.hook = make_hook("links", scripted.url, rate_limit_window=1.0)  # the scaled server's window
    deleted, _ = run_operator(task)
    assert deleted == list(range(1, 401))
    assert server.served == 400 and server.throttled <= 1
    logged = caplog.text + capsys.readouterr().out
    assert "deleted 400/400 links (" in logged and "/s" in logged and "left)" in logged


def test_retry_after_within_the_allowed_wait_is_waited_out(scripted, make_hook):
    scripted.add(("respond", 429, {"message": "Too Many Attempts."}, {"Retry-After": "1"}))
    scripted.add(("respond", 200, {"data": {"id": 5}, "status": 200}))
    links = make_hook("links", scripted.url, retry_wait=0.01)
    started = time.monotonic()
    assert links.get_link(5)["id"] == 5
    assert time.monotonic() - started >= 1.0 and len(scripted.requests) == 2


def test_retry_after_beyond_max_rate_limit_wait_fails_at_once_saying_so(scripted, make_hook, monkeypatch):
    scripted.set_default(("respond", 429, {"message": "Too Many Attempts."}, {"Retry-After": "300"}))
    links = make_hook("links", scripted.url)
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, max_rate_limit_wait=60)
    )
    started = time.monotonic()
    with pytest.raises(LinkstatsRateLimitError) as caught:
        links.get_link(5)
    assert time.monotonic() - started < 5 and len(scripted.requests) == 1
    message = str(caught.value)
    assert "Too Many Attempts." in message and "300 s" in message and "max_rate_limit_wait (60 s" in message


def test_bulk_delete_of_2000_links_under_the_emulators_limit_has_no_failure(emu, make_hook, caplog, capsys):
    """The real budget's shape (a fixed window, per client address) scaled from 60 a minute to 200 a second."""
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator
    from tests.conftest import run_operator

    ids = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"bulk-{i}")["id"] for i in range(2000)]
    task = LinkstatsDeleteLinkOperator(task_id="cleanup", link_ids=ids, max_workers=8)
    task.hook = make_hook("links", rate_limit_window=1.0)
    emu.limiter.configure(200, 1.0)
    emu.stats.reset()
    try:
        started = time.monotonic()
        deleted, _ = run_operator(task)
        elapsed = time.monotonic() - started
    finally:
        emu.limiter.configure(None)
    assert deleted == sorted(ids) and emu.store.links() == []
    throttled = emu.stats.count(status=429)
    assert throttled <= 2, f"{throttled} answers of 429"
    assert emu.stats.count(method="DELETE", status=200) == 2000
    # 10 windows of 200: nothing can be faster than 9 s. The upper bound only catches a window
    # taken for a minute (10 minutes); on a loaded 2-core machine 2,000 requests and their answers
    # alone have taken over 15 s of CPU. make bench measures the ratio to the ideal.
    assert 9.0 <= elapsed <= 60, elapsed
    assert "deleted 2000/2000 links (" in caplog.text + capsys.readouterr().out
