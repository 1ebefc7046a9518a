"""Whose record a create meets after an unknown outcome, and no resend while the first may land (issue 37, items 2-3).

A create answered 502/503/504 by a gateway (or lost) is looked up. What it finds is this create's
only if the service created it after the send (``created_at`` by the service's clock, less the
margin) and it holds what was sent; a record that existed before (a teammate's month-old link
with the same alias and URL) is not, and ``if_exists`` decides. A look-up that finds nothing is no
proof: the PHP request behind a gateway's 504 may commit seconds later, so it is looked for again
within ``late_commit_window``, then "outcome unknown"; never sent again. No ``Date`` header, or a
record without ``created_at``: no evidence either way, "outcome unknown". After a lost worker, a
retry takes its first try's link (``created_earlier``). The emulator (and the scripted server for
what it does not model) is the witness: its store says how many records exist.
"""

from __future__ import annotations

import datetime as dt
import time

import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_linkstats.client.errors import LinkstatsExistsError, LinkstatsOutcomeUnknownError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
from airflow_provider_linkstats.operators.spaces import LinkstatsCreateSpaceOperator
from tests.conftest import links_account, run_operator
from tests.support.hook_methods import HOOK_SETTINGS

MONTH = 30 * 86400
WINDOW = 8  # the late_commit_window extra in these tests (seconds); a real gateway's is about 60


@pytest.fixture(params=["44", "49"])
def emu(request, emulators, monkeypatch):
    with links_account(emulators, monkeypatch, request.param, late_commit_window=WINDOW) as emulator:
        yield emulator


@pytest.fixture
def links():
    hook = LinkstatsLinksHook(**HOOK_SETTINGS)
    yield hook
    hook.close()


def posts(emu, resource: str = "links") -> int:
    return emu.stats.count(method="POST", path_prefix=f"/{resource}")


def teammates_link(emu):
    """A link with the alias and URL this task asks for, made a month before by someone else."""
    link = emu.store.add_link(url="https://example.com/spring", alias="spring")
    emu.clock.advance(MONTH)
    return link


def link(**fields):
    return LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/spring", alias="spring", **fields)


class TI:
    """The task instance of a context: which try this is."""

    def __init__(self, try_number: int) -> None:
        self.try_number = try_number
        self.pushed: dict = {}

    def xcom_push(self, key, value) -> None:
        self.pushed[key] = value


class Run:
    """A DAG run as the worker's context holds it: its run_after never moves; a clear moves its start_date."""

    def __init__(self, run_after: dt.datetime, start_date: dt.datetime) -> None:
        self.run_after, self.start_date, self.run_type = run_after, start_date, "manual"
        self.run_id = f"manual__{run_after.isoformat()}"


def run_try(operator, run: Run, try_number: int):
    context = {"params": {}, "ti": TI(try_number), "ds": "2026-11-21", "dag_run": run}
    operator.render_template_fields(context)
    return operator.execute(context)


# -- item 2: ownership from evidence -------------------------------------------------------------------


def test_a_teammates_month_old_link_is_never_taken_after_a_502(emu):
    """Before: the 502's look-up found the teammate's link and the task returned it as created (0 errors)."""
    theirs = teammates_link(emu)
    emu.faults.fail_next(status=502, method="POST", path_prefix="/links")  # the gateway: nothing created
    with pytest.raises(AirflowFailException) as raised:
        run_operator(link())
    assert isinstance(raised.value.__cause__, LinkstatsExistsError)
    assert "before this create was sent" in str(raised.value) and "if_exists='skip'" in str(raised.value)
    (stored,) = emu.store.links()
    assert stored["id"] == theirs["id"] and posts(emu) == 1  # not adopted, nothing sent again


def test_a_teammates_link_found_after_a_502_is_met_as_if_exists_says(emu):
    teammates_link(emu)
    emu.faults.fail_next(status=502, method="POST", path_prefix="/links")
    record, outcome = LinkstatsLinksHook(**HOOK_SETTINGS).create_or_reconcile(
        {"url": "https://example.com/spring", "alias": "spring"}, "skip"
    )
    assert outcome == "skipped" and len(emu.store.links()) == 1  # "skip": theirs, as it is, not "created"


