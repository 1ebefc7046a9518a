"""Ownership by identity (issue 44 items 3-5): a create without alias carries its task instance's own
key, and a user's alias is this task's only with every field sent and a creation after the first try.

Each test runs the create operator as Airflow's worker would, with the context of a real task
instance (DAG id, run id, task id, map index, its try and its run), against the emulator, whose
store says how many links exist and what each holds.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsExistsError
from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
from tests.conftest import links_account

WINDOW = 2  # the late_commit_window extra here (seconds)
URL = "https://example.com/landing"
UTC = dt.timezone.utc
TRY_FAILED = (LinkstatsError, AirflowException)  # a try that ends in error (left to the retry, or failed)


@pytest.fixture(params=["44", "49"])
def emu(request, emulators, monkeypatch):
    with links_account(emulators, monkeypatch, request.param, late_commit_window=WINDOW, max_retries=0) as emulator:
        monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "production")
        yield emulator


class TI:
    def __init__(self, map_index: int, try_number: int, start_date: dt.datetime, task_id: str = "create") -> None:
        self.dag_id, self.run_id, self.task_id = "campaign", "scheduled__2026-11-30T00:00:00+00:00", task_id
        self.map_index, self.try_number, self.start_date = map_index, try_number, start_date
        self.pushed: dict = {}

    def xcom_push(self, key, value) -> None:
        self.pushed[key] = value


class Run:
    def __init__(self, start_date: dt.datetime, *, clear_number: int = 0, run_after: dt.datetime | None = None):
        self.dag_id, self.run_id, self.run_type = "campaign", "scheduled__2026-11-30T00:00:00+00:00", "scheduled"
        self.start_date, self.clear_number = start_date, clear_number
        self.run_after = self.logical_date = self.data_interval_end = run_after or start_date


def run_try(map_index: int, clicks: int, try_number: int, run: Run, **fields):
    task = LinkstatsCreateLinkOperator(task_id="create", url=URL, expiration_clicks=clicks, **fields)
    started = run.start_date + dt.timedelta(seconds=try_number)
    context = {"params": {}, "ti": TI(map_index, try_number, started), "ds": "2026-11-30", "dag_run": run}
    task.render_template_fields(context)
    return task.execute(context)


def landing_links(emu) -> dict[int, int]:
    """link id -> its click limit, for every link to the landing page."""
    return {
        row["id"]: int(row.get("expiration_clicks") or row.get("clicks_limit") or 0)
        for row in emu.store.links()
        if row["url"] == URL
    }


def now() -> dt.datetime:
    return dt.datetime.now(UTC) - dt.timedelta(seconds=30)


def assert_two_links_each_its_own(emu, first, second):
    made = landing_links(emu)
    assert made == {first["id"]: 100, second["id"]: 500}, made
    assert first["id"] != second["id"]


# -- the key itself ------------------------------------------------------------------------------------


def test_a_key_is_16_symbols_without_vowels_and_one_per_task_instance():
    from airflow_provider_linkstats.client.ownership import KEY_ALPHABET, KEY_LENGTH, task_key

    key = task_key("production", "campaign", "scheduled__x", "create", 3)
    assert len(key) == KEY_LENGTH and set(key) <= set(KEY_ALPHABET) and not set(key) & set("aeiou")
    assert key == task_key("production", "campaign", "scheduled__x", "create", 3)  # the same on every try
    others = {task_key("production", "campaign", "scheduled__x", "create", 4),
              task_key("staging", "campaign", "scheduled__x", "create", 3),
              task_key("production", "campaign", "scheduled__x", "create", 3, 1)}  # fmt: skip
    assert key not in others and len(others) == 3


# -- two mapped tasks, one URL, no alias, different click limits ---------------------------------------------


def test_a_retry_after_a_429_before_sending_makes_its_own_link(emu):
    """Before: the retry looked for links with the URL made since the run began, took its sibling's and
    returned it: one link, the sibling's limit 100 for both."""
    run = Run(now())
    first = run_try(0, 100, 1, run)
    emu.faults.fail_next(status=429, retry_after=3600, method="POST", path_prefix="/links")
    with pytest.raises(TRY_FAILED):
        run_try(1, 500, 1, run)  # Retry-After past the allowed wait: nothing sent
    second = run_try(1, 500, 2, run)
    assert_two_links_each_its_own(emu, first, second)


