"""The bulk launch's progress lines (issue 32 item 2): counts apart, the rate of the last minute of
written links capped by the budget's pace, the time left from it, a line at least every ``every``
seconds while work is pending, and the rate limiter's waits said. A scripted clock drives them."""

from __future__ import annotations

import logging
import time

from airflow_provider_linkstats.drivers.progress import LaunchProgress


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_counts_apart_and_skips_do_not_make_the_rate():
    clock = Clock()
    progress = LaunchProgress(300, log=logging.getLogger("t"), clock=clock)
    for _ in range(90):
        progress.add("created_earlier")
    for _ in range(10):
        progress.add("skipped")
    clock.now += 30
    for _ in range(30):
        progress.add("created")
    line = progress.line()
    assert line.startswith(
        "created 30, created by an earlier try 90, skipped 10, updated 0, failed 0: 130/300 links done"
    )
    assert "(1.0/s over the last minute, about 3 min left)" in line  # 30 written in 30 s; 170 left at 1/s


def test_the_rate_is_the_last_minutes_and_never_above_the_budget():
    clock = Clock()
    progress = LaunchProgress(1000, log=logging.getLogger("t"), pace=lambda: 1.0, clock=clock)
    for _ in range(120):  # a burst: the first half of a window's budget goes at once
        progress.add("created")
    clock.now += 2
    assert progress.rate() == 1.0  # capped by the budget's pace
    clock.now += 120  # then two minutes of nothing: the burst is out of the window
    for _ in range(15):
        progress.add("created")
    assert progress.rate() == 15 / 60
    assert "about 58 min left" in progress.line()  # 865 left at 0.25/s: 57.7 min


def test_a_line_at_least_every_interval_while_pending_saying_the_rate_limit_wait(caplog):
    caplog.set_level(logging.INFO, logger="t")
    progress = LaunchProgress(10, log=logging.getLogger("t"), pace=lambda: 1.0, every=0.2)
    with progress:
        progress.waiting(12.0)  # what RateLimiter.on_wait tells
        time.sleep(0.7)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) >= 2, lines
    assert all("0/10 links done" in line and "waiting 12 s for the service's rate limit" in line for line in lines[:1])


def test_no_line_once_everything_is_done(caplog):
    caplog.set_level(logging.INFO, logger="t")
    progress = LaunchProgress(1, log=logging.getLogger("t"), every=0.1)
    progress.add("created")
    with progress:
        time.sleep(0.4)
    assert caplog.records == []


def test_links_a_second_capped_by_what_the_budget_allows_per_link():
    """Issue 37: 'created 60 ...: 60/125 links done (1.0/s over the last minute, about 65 s left)' while each
    link cost 2 requests under a budget of 1 a second: links came at 0.5 a second. Now the line says
    0.5/s and about 2 min left (65 links at 0.5/s: 130 s)."""
    clock = Clock()
    sent = {"n": 3}  # the walk's pages: not the links' cost
    progress = LaunchProgress(
        125, log=logging.getLogger("t"), pace=lambda: 1.0, clock=clock, requests=lambda: sent["n"]
    )
    for _ in range(60):  # the budget's first half went at once: 60 links in the first minute
        clock.now += 1
        sent["n"] += 2
        progress.add("created")
    assert progress.per_link() == 2.0 and progress.link_pace() == 0.5
    line = progress.line()
    assert "60/125 links done (0.5/s over the last minute, about 2 min left)" in line, line