def test_a_lost_workers_retry_takes_its_first_trys_link(emu):
    """Before: the retry ended in a permanent LinkstatsExistsError on its own link."""
    due = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    emu.clock.advance(1)
    # The first try's create committed, then its worker died: the link exists, no XCom says so.
    ours = emu.store.add_link(url="https://example.com/spring", alias="spring")
    # A documented clear moves the run's start_date past the link's creation; run_after stays.
    run = Run(run_after=due, start_date=dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30))
    record = run_try(link(), run, try_number=2)
    assert record["id"] == ours["id"] and len(emu.store.links()) == 1
    assert posts(emu) == 1  # the retry's create, refused as taken: no second link


def test_a_retry_never_takes_a_link_older_than_its_run(emu):
    teammates_link(emu)
    run = Run(run_after=dt.datetime.now(dt.timezone.utc), start_date=dt.datetime.now(dt.timezone.utc))
    with pytest.raises(AirflowFailException, match="LinkstatsExistsError: .*already exists"):
        run_try(link(), run, try_number=2)


def test_a_retry_never_takes_a_link_made_half_a_second_before_its_run(emu):
    """A teammate's link with the alias made 0.5 s before the run started (as the single create's
    retry sees it): before, the run's start on the service's clock was taken at its earliest within
    the offset's uncertainty, so the link (created_at in whole seconds) read as made after it and was
    taken as this task's own (created_earlier), 5 of 5 times late in a second. Now at its latest, as
    the bulk launch takes it: not ours, met as if_exists says (fail)."""
    theirs = emu.store.add_link(url="https://example.com/spring", alias="spring")
    started = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=0.5)
    time.sleep(1.0)
    with pytest.raises(AirflowFailException, match="LinkstatsExistsError: .*already exists"):
        run_try(link(), Run(run_after=started, start_date=started), try_number=2)
    assert [stored["id"] for stored in emu.store.links()] == [theirs["id"]]


# -- item 3: no resend while the first may still land -----------------------------------------------------


@pytest.mark.parametrize("alias", ["late", "bcdfghjklmnpqrst"])  # a user's alias; a task's own key
def test_a_504_whose_commit_lands_2_s_later_makes_one_link(emu, links, alias):
    """Before: the look-up 0.5 s after the 504 found nothing and the create was sent again: two links."""
    from airflow_provider_linkstats.client.ownership import Claim

    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=2.0)
    started = time.monotonic()
    if alias == "late":
        record = links.create_link("https://example.com/late", alias=alias)
    else:
        claim = Claim(key=alias, first_try=dt.datetime.now(dt.timezone.utc), known=True)
        record, _ = links.create_or_reconcile({"url": "https://example.com/late"}, claim=claim)
    time.sleep(max(0.0, 3.0 - (time.monotonic() - started)))  # the late commit has landed by now
    made = [row for row in emu.store.links() if row["url"] == "https://example.com/late"]
    assert [row["id"] for row in made] == [record["id"]] and posts(emu) == 1


def test_a_space_whose_commit_lands_2_s_later_is_one_space(emu):
    emu.faults.fail_next(status=504, method="POST", path_prefix="/spaces", commit_after=2.0)
    started = time.monotonic()
    record = run_operator(LinkstatsCreateSpaceOperator(task_id="space", name="Autumn"))[0]
    time.sleep(max(0.0, 3.0 - (time.monotonic() - started)))  # the late commit has landed by now
    spaces = [row for row in LinkstatsLinksHook(**HOOK_SETTINGS).list_spaces() if row["name"] == "Autumn"]
    assert [space["id"] for space in spaces] == [record["id"]] and posts(emu, "spaces") == 1


def test_nothing_found_within_the_window_is_an_unknown_outcome_never_a_resend(emu, links):
    emu.faults.fail_next(status=503, method="POST", path_prefix="/links")  # nothing committed, ever
    started = dt.datetime.now()
    with pytest.raises(LinkstatsOutcomeUnknownError) as raised:
        links.create_link("https://example.com/a", alias="spring")
    waited = (dt.datetime.now() - started).total_seconds()
    message = str(raised.value)
    assert "looked up by alias 'spring'" in message and f"over {WINDOW} s" in message
    assert "late_commit_window" in message and "check the service for a link with alias 'spring'" in message
    assert WINDOW <= waited < WINDOW + 5 and posts(emu) == 1 and emu.store.links() == []
    looks = emu.stats.count(method="GET", path_prefix="/links")
    assert 2 <= looks <= 10  # bounded: spread over the window, not a poll loop


