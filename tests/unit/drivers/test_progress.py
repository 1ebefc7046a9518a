"""Progress lines: the rate of the last seconds, never above the rate limiter's budget (a fake clock)."""

from __future__ import annotations

from airflow_provider_linkstats.drivers.progress import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_burst_at_the_start_does_not_show_as_the_rate_under_a_budget():
    clock = Clock()
    progress = Progress(pace=1.5, window=10.0, clock=clock)
    clock.now = 0.005
    progress.update(1)  # the limiter let the first request go at once: 200/s if read naively
    assert progress.rate == 1.5  # shown: the budget's pace, not 200/s
    assert progress.line(1, 3, 0, "links") == "deleted 1/3 links (1.5/s, about 2 s left)"


def test_the_rate_follows_the_last_seconds_not_the_whole_run():
    clock = Clock()
    progress = Progress(window=10.0, clock=clock)
    for second in range(1, 31):  # 30 s at 10/s ...
        clock.now = float(second)
        progress.update(second * 10)
    assert progress.rate == 10.0
    for second in range(31, 61):  # ... then 30 s at 2/s: the line says 2/s, not the run's mean of 6/s
        clock.now = float(second)
        progress.update(300 + (second - 30) * 2)
    assert progress.rate == 2.0
    assert progress.seconds_left(120) == 60.0
    assert progress.line(360, 480, 0, "links") == "deleted 360/480 links (2.0/s, about 60 s left)"


def test_never_above_the_budget_and_the_budget_stands_in_before_any_rate():
    clock = Clock()
    progress = Progress(pace=1.0, window=10.0, clock=clock)
    assert progress.rate == 0.0 and progress.seconds_left(30) == 30.0  # nothing done yet: the budget's pace
    for second in range(1, 6):
        clock.now = float(second)
        progress.update(second * 50)  # 50/s measured (another client's share freed up, or a burst)
    assert progress.rate == 1.0 and progress.seconds_left(30) == 30.0
    slower = Progress(pace=1.0, window=10.0, clock=clock)
    clock.now += 10
    slower.update(5)  # 0.5/s: slower than the budget, the measured rate decides
    assert slower.rate == 0.5 and slower.seconds_left(10) == 20.0


def test_failures_are_counted_apart_and_a_finished_run_says_no_time_left():
    clock = Clock()
    progress = Progress(clock=clock)
    clock.now = 2.0
    progress.update(10)
    assert progress.line(10, 10, 2, "links") == "deleted 8/10 links (5.0/s, 2 failed)"


class BurstLimiter:
    """What Progress reads of a rate limiter: its budget, and how many requests may still go at once."""

    limit, window = 60, 60.0

    def __init__(self, burst: int) -> None:
        self.burst = burst


def test_work_within_the_limiters_burst_is_not_slowed_to_the_budgets_pace():
    """Before: 'deleted 1/3 links (1.0/s, about 2 s left)', then 'finished in 0.0 s'."""
    clock = Clock()
    progress = Progress(limiter=BurstLimiter(burst=27), clock=clock)
    clock.now = 0.005
    progress.update(1)
    assert progress.rate == 1.0  # the budget's pace still caps the rate shown
    assert progress.seconds_left(2) < 0.1  # but the 2 left go at once: the limiter lets 27 more go now
    assert progress.line(1, 3, 0, "links") == "deleted 1/3 links (1.0/s, about 1 s left)"
    drained = Progress(limiter=BurstLimiter(burst=0), clock=clock)
    clock.now = 1.0
    drained.update(1)
    assert drained.seconds_left(2) == 2.0  # no burst left: at the budget's pace


def test_the_rate_is_the_one_of_the_last_minute():
    clock = Clock()
    progress = Progress(clock=clock)
    assert progress.window == 60.0
    for second in range(1, 121):  # a minute at 10/s, then a minute at 2/s
        clock.now = float(second)
        progress.update(second * 10 if second <= 60 else 600 + (second - 60) * 2)
    assert progress.rate == 2.0


def test_the_rate_limiter_tells_each_wait_as_it_begins():
    from airflow_provider_linkstats.client.ratelimit import RateLimiter

    clock = Clock()
    limiter = RateLimiter(window=10.0, clock=clock)
    told: list[float] = []
    limiter.on_wait = told.append
    limiter.reserve()
    limiter.observe({"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0"}, 200)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    assert limiter.wait(sleep=sleep) == told[0] and 9.9 < told[0] <= 10.1


# -- in the job's own units (issue 37 item 7) ----------------------------------------------------------


def budget_of_one_a_second(clock):
    """A real RateLimiter that has heard the service's budget: 60 requests a minute."""
    from airflow_provider_linkstats.client.ratelimit import RateLimiter

    limiter = RateLimiter(window=60.0, clock=clock)
    limiter.observe({"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "60"}, 200)
    return limiter


def test_rate_and_time_left_are_in_units_capped_by_the_budget_per_unit():
    """Each unit costs 2 requests under a budget of 1 request a second: 0.5 units a second at most.
    Before: '1.0/s, about 60 s left' for 60 units left, which took 120 s."""
    clock = Clock()
    limiter = budget_of_one_a_second(clock)
    limiter.sent = 7  # the listing's pages before the run (answered): not its units' cost
    progress = Progress(limiter=limiter, clock=clock)
    for second in range(1, 41):  # a burst: 40 units in 40 s (2 requests each, the budget's first half)
        limiter.sent += 2
        clock.now = float(second)
        progress.update(second)
    assert progress.per_unit == 2.0 and progress.unit_pace == 0.5
    assert progress.rate == 0.5  # measured 1.0/s, but the budget allows 0.5 units a second
    assert progress.seconds_left(60, burst=0) == 120.0
    assert progress.line(40, 100, 0, "links") == "deleted 40/100 links (0.5/s, about 2 min left)"


def test_a_unit_of_one_request_is_capped_at_the_request_pace_as_before():
    clock = Clock()
    limiter = budget_of_one_a_second(clock)
    progress = Progress(limiter=limiter, clock=clock)
    for second in range(1, 11):
        limiter.sent += 1
        clock.now = float(second)
        progress.update(second * 2)  # 2 units a request (a page of a listing, say)
    assert progress.per_unit == 0.5 and progress.unit_pace == 2.0 and progress.rate == 2.0


def test_after_a_pause_the_rate_is_the_units_of_the_last_minute():
    """One way to count for every job (issue 38): the units done since the window's start, over the
    window. Before, 15 units after two idle minutes were read over the span back to the sample before
    the window (15 in 121 s: 0.12/s) while the launch's own count said 15 in the last minute."""
    clock = Clock()
    progress = Progress(clock=clock)
    clock.now = 1.0
    progress.update(120)
    clock.now = 122.0
    for done in range(121, 136):
        progress.update(done)
    assert progress.rate == 15 / 60
    clock.now = 200.0  # a minute of nothing since: nothing done in the last minute
    assert progress.rate == 0.0
