"""How a bulk launch's row is identified as the task's own (issue 44, "bulk rows without alias get no
task key"): no row goes without an alias. Every row carries the alias the user gave or one derived
from ``alias_column``; a row that ends without one is refused before any request, so the launch has
no row that only the task's key could identify. The service keeps an alias unique per domain, so a
row's create can never make a twin, and after an unknown outcome (a 504 whose commit lands later,
a killed process: tests/integration/test_clock_step_relaunch.py) the row's link is found by its
alias and taken by ``ownership.is_ours`` (every field sent, made after the first try began).
"""

from __future__ import annotations

import datetime as dt
import time
from types import SimpleNamespace

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator
from tests.conftest import fails_without_retry, links_account

WINDOW = 3  # the late_commit_window extra here (seconds)


@pytest.fixture(params=["44", "49"])
def emu(request, emulators, monkeypatch):
    with links_account(emulators, monkeypatch, request.param, late_commit_window=WINDOW, max_retries=0) as emulator:
        monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", "off")
        yield emulator


def run_try(operator, try_number: int = 1, run_started: dt.datetime | None = None):
    """``operator`` run as a try of task instance "launch" of one DAG run, as Airflow's worker does."""
    started = run_started or dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    ti = SimpleNamespace(dag_id="d", run_id="manual__1", task_id="launch", map_index=-1, try_number=try_number,
                         start_date=started, xcom_push=lambda key, value: None)  # fmt: skip
    run = SimpleNamespace(dag_id="d", run_id="manual__1", run_type="manual", start_date=started, clear_number=0,
                          run_after=started)  # fmt: skip
    context = {"params": {}, "ti": ti, "ds": "2026-12-02", "dag_run": run}
    operator.render_template_fields(context)
    return operator.execute(context)


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        (
            {"links": [{"url": "https://a.example/1", "alias": "a-1"}, {"url": "https://a.example/2"}]},
            r"links\[1\]: no alias",
        ),
        ({"links": [{"url": "https://a.example/1", "alias": ""}]}, r"links\[0\]: no alias"),
        # a column value with nothing an alias may hold derives the empty alias: refused, not left to the service
        (
            {"links": [{"url": "https://a.example/1", "sku": "!!!"}], "alias_column": "sku"},
            r"invalid value for 'alias': ''",
        ),
    ],
    ids=["no-alias", "empty-alias", "nothing-derived"],
)
def test_a_row_without_an_alias_is_refused_before_any_request(emu, arguments, match):
    with fails_without_retry(LinkstatsInputError, match=match):
        run_try(LinkstatsBulkCreateLinksOperator(task_id="launch", **arguments))
    assert emu.stats.requests() == []


def test_a_rows_create_answered_504_whose_commit_lands_later_is_found_by_its_alias_not_sent_again(emu):
    """The gateway answers one create 504 at once and the service commits it a second later: the
    row's link is looked up by its alias until it lands, taken as this try's, never sent again."""
    rows = [{"url": f"https://example.com/p/{n}", "alias": f"late-{n}", "expiration_clicks": 7} for n in range(6)]
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=1.0)
    value = run_try(LinkstatsBulkCreateLinksOperator(task_id="launch", links=rows, max_workers=1))
    stored = sorted(link["alias"] for link in emu.store.links())
    assert stored == [f"late-{n}" for n in range(6)]  # one link per row: no twin
    assert emu.stats.count(method="POST", path_prefix="/links") == 6  # the 504's create was not sent again
    assert (value["created"], value["created_earlier"], value["skipped"], value["failed"]) == (6, 0, 0, 0), value
    assert {link["made_by"] for link in value["links"].values()} == {"this try"}


def test_a_row_whose_504_landed_after_its_try_gave_up_is_the_retrys_earlier_try(emu):
    """The commit lands after the try's whole look-up window (the try fails "outcome unknown"):
    its retry's walk finds the row's link by its alias, an earlier try's; only the rest is created."""
    rows = [{"url": f"https://example.com/p/{n}", "alias": f"slow-{n}"} for n in range(4)]
    run_started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=WINDOW + 4.0)
    with pytest.raises(Exception, match="outcome|unknown|looked up"):
        run_try(LinkstatsBulkCreateLinksOperator(task_id="launch", links=rows, max_workers=1), 1, run_started)
    deadline = time.monotonic() + 15
    while len(emu.store.links()) < 4 and time.monotonic() < deadline:  # the late commit lands
        time.sleep(0.2)
    posts = emu.stats.count(method="POST", path_prefix="/links")
    value = run_try(LinkstatsBulkCreateLinksOperator(task_id="launch", links=rows, max_workers=1), 2, run_started)
    assert sorted(link["alias"] for link in emu.store.links()) == [f"slow-{n}" for n in range(4)]
    assert emu.stats.count(method="POST", path_prefix="/links") == posts  # nothing created twice, nothing left
    assert (value["created"], value["created_earlier"], value["skipped"]) == (0, 4, 0), value
    assert {link["made_by"] for link in value["links"].values()} == {"an earlier try of this run"}