@pytest.mark.parametrize("alias", ["spring", None])
def test_the_task_retry_after_an_unknown_outcome_creates_once(emu, alias, monkeypatch):
    """The retry of a task that stopped with "outcome unknown" looks again first (its create carries the
    same alias, the user's or the task's own key, and is refused as taken) and takes the first try's
    late link as its own: one link. Before: without alias, the retry made a second."""
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "tests")
    due = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=2)
    emu.clock.advance(1)
    emu.faults.fail_next(status=504, method="POST", path_prefix="/links", commit_after=WINDOW + 3)
    run = Run(run_after=due, start_date=due)
    task = LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/spring", alias=alias)
    with pytest.raises(LinkstatsOutcomeUnknownError) as raised:
        run_try(task, run, try_number=1)
    assert raised.value.retry_looks_first  # left to the task's retry, not failed at once
    time.sleep(4)  # the late commit lands
    record = run_try(task, run, try_number=2)
    assert [row["id"] for row in emu.store.links()] == [record["id"]]
    assert posts(emu) == 2  # the retry's create was refused as taken: its own link, under its key


# -- no evidence either way ---------------------------------------------------------------------------


def test_an_alias_less_create_is_unknown_at_once_not_resent():
    """Before: the look-up by URL compared created_at with the worker's clock, found nothing, and sent the
    create again. Now an alias the service names cannot be looked up: "outcome unknown", never resent."""
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.settings import ClientSettings
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer(send_date=False) as server:
        server.add(("respond", 504, "<html>504 Gateway Time-out</html>", {"Content-Type": "text/html"}))
        settings = ClientSettings(root=f"{server.url}/api/v1", max_retries=0, default_domain_id=1, late_commit_window=1)
        client = LinkstatsClient(settings, "k" * 40, generation="49")
        with pytest.raises(LinkstatsOutcomeUnknownError, match="cannot be looked up"):
            client.create(LINKS, {"url": "https://example.com/a"})
        assert [r["method"] for r in server.requests] == ["POST"]  # no look-up, no resend


def test_a_users_alias_found_against_a_server_without_date_is_unknown_not_taken():
    """A record under a user's alias is this create's only if made after the send: without a Date the
    service's clock is unknown, so no evidence either way."""
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.settings import ClientSettings
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer(send_date=False) as server:
        server.add(("respond", 504, "<html>504 Gateway Time-out</html>", {"Content-Type": "text/html"}))
        found = {"id": 7, "alias": "spring", "url": "https://example.com/a", "domain_id": 1,
                 "created_at": "2026-01-01T00:00:00.000000Z"}  # fmt: skip
        server.set_default(("respond", 200, {"data": [found], "meta": {"current_page": 1, "last_page": 1}}))
        settings = ClientSettings(root=f"{server.url}/api/v1", max_retries=0, default_domain_id=1, late_commit_window=1)
        client = LinkstatsClient(settings, "k" * 40, generation="49")
        with pytest.raises(LinkstatsOutcomeUnknownError, match="no Date header"):
            client.create(LINKS, {"url": "https://example.com/a", "alias": "spring"})
        assert [r["method"] for r in server.requests] == ["POST", "GET"]  # one look-up, no resend


def test_a_found_record_without_created_at_is_unknown_not_taken():
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.settings import ClientSettings
    from tests.support.scripted_server import ScriptedServer

    with ScriptedServer() as server:
        server.add(("respond", 504, "<html>504 Gateway Time-out</html>", {"Content-Type": "text/html"}))
        found = {"id": 7, "alias": "spring", "url": "https://example.com/a", "domain_id": 1}
        server.set_default(("respond", 200, {"data": [found], "meta": {"current_page": 1, "last_page": 1}}))
        settings = ClientSettings(root=f"{server.url}/api/v1", max_retries=0, default_domain_id=1, late_commit_window=1)
        client = LinkstatsClient(settings, "k" * 40, generation="49")
        with pytest.raises(LinkstatsOutcomeUnknownError, match="no readable created_at"):
            client.create(LINKS, {"url": "https://example.com/a", "alias": "spring"})
        assert [r["method"] for r in server.requests].count("POST") == 1
