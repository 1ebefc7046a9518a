"""The bulk delete's "about N s left" follows the rate limiter's pace, not the first burst's speed."""

from __future__ import annotations

import datetime as dt
import logging
import re
import time

from airflow_provider_linkstats.operators.bulk import budget_pace, progress_line

LEFT = re.compile(r"deleted (\d+)/(\d+) links \([\d.]+/s, about (\d+) s left\)")


def test_time_left_is_capped_by_the_budgets_pace():
    # 18 of 30 went out in a burst (900/s); the budget allows 1 a second: 12 left take 12 s, not 0,
    # and the rate shown is the budget's, not the burst's.
    line = progress_line(18, 30, 0.02, 0, "links", pace=1.0)
    assert line == "deleted 18/30 links (1.0/s, about 12 s left)"  # the rate shown is capped too
    # Slower than the budget (other clients share it): the run's own rate decides.
    assert "about 24 s left" in progress_line(18, 30, 36.0, 0, "links", pace=1.0)
    # No limiter known: the whole run's rate, as before.
    assert "about 6 s left" in progress_line(10, 30, 3.0, 0, "links")


def test_budget_pace_reads_the_limiters_public_limit_and_window():
    class Limiter:
        limit, window = 60, 60.0

    assert budget_pace(Limiter()) == 1.0
    Limiter.limit = None  # the server has not said yet
    assert budget_pace(Limiter()) is None
    assert budget_pace(None) is None


def test_progress_lines_under_a_rate_limit_say_how_long_is_really_left(emu, make_hook, caplog, capsys):
    """10 requests per 2 s window: every estimate is within a factor of two of the time it took."""
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator
    from tests.conftest import run_operator

    ids = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"eta-{i}")["id"] for i in range(24)]
    task = LinkstatsDeleteLinkOperator(task_id="cleanup", link_ids=ids, max_workers=8)
    task.hook = make_hook("links", rate_limit_window=2.0)
    caplog.set_level(logging.INFO)
    emu.limiter.configure(10, 2.0)
    try:
        run_operator(task)
        finished = time.time()
    finally:
        emu.limiter.configure(None)
    # Airflow 3 logs through structlog to stdout (a time stamp first), Airflow 2 through logging.
    lines = [(record.created, record.getMessage()) for record in caplog.records]
    lines += [
        (dt.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp(), line)
        for line in capsys.readouterr().out.splitlines()
        if re.match(r"^\d{4}-\d\d-\d\dT\S+ ", line)
    ]
    estimates = [(int(match.group(3)), finished - at) for at, text in lines if (match := LEFT.search(text))]
    assert len(estimates) >= 5, lines
    for said, took in estimates:  # "about N s" is rounded to the second
        assert took / 2 - 0.5 <= said <= took * 2 + 1, (said, took, estimates)
