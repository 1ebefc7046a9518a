"""LinkstatsLinkExpiredSensor against the emulator: real runs (dag.test), costs counted server-side.

Links expire the two ways the service knows: clicks (``GET {emu.url}/{alias}``, counted by the
emulator) and date (the emulator's clock). The expiry is triggered only after the sensor has been
seen polling, so every test here really waits.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import airflow
import httpx
import pytest
from airflow.providers.common.compat.sdk import (
    AirflowException,
    AirflowFailException,
    AirflowSensorTimeout,
    AirflowSkipException,
)

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor
from airflow_provider_linkstats.waiting.watch import Watch
from tests.conftest import API_KEY, DAGS_FOLDER, fails_without_retry

LISTING = "/public/api/v1/links"


pytestmark = pytest.mark.usefixtures("no_key_in_logs")  # every test here also proves the key is never logged


@pytest.fixture(scope="module")
def dags():
    path = DAGS_FOLDER / "tests" / "linkstats_sensor_dags.py"
    spec = importlib.util.spec_from_file_location("linkstats_test_dag_sensor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- helpers -------------------------------------------------------------------------------------


def listing_polls(emu) -> int:
    return sum(1 for r in emu.stats.requests() if r["method"] == "GET" and r["path"] == LISTING)


def when_polled(emu, times: int, action: Callable[[], None], polls=listing_polls) -> threading.Thread:
    """Run ``action`` once the Expired listing (or ``polls``) was read ``times`` times (the wait is under way)."""

    def watch() -> None:
        deadline = time.monotonic() + 600  # Airflow may take minutes to start the task on a loaded machine
        while polls(emu) < times and time.monotonic() < deadline:
            time.sleep(0.02)
        action()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def click(emu, alias: str, times: int = 1) -> None:
    with httpx.Client() as http:
        for _ in range(times):
            http.get(f"{emu.url}/{alias}")


def tomorrow(emu) -> dict[str, str]:
    moment = emu.clock.now() + dt.timedelta(days=1)
    return {"expiration_date": moment.strftime("%Y-%m-%d"), "expiration_time": moment.strftime("%H:%M")}


def states(run) -> dict[str, str]:
    return {ti.task_id: ti.state for ti in run.get_task_instances()}


def sensor(**kwargs) -> LinkstatsLinkExpiredSensor:
    kwargs.setdefault("poke_interval", 0.1)
    kwargs.setdefault("timeout", 10)
    return LinkstatsLinkExpiredSensor(task_id="wait", **kwargs)


# -- real runs: both modes, both ways to expire ------------------------------------------------------


@pytest.mark.parametrize("dag_name", ["poke", "deferrable"])
def test_dag_run_succeeds_when_link_expires_by_clicks(emu, airflow_db, dags, dag_name):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=2)
    polls_before = 3  # deferrable: one poke in the worker, then at least two in the trigger
    waiter = when_polled(emu, polls_before, lambda: click(emu, "spring", 2))

    run = getattr(dags, dag_name).test(run_conf={"link_id": link["id"]})

    waiter.join(5)
    assert run.state == "success", states(run)
    assert states(run) == {"wait": "success", "check": "success"}  # check() verified the XCom record
    assert listing_polls(emu) >= polls_before  # the expiry came while it was polling
    requests = emu.stats.requests()
    assert requests[0]["path"] == f"{LISTING}/{link['id']}"  # only link_id given: the record was read first
    assert all(r["query"].get("search") == ["spring"] for r in requests if r["path"] == LISTING)


@pytest.fixture
def emulator_time(emu):
    """The waits read the service's clock from the Date header of its answers, which follows the
    emulator's clock: a test puts an end time a few seconds ahead by moving that clock (here a day
    on: a service a day ahead of the worker) before the wait starts."""
    return emu


@pytest.mark.parametrize("dag_name", ["poke", "deferrable", "reschedule"])
def test_a_date_is_not_polled_the_wait_sleeps_until_it_then_reads(emulator_time, airflow_db, dags, dag_name):
    emu = emulator_time
    if dag_name == "reschedule" and airflow.__version__.startswith("3.0."):
        pytest.skip("Airflow 3.0's dag.test() cannot run a second reschedule try (see the test below)")
    ends = emu.clock.now().replace(second=0, microsecond=0) + dt.timedelta(days=1)
    link = emu.store.add_link(
        url="https://example.com/spring",
        alias="spring",
        expiration_date=ends.strftime("%Y-%m-%d"),
        expiration_time=ends.strftime("%H:%M"),
    )
    emu.clock.set(ends - dt.timedelta(seconds=3))  # the end is 3 s ahead
    started = time.monotonic()

    run = getattr(dags, dag_name).test(run_conf={"link_id": link["id"], "alias": "spring"})

    assert states(run) == {"wait": "success", "check": "success"}
    # It waited for the end (3 s ahead); success says it ended before the sensor's 30 s timeout, and
    # the requests below say how (a time bound here only flaked on a loaded machine).
    assert 2.5 <= time.monotonic() - started
    paths = [r["path"] for r in emu.stats.requests()]
    # Never the listing: the first read learnt the end (and the service's clock, a day ahead of the
    # worker's), the last confirmed it once past by the margin, 5-6 s after the first (poke_interval
    # is 0.2 s, so polling would have sent about 30 requests); the bounded-staleness re-reads (every
    # 3 poke intervals: 0.6 s in poke and deferrable mode, 3 s in reschedule mode at 1 s) are reads too.
    assert set(paths) == {f"{LISTING}/{link['id']}"}
    assert len(paths) <= (4 if dag_name == "reschedule" else 12)


def test_reschedule_mode_succeeds_and_frees_the_slot_between_pokes(emu, airflow_db, dags, caplog):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=1)
    waiter = when_polled(emu, 2, lambda: click(emu, "spring"), polls=lambda emu: emu.stats.count())
    run = dags.reschedule.test(run_conf={"link_id": link["id"], "alias": "spring"})
    waiter.join(5)
    if airflow.__version__.startswith("3.0."):
        # Airflow 3.0's dag.test() hands BaseSensorOperator the first reschedule date as a string
        # (TaskRescheduleStartDate.model_construct; validated from 3.1), so any sensor in reschedule
        # mode fails there in its second try, in Airflow's timeout check right after our second
        # poke. A 3.0 deployment is not affected: its task process validates that message.
        assert states(run) == {"wait": "failed", "check": "upstream_failed"}
        assert emu.stats.count() == 2
        assert any(
            "unsupported operand type(s) for -: 'datetime.datetime' and 'str'" in (r.exc_text or r.getMessage())
            for r in caplog.records
        )
        return
    assert states(run) == {"wait": "success", "check": "success"}
    # One poke per reschedule, each a fresh task execution that knows nothing of the last: one read
    # of the record a poke (it exists, and its clicks answer the poke), never more.
    paths = [r["path"] for r in emu.stats.requests()]
    assert set(paths) == {f"{LISTING}/{link['id']}"} and len(paths) >= 3


def test_list_of_links_waits_for_all(emu, airflow_db, dags):
    links = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"l{i}", expiration_clicks=1) for i in range(3)]
    click(emu, "l0")
    waiter = when_polled(emu, 2, lambda: (click(emu, "l1"), click(emu, "l2")))
    run = dags.poke.test(run_conf={"link_ids": [link["id"] for link in links]})
    waiter.join(5)
    assert states(run) == {"wait": "success", "check": "success"}
    # No alias narrowing for a list, and never one request per link.
    assert all("search" not in r["query"] for r in emu.stats.requests() if r["path"] == LISTING)


@pytest.mark.parametrize("dag_name", ["poke", "deferrable"])
def test_deleted_link_fails_fast(emu, airflow_db, dags, dag_name):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=5)
    deleted: list[float] = []
    waiter = when_polled(emu, 2, lambda: (emu.store.delete(LINKS, link["id"]), deleted.append(time.monotonic())))
    run = getattr(dags, dag_name).test(run_conf={"link_id": link["id"]})
    waiter.join(5)
    assert run.state == "failed"
    assert states(run) == {"wait": "failed", "check": "upstream_failed"}
    # The sensor's timeout is 30 s, so a run ended by it takes 30 s or more after the delete: the
    # existence check (every 3rd poke) ended this one.
    assert deleted and time.monotonic() - deleted[0] < 30
    assert emu.stats.requests()[-1]["path"] == f"{LISTING}/{link['id']}"


@pytest.mark.parametrize("mode", ["poke", "deferrable"])
@pytest.mark.parametrize("soft_fail", [False, True])
def test_timeout_fails_or_skips_with_soft_fail(emu, airflow_db, dags, mode, soft_fail):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=5)
    dag = getattr(dags, f"{'soft' if soft_fail else 'timeout'}_{mode}")
    started = time.monotonic()
    run = dag.test(run_conf={"link_id": link["id"], "alias": "spring"})
    elapsed = time.monotonic() - started
    if soft_fail:
        assert states(run) == {"wait": "skipped", "check": "skipped"}
    else:
        assert run.state == "failed"
        assert states(run) == {"wait": "failed", "check": "upstream_failed"}
    # The timeout (3 s) ended it: the link never expires, so only the timeout can (the upper bound
    # is loose on purpose: under load Airflow's own overhead took up to 15 s).
    assert 1.0 <= elapsed < 60
    assert listing_polls(emu) >= 3  # it polled until the timeout, every 0.2 s


def test_bad_rendered_value_fails_before_any_request(emu, airflow_db, dags):
    run = dags.poke.test(run_conf={"link_id": "spring"})
    assert run.state == "failed"
    assert emu.stats.count() == 0


# -- cost per poke, counted by the emulator ----------------------------------------------------------


def test_one_request_per_poke_with_an_alias(emu):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=5)
    for i in range(30):  # other expired links do not make a poke dearer
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"other{i}", expiration_clicks=1, clicks=1)
    wait = sensor(link_id=link["id"], alias="spring", existence_check_every=5)
    polls = []
    for _ in range(11):
        emu.stats.reset()
        assert wait.poke({}) is False
        polls.append([r["path"].rsplit("/", 1)[-1] for r in emu.stats.requests()])
    # One request a poke: the first, and then every 5th, reads the record (which exists, and its
    # clicks answer the poke too); the others ask the Expired listing for the alias.
    assert polls == [[str(link["id"])], *[["links"]] * 4, [str(link["id"])], *[["links"]] * 4, [str(link["id"])]]
    click(emu, "spring", 5)
    emu.stats.reset()
    result = wait.poke({})
    assert emu.stats.count() == 1
    assert result.is_done and result.xcom_value["id"] == link["id"]
    json.dumps(result.xcom_value)


def test_only_an_id_reads_the_alias_once(emu):
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=5)
    wait = sensor(link_id=str(link["id"]), existence_check_every=0)
    costs = []
    for _ in range(4):
        emu.stats.reset()
        wait.poke({})
        costs.append([(r["path"], r["query"].get("search")) for r in emu.stats.requests()])
    assert costs[0] == [(f"{LISTING}/{link['id']}", None)]  # the record answers the first poke too
    assert costs[1:] == [[(LISTING, ["spring"])]] * 3


def test_only_an_alias_finds_the_link_once(emu):
    emu.store.add_link(url="https://example.com/x", alias="spring-sale")  # a substring match, not it
    link = emu.store.add_link(url="https://example.com/spring", alias="spring", expiration_clicks=1)
    wait = sensor(alias="spring")
    emu.stats.reset()
    assert wait.poke({}) is False
    assert emu.stats.count() == 2  # find the id by alias, then the Expired listing
    click(emu, "spring")
    emu.stats.reset()
    assert wait.poke({}).xcom_value["id"] == link["id"]
    assert emu.stats.count() == 1


@pytest.mark.parametrize("n, pages", [(250, 3), (100, 1), (101, 2)])
def test_a_list_costs_ceil_n_over_100(emu, n, pages):
    ids = [
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"gone{i}", expiration_clicks=1, clicks=1)["id"]
        for i in range(n)
    ]
    for i in range(20):
        emu.store.add_link(url=f"https://example.com/live{i}", alias=f"live{i}")
    emu.stats.reset()
    result = sensor(link_ids=ids).poke({})
    assert result.is_done and [r["id"] for r in result.xcom_value] == ids
    assert emu.stats.count() == pages
    assert {r["query"]["per_page"][0] for r in emu.stats.requests()} == {"100"}


def test_a_list_still_waiting_walks_the_listing_then_checks_only_the_pending(emu):
    expired = [
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"gone{i}", expiration_clicks=1, clicks=1)["id"]
        for i in range(250)
    ]
    live = emu.store.add_link(url="https://example.com/live", alias="live", expiration_clicks=1)
    wait = sensor(link_ids=[*expired, live["id"]], existence_check_every=0)
    emu.stats.reset()
    assert wait.poke({}) is False
    assert [r["path"] for r in emu.stats.requests()] == [LISTING] * 3 + [f"{LISTING}/{live['id']}"]
    emu.stats.reset()
    assert wait.poke({}) is False
    assert emu.stats.count() == 3
    click(emu, "live")
    emu.stats.reset()
    assert len(wait.poke({}).xcom_value) == 251
    assert emu.stats.count() == 3


def test_existence_of_many_pending_links_is_checked_per_page_not_per_link(emu):
    pending = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"wait{i}")["id"] for i in range(150)]
    for i in range(250):  # newer links the listing walk passes by
        emu.store.add_link(url=f"https://example.com/new{i}", alias=f"new{i}")
    wait = sensor(link_ids=pending, existence_check_every=0)
    emu.stats.reset()
    assert wait.poke({}) is False
    queries = [r["query"] for r in emu.stats.requests()]
    # Expired once; All pages 1-4 of 400, newest first (what waits usually watch)
    assert [q["status"] for q in queries] == [["2"]] + [["0"]] * 4
    emu.stats.reset()
    assert wait.poke({}) is False
    assert [r["query"]["status"] for r in emu.stats.requests()] == [["2"]]  # checked once (existence_check_every=0)


def test_a_deleted_link_among_many_is_confirmed_by_its_own_404(emu):
    pending = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"wait{i}")["id"] for i in range(10)]
    emu.store.delete(LINKS, pending[3])
    emu.stats.reset()
    with pytest.raises(AirflowFailException, match=f"link {pending[3]} does not exist"):
        sensor(link_ids=pending).poke({})
    assert [r["path"] for r in emu.stats.requests()] == [LISTING, LISTING, f"{LISTING}/{pending[3]}"]


# -- failures ------------------------------------------------------------------------------------


def test_link_that_never_existed_fails_at_the_first_poke(emu):
    wait = sensor(link_id=999)
    with pytest.raises(AirflowFailException, match="link 999 does not exist") as error:
        wait.execute({})
    assert emu.stats.count() == 1
    assert API_KEY not in str(error.value)
    # The first sentence leads with the fix, then names the connection and the request that told.
    assert str(error.value.__cause__) == (
        "Check link_id 999, or whether the link was deleted: link 999 does not exist on connection "
        f"'linkstats_links_default' (GET {emu.url}{LISTING}/999 answered 404)"
    )
    assert str(error.value).endswith("answered 404). Stopped waiting for it to expire.")


def test_an_alias_no_link_has_fails_naming_the_alias_the_connection_and_the_lookup(emu):
    with pytest.raises(AirflowFailException) as error:
        sensor(alias="nope").execute({})
    assert str(error.value.__cause__) == (
        "Check the alias 'nope', or whether the link was deleted: no link on connection "
        f"'linkstats_links_default' has it (GET {emu.url}{LISTING}?search=nope&search_by=alias&per_page=100 "
        "listed none)"
    )


@pytest.mark.parametrize("soft_fail", [False, True])
def test_deferrable_first_poke_fails_like_any_poke(emu, soft_fail):
    wait = sensor(link_id=999, deferrable=True, soft_fail=soft_fail)
    with pytest.raises(AirflowSkipException if soft_fail else AirflowFailException, match="link 999 does not exist"):
        wait.execute({})


def test_alias_that_belongs_to_another_link_is_reported(emu):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    with fails_without_retry(LinkstatsInputError, match="'alias'.*'autumn'.*'spring'"):
        sensor(link_id=link["id"], alias="autumn").poke({})


def test_alias_held_by_links_on_two_domains_needs_the_id(emu):
    emu.store.add_link(url="https://example.com/a", alias="spring", domain_id=1)
    emu.store.add_link(url="https://example.com/b", alias="spring", domain_id=2)
    with fails_without_retry(LinkstatsInputError, match="pass link_id"):
        sensor(alias="spring").poke({})


def test_api_errors_propagate_with_a_clear_message(emu):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    emu.faults.fail_next(1, 401)
    with pytest.raises(Exception, match="HTTP 401") as error:
        sensor(link_id=link["id"], alias="spring").poke({})
    assert API_KEY not in str(error.value)


# -- validation: at parse time when literal, after rendering otherwise ------------------------------


@pytest.mark.parametrize(
    "kwargs, field, allowed",
    [
        ({}, "link_id", "a link id, a link record, or an alias"),
        ({"link_id": 0}, "link_id", "a positive integer"),
        ({"link_id": "spring"}, "link_id", "a positive integer"),
        ({"link_id": 1, "link_ids": [2]}, "link_id", "unset when link_ids is given"),
        ({"link_ids": []}, "link_ids", "a non-empty list"),
        ({"link_ids": [1, "x"]}, "link_ids", "a list of positive integers"),
        ({"alias": 5}, "alias", "a non-empty string"),
        ({"link_id": 1, "existence_check_every": -1}, "existence_check_every", "a whole number of pokes"),
        ({"link_id": 1, "max_transport_failures": 0}, "max_transport_failures", "a whole number >= 1"),
    ],
)
def test_literal_mistakes_fail_at_dag_parse_naming_field_value_and_allowed(kwargs, field, allowed):
    with pytest.raises(LinkstatsInputError) as error:
        sensor(**kwargs)
    assert error.value.field == field
    assert allowed in str(error.value)


def test_templated_values_are_validated_after_rendering(emu):
    wait = sensor(link_id="{{ ti.xcom_pull('create')['id'] }}")  # not checked at parse time
    wait.link_id = "not-a-number"  # what rendering produced
    with fails_without_retry(LinkstatsInputError, match="'link_id': 'not-a-number'. Allowed: a positive integer"):
        wait.execute({})
    assert emu.stats.count() == 0


def test_rendered_forms_are_accepted():
    assert Watch.from_inputs(link_ids="[3, 1, 3]").link_ids == [3, 1]  # a rendered list, deduplicated
    assert Watch.from_inputs(link_ids=[{"id": 4}, "5"]).link_ids == [4, 5]  # records, digit strings
    assert Watch.from_inputs(link_ids=range(1, 4)).link_ids == [1, 2, 3]  # any sequence (mapped XComs)
    watch = Watch.from_inputs(link_id={"id": "7", "alias": "spring"})  # a create task's record
    assert (watch.link_ids, watch.alias) == ([7], "spring")
    watch = Watch.from_inputs(link_id="", alias="spring", link_ids="")  # empty renders mean "not given"
    assert (watch.link_ids, watch.alias, watch.single) == ([], "spring", True)


def test_sensor_module_imports_no_http_library_or_trigger():
    code = (
        "import sys; from airflow.providers.common.compat.sdk import BaseSensorOperator; "
        "before = set(sys.modules); import airflow_provider_linkstats.sensors.links; "
        "print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    added = json.loads(out.strip().splitlines()[-1].replace("'", '"'))
    assert not [m for m in added if m.split(".")[0] in ("requests", "httpx", "urllib3", "aiohttp")]
    # Neither the hook (nor the generations table behind it) nor the clients: all wait for execute().
    assert "airflow_provider_linkstats.triggers.links" not in added
    hook_side = {"airflow_provider_linkstats.hooks.linkstats", "airflow_provider_linkstats.client.generations"}
    assert not hook_side & set(added)
    assert not {"airflow_provider_linkstats.client.api", "airflow_provider_linkstats.client.aio"} & set(added)
    assert not {"airflow_provider_linkstats.waiting.plan", "airflow_provider_linkstats.client.protocol"} & set(added)


# -- deferrable: what execute() hands to the triggerer, and what comes back --------------------------


def test_execute_defers_with_json_kwargs_that_hold_no_key(emu):
    from airflow.providers.common.compat.sdk import TaskDeferred

    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    wait = sensor(link_id=link["id"], deferrable=True, timeout=120, poke_interval=7)
    before = time.time()
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute({})
    classpath, kwargs = deferred.value.trigger.serialize()
    assert classpath == "airflow_provider_linkstats.triggers.links.LinkstatsLinkExpiredTrigger"
    text = json.dumps(kwargs)
    assert API_KEY not in text and API_KEY not in repr(deferred.value.trigger)
    assert kwargs["link_id"] == link["id"] and kwargs["alias"] == "spring" and kwargs["verified"] is True
    assert kwargs["known"] == {str(link["id"]): [None, True]}  # no end time, a click limit: polled
    assert kwargs["poke_interval"] == 7.0 and kwargs["link_ids"] is None
    deadline = dt.datetime.fromisoformat(kwargs["deadline"]).timestamp()
    assert before + 120 - 1 <= deadline <= time.time() + 120
    assert deferred.value.method_name == "execute_complete"
    assert deferred.value.timeout.total_seconds() > 120  # Airflow's timeout is only a backstop
    assert emu.stats.count() == 1  # one read in the worker (alias, end, clicks) before deferring


def test_execute_returns_at_once_without_deferring_when_already_expired(emu):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    assert sensor(link_id=link["id"], alias="spring", deferrable=True).execute({})["id"] == link["id"]


@pytest.mark.parametrize("soft_fail", [False, True])
def test_execute_complete_turns_events_into_results_or_clear_failures(soft_fail):
    single = sensor(link_id=1, soft_fail=soft_fail)
    several = sensor(link_ids=[1, 2], soft_fail=soft_fail)
    records = [{"id": 1}, {"id": 2}]
    assert single.execute_complete({}, {"status": "success", "links": records[:1]}) == {"id": 1}
    assert several.execute_complete({}, {"status": "success", "links": records}) == records

    timeout = {"status": "timeout", "message": "link 1 did not expire", "pending": [1]}
    gone = {"status": "error", "reason": "gone", "message": "link 1 does not exist", "link_id": 1}
    expected = AirflowSkipException if soft_fail else AirflowSensorTimeout
    with pytest.raises(expected, match="did not expire"):
        single.execute_complete({}, timeout)
    with pytest.raises(AirflowSkipException if soft_fail else AirflowFailException, match="does not exist"):
        single.execute_complete({}, gone)
    with pytest.raises(AirflowFailException, match="Invalid value"):
        single.execute_complete({}, {"status": "error", "reason": "input", "message": "Invalid value for 'link_id'"})
    with pytest.raises(AirflowException, match="transport.*5 polls"):
        single.execute_complete({}, {"status": "error", "reason": "transport", "message": "5 polls in a row failed"})
    with pytest.raises(AirflowException, match="usable event"):
        single.execute_complete({}, None)


# -- start_from_trigger ------------------------------------------------------------------------------


def test_start_from_trigger_with_literal_inputs_hands_them_to_the_triggerer(emu):
    import asyncio

    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    wait = sensor(link_id=link["id"], start_from_trigger=True, timeout=300)
    assert wait.start_from_trigger and wait.deferrable
    args = wait.start_trigger_args
    assert args.trigger_cls == "airflow_provider_linkstats.triggers.links.LinkstatsLinkExpiredTrigger"
    assert args.next_method == "execute_complete" and args.timeout == dt.timedelta(seconds=300)
    assert API_KEY not in json.dumps(args.trigger_kwargs)
    assert LinkstatsLinkExpiredSensor.start_trigger_args is None  # set per instance, never shared
    # What the triggerer does with them: build the trigger, run it, resume the task with the event.
    trigger = LinkstatsLinkExpiredTrigger(**args.trigger_kwargs)

    async def first_event():
        async for event in trigger.run():
            return event

    event = asyncio.run(first_event())
    assert wait.execute_complete({}, event.payload)["id"] == link["id"]


def _serialized_round_trip(dag, task_id: str):
    """The task as the scheduler and the triggerer see it: out of the serialized DAG."""
    try:
        from airflow.serialization.serialized_objects import DagSerialization as serializer  # Airflow 3
    except ImportError:
        from airflow.serialization.serialized_objects import SerializedDAG as serializer  # Airflow 2
    return serializer.from_dict(json.loads(json.dumps(serializer.to_dict(dag)))).get_task(task_id)


def test_start_from_trigger_survives_dag_serialization():
    from airflow.providers.common.compat.sdk import DAG

    with DAG("linkstats_sft_serialized", schedule=None, start_date=dt.datetime(2024, 1, 1)) as dag:
        sensor(link_id=5, alias="spring", start_from_trigger=True, timeout=90, poke_interval=4)
        LinkstatsLinkExpiredSensor(task_id="plain", link_id=5)
    task = _serialized_round_trip(dag, "wait")
    assert task.start_from_trigger is True
    args = task.start_trigger_args
    assert args.trigger_cls.endswith("LinkstatsLinkExpiredTrigger") and args.next_method == "execute_complete"
    assert args.timeout == dt.timedelta(seconds=90)
    kwargs = args.trigger_kwargs
    if "__var" in kwargs:  # still in the serialized form the triggerer decodes
        kwargs = kwargs["__var"]
    assert kwargs["link_id"] == 5 and kwargs["alias"] == "spring" and kwargs["poke_interval"] == 4.0
    assert API_KEY not in json.dumps(kwargs)
    plain = _serialized_round_trip(dag, "plain")
    assert not plain.start_from_trigger and plain.start_trigger_args is None  # nothing for the scheduler to do


def test_start_from_trigger_on_airflow_3_3_renders_in_the_triggerer(emu):
    """What the 3.3 triggerer does before run(): render the operator's template fields on the trigger."""
    import asyncio
    import types

    from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    if not AIRFLOW_V_3_3_PLUS:  # no rendering in the triggerer: the sensor keeps the wait in a worker
        from airflow.triggers.base import BaseTrigger

        assert not hasattr(BaseTrigger, "render_template_fields")
        with pytest.warns(UserWarning, match="cannot render it in the triggerer"):
            wait = sensor(link_id="{{ dag_run.conf['link_id'] }}", start_from_trigger=True)
        assert not wait.start_from_trigger and wait.start_trigger_args is None
        return  # tests/system/test_airflow_versions.py runs this case in a DAG on every version
    wait = sensor(link_id="{{ dag_run.conf['link_id'] }}", start_from_trigger=True)
    trigger = LinkstatsLinkExpiredTrigger(**wait.start_trigger_args.trigger_kwargs)
    trigger.task_instance = types.SimpleNamespace(task_id="wait", task=wait)  # BaseTrigger picks the fields
    assert set(trigger.template_fields) == {"link_id", "alias", "link_ids", "linkstats_conn_id"}
    trigger.render_template_fields(context={"dag_run": types.SimpleNamespace(conf={"link_id": link["id"]})})
    assert trigger.link_id == str(link["id"])

    async def first_event():
        async for event in trigger.run():
            return event

    assert wait.execute_complete({}, asyncio.run(first_event()).payload)["id"] == link["id"]


def test_start_from_trigger_with_templates_needs_airflow_3_3():
    from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS

    template = "{{ ti.xcom_pull('create')['id'] }}"
    if AIRFLOW_V_3_3_PLUS:  # the triggerer renders the template fields before run()
        wait = sensor(link_id=template, start_from_trigger=True)
        assert wait.start_from_trigger
        assert wait.start_trigger_args.trigger_kwargs["link_id"] == template
    else:
        with pytest.warns(UserWarning, match="Airflow < 3.3 cannot render it"):
            wait = sensor(link_id=template, start_from_trigger=True)
        assert not wait.start_from_trigger and wait.deferrable  # defers from the worker instead


def test_start_from_trigger_with_an_xcomarg_defers_from_the_worker():
    from airflow.providers.common.compat.sdk import DAG, task

    with DAG("linkstats_sft_xcomarg", schedule=None, start_date=dt.datetime(2024, 1, 1)):

        @task
        def create():
            return {"id": 1}

        with pytest.warns(UserWarning, match="XComArg"):
            wait = sensor(link_id=create(), start_from_trigger=True)
    assert not wait.start_from_trigger and wait.deferrable
