"""The rate-limit window learned from the server instead of assumed to be a minute (issue 20): each
way of learning, on a clock the test moves (tests/integration/test_rate_window_learned.py has a
delete operator learn it over real HTTP).
"""

from __future__ import annotations

import math
import time

import pytest

from airflow_provider_linkstats.client.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def answer(
    limiter: RateLimiter,
    remaining: int,
    limit: int = 20,
    status: int = 200,
    sent_at: float | None = None,
    **extra: str,
) -> None:
    headers = {"X-RateLimit-Limit": str(limit), "X-RateLimit-Remaining": str(remaining), **extra}
    limiter.observe(headers, status, sent_at)


def test_until_the_server_says_otherwise_a_window_is_a_minute():
    limiter = RateLimiter(clock=Clock())
    assert limiter.window == 60.0 and limiter.learned_from == "assumed" and not limiter.pinned


def test_retry_after_ends_the_window_seen_opening():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.reserve()
    answer(limiter, 19)  # our request opened the window at 100
    clock.now += 3
    limiter.reserve()
    answer(limiter, 0, status=429, **{"Retry-After": "7"})
    assert limiter.learned_from == "retry-after" and 10.0 <= limiter.window <= 10.3
    assert limiter.reserve() == pytest.approx(7.0, abs=0.1)


def test_x_ratelimit_reset_alone_ends_the_window_seen_opening():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.reserve()
    answer(limiter, 19)  # our request opened the window at 100
    clock.now += 3
    limiter.reserve()
    answer(limiter, 0, status=429, **{"X-RateLimit-Reset": str(math.ceil(time.time() + 7))})
    assert limiter.learned_from == "reset" and 10.0 <= limiter.window <= 11.3  # whole epoch seconds
    assert 6.0 <= limiter.reserve() <= 8.1


def test_a_429_in_a_window_opened_by_someone_else_teaches_only_its_end():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.reserve()
    answer(limiter, 4)  # 15 of 20 were used before us: we did not see this window open
    limiter.reserve()
    answer(limiter, 0, status=429, **{"Retry-After": "5"})
    assert limiter.learned_from == "assumed" and limiter.window == 60.0
    assert limiter.reserve() == pytest.approx(5.0, abs=0.5)


def test_remaining_going_up_bounds_the_window_by_the_time_since_it_opened():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    for remaining in (19, 18, 17):
        assert limiter.reserve() == 0.0
        answer(limiter, remaining)
        clock.now += 1
    clock.now = 111.0
    assert limiter.reserve() == 0.0
    answer(limiter, 19)  # a new window opened with this request: the last one lasted at most 11 s
    assert limiter.learned_from == "refill" and 11.0 <= limiter.window <= 11.3
    assert limiter.windows_seen == 1
    # The new window's budget is the server's (19 left), not what was left of the old one.
    assert limiter._remaining == 19


def test_answers_arriving_out_of_order_are_not_a_refill():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    for _ in range(3):
        limiter.reserve()  # three requests out at once
    answer(limiter, 17)  # the third one counted answers first, two still out
    clock.now += 2
    answer(limiter, 19)
    answer(limiter, 18)
    assert limiter.learned_from == "assumed" and limiter.windows_seen == 0


def test_a_late_answer_of_the_old_window_after_a_refill_teaches_nothing():
    """Seen under load: the old window's late, low answers after a refill made the next answer of
    the new window look like another refill, and the window was learnt as 1.3 s instead of 10."""
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    for remaining in (19, 18, 17):  # our requests opened the window at 100
        limiter.reserve()
        answer(limiter, remaining)
    clock.now = 109.0
    for _ in range(4):
        limiter.reserve()  # four out at once, across the window's end
    clock.now = 110.5
    answer(limiter, 19, sent_at=109.0)  # one of them opened a new window: a refill after 10.5 s
    assert limiter.learned_from == "refill" and limiter.window == pytest.approx(10.5, abs=0.5)
    window = limiter.window
    answer(limiter, 16, sent_at=109.0)  # two late answers, counted in the old window
    answer(limiter, 15, sent_at=109.0)
    limiter.reserve()
    clock.now = 111.5
    answer(limiter, 18, sent_at=111.0)  # the new window's: not a refill one second after the last
    assert limiter.window == window and limiter.windows_seen == 1


def test_a_pinned_window_is_never_relearned():
    clock = Clock()
    limiter = RateLimiter(window=60.0, clock=clock)
    limiter.reserve()
    answer(limiter, 19)
    clock.now += 5
    limiter.reserve()
    answer(limiter, 0, status=429, **{"Retry-After": "5"})
    assert limiter.window == 60.0 and limiter.learned_from == "pinned"


def test_a_window_assumed_too_short_grows_again():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limiter.reserve()
    answer(limiter, 19)
    clock.now += 2
    limiter.reserve()
    answer(limiter, 18)
    clock.now += 2
    limiter.reserve()
    answer(limiter, 19)  # refill after 4 s: the window is at most about 4 s
    assert 4.0 <= limiter.window <= 4.2
    clock.now += 4.5  # our window ended; the server's (really 6 s) did not
    limiter.reserve()
    answer(limiter, 17)  # the server still counts the old one: 17 left, not 19
    assert limiter.window > 5.0 and limiter.learned_from == "assumed"
