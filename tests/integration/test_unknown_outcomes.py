"""Unknown outcomes are never resent blindly (issue 31 item 4).

A gateway (nginx, a load balancer) answers 502, 503 or 504 with its own HTML page, often after the
PHP request behind it ran to the end and committed; a lost answer is the same case. The emulator's
``fail_next(..., after_commit=True)`` does exactly that. A create or update so answered is
reconciled before any resend: a create is looked up by its key alone (its alias, the task's own key
for a link created by a task without one, a website's domain) and taken as ours only when it is what
was asked (``client/ownership.py``); a link the service names is "outcome unknown" at once;
an update is read back and resent only if the record does not hold what was asked. A 503 before
any work (maintenance mode) is looked for within ``late_commit_window`` (a proxy's 503 may come
after the work), then "outcome unknown": never sent again (tests/integration/test_create_ownership.py
has the late commits). Both phpShort generations (44 with phpAnalytics 3, 49 with 31), the store as the witness.
"""

from __future__ import annotations

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsExistsError, LinkstatsOutcomeUnknownError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import connection_json, links_account
from tests.support.hook_methods import HOOK_SETTINGS

ANALYTICS_OF = {"44": "3", "49": "31"}
GATEWAY = (502, 503, 504)


@pytest.fixture(params=["44", "49"])
def emu(request, emulators, monkeypatch):
    with links_account(emulators, monkeypatch, request.param, late_commit_window=2) as emulator:
        monkeypatch.setenv(
            "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
            connection_json(emulator.analytics_url, "linkstats_analytics", api_version=ANALYTICS_OF[request.param]),
        )
        yield emulator


@pytest.fixture
def links():
    hook = LinkstatsLinksHook(**HOOK_SETTINGS)
    yield hook
    hook.close()


@pytest.fixture
def sites():
    hook = LinkstatsAnalyticsHook(**HOOK_SETTINGS)
    yield hook
    hook.close()


def sent(emu, method: str, resource: str) -> int:
    return emu.stats.count(method=method, path_prefix=f"/{resource}")


@pytest.mark.parametrize("status", GATEWAY)
def test_a_create_with_alias_answered_by_a_gateway_after_commit_is_found_not_resent(emu, links, status):
    emu.faults.fail_next(status=status, method="POST", after_commit=True)
    record = links.create_link("https://example.com/a", alias="spring", expiration_clicks=5)
    stored = emu.store.links()
    assert [link["id"] for link in stored] == [record["id"]] and record["alias"] == "spring"
    assert sent(emu, "POST", "links") == 1 and sent(emu, "GET", "links") == 1  # one look-up, no resend


def run_task(operator, map_index: int = 0):
    """``operator`` run as try 1 of a task instance of a DAG run (its key: DAG, run, task, map index)."""
    import datetime as dt
    from types import SimpleNamespace

    started = dt.datetime.now(dt.timezone.utc)
    ti = SimpleNamespace(dag_id="d", run_id="manual__1", task_id=operator.task_id, map_index=map_index, try_number=1,
                         start_date=started, xcom_push=lambda key, value: None)  # fmt: skip
    run = SimpleNamespace(dag_id="d", run_id="manual__1", run_type="manual", start_date=started, clear_number=0,
                          run_after=started)  # fmt: skip
    context = {"params": {}, "ti": ti, "ds": "2026-11-21", "dag_run": run}
    operator.render_template_fields(context)
    return operator.execute(context)