@pytest.mark.parametrize("status", [503, 504])
def test_a_retry_after_a_gateway_error_makes_its_own_link(emu, status):
    run = Run(now())
    first = run_try(0, 100, 1, run)
    emu.faults.fail_next(status=status, method="POST", path_prefix="/links")  # nothing committed
    with pytest.raises(TRY_FAILED):
        run_try(1, 500, 1, run)
    second = run_try(1, 500, 2, run)
    assert_two_links_each_its_own(emu, first, second)


def test_a_504_whose_commit_lands_2_s_later_is_found_by_its_key(emu):
    run = Run(now())
    first = run_try(0, 100, 1, run)
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=1.0)
    second = run_try(1, 500, 1, run)  # found within the window: its own, not the sibling's
    time.sleep(1.5)
    assert_two_links_each_its_own(emu, first, second)
    assert emu.stats.count(method="POST", path_prefix="/links") == 2


def test_a_lost_workers_next_try_takes_its_first_trys_link(emu):
    """The first try's create committed after the try had given up (its worker lost): the next try
    finds it under the task's key, created_earlier, and sends nothing more."""
    run = Run(now())
    first = run_try(0, 100, 1, run)
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=WINDOW + 2)
    with pytest.raises(TRY_FAILED):
        run_try(1, 500, 1, run)
    time.sleep(3)  # the late commit lands
    second = run_try(1, 500, 2, run)
    assert_two_links_each_its_own(emu, first, second)
    assert emu.stats.count(method="POST", path_prefix="/links", status=201) <= 2


# -- a user's alias ---------------------------------------------------------------------------------------------


def test_a_backfill_retry_never_takes_a_teammates_week_old_link(emu):
    """A backfill run 30 days back; its create's answer was lost, and a teammate made a link with the
    same alias and URL a week ago. Before: the retry took it as made by an earlier try (run_after was
    30 days back). Now: the first try began after it by Airflow's record, so it fails with exists."""
    theirs = emu.store.add_link(url=URL, alias="spring")
    emu.clock.advance(7 * 86400)
    run = Run(dt.datetime.now(UTC) - dt.timedelta(seconds=20), run_after=dt.datetime.now(UTC) - dt.timedelta(days=30))
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links")
    with pytest.raises(TRY_FAILED):
        run_try(0, 100, 1, run, alias="spring")
    with pytest.raises(AirflowFailException) as raised:
        run_try(0, 100, 2, run, alias="spring")
    assert isinstance(raised.value.__cause__, LinkstatsExistsError), raised.value
    assert [row["id"] for row in emu.store.links()] == [theirs["id"]]


def test_a_users_alias_with_other_fields_is_not_an_earlier_trys(emu):
    """Made after the first try began, under the alias and URL, but with another click limit: not this
    task's (before, only the URL was compared), so if_exists decides."""
    run = Run(now())
    clicks = "clicks_limit" if emu.links_version == "49" else "expiration_clicks"
    emu.store.add_link(url=URL, alias="spring", **{clicks: 100})
    with pytest.raises(AirflowFailException, match="already exists"):
        run_try(0, 500, 2, run, alias="spring")
    record = run_try(0, 100, 2, run, alias="spring")  # what was sent: this task's own
    assert record["alias"] == "spring" and len(emu.store.links()) == 1


# -- two deployments, the same DAG and run ids, one account ---------------------------------------------------


def test_two_deployments_never_take_each_others_link(emu, monkeypatch):
    """Before: production's retry looked for links with the URL made since the run began and took
    staging's."""
    run = Run(now())
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "staging")
    staging = run_try(0, 100, 1, run)
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "production")
    emu.faults.fail_next(status=503, method="POST", path_prefix="/links")
    with pytest.raises(TRY_FAILED):
        run_try(0, 500, 1, run)
    production = run_try(0, 500, 2, run)
    assert_two_links_each_its_own(emu, staging, production)


# -- a cleared task finds its link ----------------------------------------------------------------------------


@pytest.mark.parametrize("alias", [None, "spring"])
def test_a_cleared_task_and_a_cleared_run_find_their_link(emu, alias):
    run = Run(now())
    extra = {"alias": alias} if alias else {}
    made = run_try(0, 100, 1, run, **extra)
    task_cleared = run_try(0, 100, 2, Run(run.start_date, clear_number=1), **extra)  # the run's start kept
    moved = dt.datetime.now(UTC) + dt.timedelta(seconds=5)  # a clear of the whole run moves its start
    run_cleared = run_try(0, 100, 3, Run(moved, clear_number=2, run_after=run.start_date), **extra)
    assert made["id"] == task_cleared["id"] == run_cleared["id"]
    assert list(landing_links(emu)) == [made["id"]]