@pytest.mark.parametrize("status", GATEWAY)
def test_a_tasks_create_without_alias_is_found_by_its_own_key(emu, status, monkeypatch):
    """Before (issue 44): looked up by its URL among the links made since the send, which took another's
    link with the URL made in the same seconds. Now by the task's key alone: one look-up, its own."""
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "tests")
    other = emu.store.add_link(url="https://example.com/a")  # someone else's, made at the same moment
    emu.stats.reset()
    emu.faults.fail_next(status=status, method="POST", after_commit=True)
    record = run_task(LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/a"))
    made = [link["id"] for link in emu.store.links() if link["url"] == "https://example.com/a"]
    assert sorted(made) == sorted([other["id"], record["id"]]) and record["id"] != other["id"]  # no twin
    assert sent(emu, "POST", "links") == 1 and sent(emu, "GET", "links") == 1


@pytest.mark.parametrize("alias", ["spring", None])
def test_a_503_before_any_work_is_an_unknown_outcome_never_resent(emu, links, alias):
    """Maintenance mode answers before any work, but a proxy's 503 may come after it: the create is
    looked for within the window, then "outcome unknown"; not sent again (before issue 37: sent again
    after one look-up 0.5 s later, which made a twin when the first committed late)."""
    emu.faults.fail_next(status=503, method="POST")  # JSON, nothing committed
    # Without an alias (the service names it; no task key outside a task) there is nothing to look up by.
    expected = "none it could have made appeared" if alias else "cannot be looked up"
    with pytest.raises(LinkstatsOutcomeUnknownError, match=expected):
        links.create_link("https://example.com/a", **({"alias": alias} if alias else {}))
    assert emu.store.links() == [] and sent(emu, "POST", "links") == 1
    assert sent(emu, "GET", "links") >= 2 if alias else sent(emu, "GET", "links") == 0


def test_an_alias_found_on_another_long_url_is_another_links_and_left_alone(emu, links):
    other = links.create_link("https://example.com/other", alias="spring", expiration_clicks=3)
    emu.faults.fail_next(status=504, method="POST")  # before any work: the alias is the other link's
    with pytest.raises(LinkstatsExistsError, match=r"alias 'spring' exists .*not the one asked \(url: asked"):
        links.create_link("https://example.com/a", alias="spring", expiration_clicks=9)
    (stored,) = emu.store.links()
    assert stored["id"] == other["id"] and stored["url"] == "https://example.com/other"
    assert sent(emu, "PUT", "links") == 0


@pytest.mark.parametrize("status", GATEWAY)
def test_a_website_create_answered_by_a_gateway_after_commit_is_found_by_its_domain(emu, sites, status):
    emu.faults.fail_next(status=status, method="POST", after_commit=True)
    record = sites.create_website("shop.example.com", privacy=1)
    assert [site["id"] for site in emu.store.websites()] == [record["id"]]
    assert sent(emu, "POST", "websites") == 1


@pytest.mark.parametrize("status", GATEWAY)
def test_an_update_answered_by_a_gateway_after_commit_is_read_back_not_resent(emu, links, status):
    link = links.create_link("https://example.com/a", alias="spring")
    emu.stats.reset()
    emu.faults.fail_next(status=status, method="PUT", after_commit=True)
    record = links.update_link(link["id"], url="https://example.com/b", expiration_clicks=7)
    assert record["url"] == "https://example.com/b" and record["expiration_clicks"] == 7
    assert emu.store.links()[0]["url"] == "https://example.com/b"
    assert sent(emu, "PUT", "links") == 1 and sent(emu, "GET", "links") == 1


def test_an_update_a_gateway_refused_before_any_work_is_sent_again(emu, links):
    link = links.create_link("https://example.com/a", alias="spring")
    emu.stats.reset()
    emu.faults.fail_next(status=502, method="PUT")
    links.update_link(link["id"], url="https://example.com/b")
    assert emu.store.links()[0]["url"] == "https://example.com/b"
    assert sent(emu, "PUT", "links") == 2 and sent(emu, "GET", "links") == 1


@pytest.mark.parametrize("status", GATEWAY)
def test_a_website_update_answered_by_a_gateway_after_commit_is_read_back(emu, sites, status):
    site = sites.create_website("shop.example.com")
    emu.stats.reset()
    emu.faults.fail_next(status=status, method="PUT", after_commit=True)
    record = sites.update_website(site["id"], email=1)
    assert record["email"] == 1 and emu.store.websites()[0]["email"] == 1
    assert sent(emu, "PUT", "websites") == 1


def test_a_429_is_still_retried_without_a_look_up(emu, links):
    emu.faults.fail_next(status=429, retry_after=0, method="POST")
    links.create_link("https://example.com/a", alias="spring")
    assert sent(emu, "POST", "links") == 2 and sent(emu, "GET", "links") == 0


def test_a_delete_answered_by_a_gateway_after_commit_is_resent_and_its_404_is_success(emu, links):
    link = links.create_link("https://example.com/a", alias="spring")
    emu.faults.fail_next(status=504, method="DELETE", after_commit=True)
    assert links.delete_link(link["id"]) is True
    assert emu.store.links() == [] and sent(emu, "DELETE", "links") == 2


def test_a_space_create_answered_by_a_gateway_is_found_among_the_spaces_made_since(emu, links):
    """A space's name is not unique: an older space of the same name is never taken for this create's."""
    older = emu.store.add_space(name="Spring")
    emu.clock.advance(10)  # the older one was made well before
    emu.faults.fail_next(status=504, method="POST", path_prefix="/spaces", after_commit=True)
    record = links.create_space("Spring")
    assert sent(emu, "POST", "spaces") == 1 and record["id"] != older["id"]
    spaces = [space for space in links.list_spaces() if space["name"] == "Spring"]
    assert sorted(space["id"] for space in spaces) == sorted([older["id"], record["id"]])  # no twin
