"""The example DAGs: they import cleanly and run end to end in real Airflow against the emulator."""

from __future__ import annotations

import csv
import threading

import airflow
import pendulum
import pytest
import requests

from tests.support.example_dags import EXAMPLES, VISITORS, click_until_expired, load, load_module
from tests.support.service_clock import follow_the_emulators_clock


def dagbag():
    if airflow.__version__.startswith("2."):
        from airflow.models.dagbag import DagBag

        return DagBag(dag_folder=str(EXAMPLES), include_examples=False)
    try:
        from airflow.dag_processing.dagbag import DagBag  # Airflow >= 3.2
    except ImportError:
        from airflow.models.dagbag import DagBag  # 3.0 and 3.1

    return DagBag(dag_folder=str(EXAMPLES))


def test_dagbag_imports_every_example_without_errors(airflow_db):
    bag = dagbag()
    assert bag.import_errors == {}
    expected = {
        "linkstats_campaign_launch",
        "linkstats_cleanup_expired",
        "linkstats_weekly_report",
        "linkstats_bulk_launch",
        "linkstats_stats_to_warehouse",
        "linkstats_warehouse_top_links",
    }
    if not airflow.__version__.startswith("2."):
        expected.add("linkstats_cleanup_on_expiry")  # Airflow 3 only (AssetWatcher)
    assert set(bag.dag_ids) == expected
    assert all("linkstats" in bag.get_dag(dag_id).tags for dag_id in bag.dag_ids)


def seed_link(emu, *, clicks_limit: int | None = None, **fields):
    """A link stored directly, with its click limit as the emulator's generation spells it."""
    if clicks_limit is not None:
        fields["clicks_limit" if emu.links_version == "49" else "expiration_clicks"] = clicks_limit
    return emu.store.add_link(**fields)


def seed_dated_link(emu, ends: pendulum.DateTime, **fields):
    """A link whose active time ends at ``ends`` (UTC), in the emulator's generation's fields."""
    if emu.links_version == "49":
        start = ends.subtract(days=30)
        fields.update(active_period_start_at=start.isoformat(), active_period_end_at=ends.isoformat())
    else:
        fields.update(expiration_date=ends.format("YYYY-MM-DD"), expiration_time=ends.format("HH:mm"))
    return emu.store.add_link(**fields)


def test_campaign_dag_end_to_end(emu_any, airflow_db, monkeypatch):
    emu = emu_any
    # The visitors expire the dated link by moving the emulator's clock: the wait, which sleeps
    # until a link's end time by the service's clock, follows that clock through the jump.
    follow_the_emulators_clock(monkeypatch, emu)
    monkeypatch.setenv("LINKSTATS_CAMPAIGN_POKE_INTERVAL", "0.5")
    monkeypatch.setenv("LINKSTATS_CAMPAIGN_WAIT_TIMEOUT", "120")
    dag = load("linkstats_campaign_launch")
    stop = threading.Event()
    visitors = threading.Thread(target=click_until_expired, args=(emu, "e2e", stop), daemon=True)
    visitors.start()
    try:
        run = dag.test(run_conf={"campaign": "e2e", "expire_after_clicks": 4, "website_domain": "e2e.example.com"})
    finally:
        stop.set()
        visitors.join(timeout=5)
    assert run.state == "success"
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert states["wait_for_expiry"] == "success" and states["report_clicks"] == "success"
    report = run.get_task_instance("report_clicks").xcom_pull(task_ids="report_clicks")
    assert set(report) == {"e2e-geo", "e2e-app", "e2e-ab"}
    assert report["e2e-geo"]["clicks"] >= 4 and report["e2e-app"]["clicks"] >= 4
    for alias in ("e2e-geo", "e2e-app"):  # the visitors' real breakdown: countries and platforms by header
        numbers = report[alias]
        assert sum(numbers["by_country"].values()) == numbers["clicks"] == sum(numbers["by_platform"].values())
        assert set(numbers["by_country"]) <= {country for country, _, _ in VISITORS}
        assert set(numbers["by_platform"]) <= {"iOS", "Android", "Windows", "OS X"}
    assert emu.store.links() == [] and emu.store.websites() == []  # nothing left behind
    assert emu.stats.count(method="POST", path_prefix="/public/api/v1/links") == 3


def test_campaign_teardown_deletes_the_links_made_when_one_create_fails(emu_any, airflow_db):
    """One create refused (a 422 no retry mends): the run fails, link_ids never runs, and the teardown
    still deletes the two links the other creates made (it used to fail on link_ids=None and leave them)."""
    import json

    emu = emu_any
    refusal = json.dumps({"message": {"url": ["The url format is invalid."]}, "status": 422})
    emu.faults.fail_next(status=422, method="POST", path_prefix="/links", body=refusal, content_type="application/json")
    run = load("linkstats_campaign_launch").test(
        run_conf={"campaign": "half", "expire_after_clicks": 4, "website_domain": "half.example.com"}
    )
    assert run.state == "failed"
    tis = run.get_task_instances()
    creates = sorted(ti.state for ti in tis if ti.task_id == "create_links")
    assert creates == ["failed", "success", "success"], creates
    states = {ti.task_id: ti.state for ti in tis if ti.task_id != "create_links"}
    assert states["link_ids"] == "upstream_failed" and states["wait_for_expiry"] == "upstream_failed"
    assert states["delete_links"] == "success" and states["delete_website"] == "success", states
    assert emu.stats.count(method="POST", path_prefix="/public/api/v1/links") == 3  # the refused one included
    assert emu.store.links() == [] and emu.store.websites() == []  # nothing left behind


def test_bulk_launch_dag_creates_the_campaign_from_its_csv_and_a_second_run_creates_nothing(
    emu_any, airflow_db, tmp_path
):
    emu = emu_any
    dag = load("linkstats_bulk_launch")
    conf = {"campaign": "e2e-bulk", "count": 150, "workdir": f"file://{tmp_path}"}
    run = dag.test(run_conf=conf)
    assert run.state == "success"
    result = run.get_task_instance("create_links").xcom_pull(task_ids="create_links")
    assert (result["created"], result["failed"], result["total"]) == (150, 0, 150)
    assert result["result_path"] == f"file://{tmp_path}/e2e-bulk.csv.result.json"  # 150 > xcom_limit
    stored = {link["alias"]: link for link in emu.store.links()}
    assert len(stored) == 150 and "e2e-bulk-sku-0001" in stored
    targeted = stored["e2e-bulk-sku-0003"]
    rules = targeted.get("country_target") or targeted.get("targets")
    assert [rule["key"] for rule in rules] == ["US", "FR"]
    posts = emu.stats.count(method="POST", path_prefix="/public/api/v1/links")
    assert posts == 150  # one create per link
    again = dag.test(run_conf=conf)  # the walk finds all 150: nothing is created twice
    assert again.state == "success"
    second = again.get_task_instance("create_links").xcom_pull(task_ids="create_links")
    assert (second["created"], second["skipped"]) == (0, 150)
    assert emu.stats.count(method="POST", path_prefix="/public/api/v1/links") == 150 and len(emu.store.links()) == 150


def test_cleanup_dag_deletes_only_old_expired_links(emu_any, airflow_db):
    emu = emu_any
    emu.clock.set(pendulum.now("UTC").subtract(days=45))
    old = [
        seed_link(emu, url=f"https://example.com/o{i}", alias=f"old{i}", clicks_limit=1, clicks=1)
        for i in range(120)
    ]
    # Five old links that ended by date ten days after they were made: phpShort 46+ leaves them out
    # of its own Expired listing, so they show whether the status is decided from the records.
    ended = pendulum.now("UTC").subtract(days=35)
    dated = [seed_dated_link(emu, ended, url=f"https://example.com/d{i}", alias=f"dated{i}") for i in range(5)]
    old += dated
    emu.store.add_link(url="https://example.com/old-active", alias="old-active")
    emu.clock.reset()
    fresh = [
        seed_link(emu, url=f"https://example.com/f{i}", alias=f"fresh{i}", clicks_limit=1, clicks=1)
        for i in range(3)
    ]
    # The default ceiling is half of all links: 125 of 129 takes a person's approval (Airflow 3.1+).
    run = load("linkstats_cleanup_expired").test(run_conf={"older_than_days": 30, "max_share": 1})
    assert run.state == "success"
    remaining = {link["alias"] for link in emu.store.links()}
    assert remaining == {"old-active"} | {link["alias"] for link in fresh}
    assert emu.stats.count(method="DELETE") == len(old)
    summary = run.get_task_instance("summary").xcom_pull(task_ids="summary")
    # kept: listed but not matching; phpShort 49's walk lists every link (its Expired filter misses dates).
    kept = 3 if emu.links_version == "44" else 4
    assert summary == {"matched": 125, "deleted": 125, "already_gone": 0, "kept": kept}


BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"  # websites leave bots (python-requests) out


def test_report_dag_writes_csv_ranked_by_clicks_with_referrers_and_website_traffic(emu_any, airflow_db, tmp_path):
    emu = emu_any
    for index, clicks in enumerate([5, 40, 12, 0]):
        limit = 5 if index == 0 else None  # rank0 has used up its clicks
        seed_link(emu, url=f"https://example.com/{index}", alias=f"rank{index}", clicks=clicks, clicks_limit=limit)
    for referrer in ["https://news.example/a", "https://news.example/b", "https://mail.example/"]:
        requests.get(f"{emu.url}/rank1", headers={"Referer": referrer}, allow_redirects=False, timeout=5)
    emu.store.add_website(domain="b.example.com")
    emu.store.add_website(domain="a.example.com")
    for visitor in range(4):  # 4 visits of a.example.com (from outside the site), 6 pageviews
        for page in range(1 + visitor % 2):
            inside = {"referrer": f"https://a.example.com/p{page - 1}"} if page else {}  # not a new visit
            requests.post(
                f"{emu.analytics_url}/api/event",
                data={"page": f"https://a.example.com/p{page}", **inside},
                headers={"User-Agent": BROWSER},
                timeout=5,
            ).raise_for_status()
    run = load("linkstats_weekly_report").test(run_conf={"top_n": 3, "output_dir": str(tmp_path)})
    assert run.state == "success"
    (links_csv,) = tmp_path.glob("top_links_*.csv")
    rows = list(csv.DictReader(links_csv.open()))
    assert [(r["alias"], r["clicks"]) for r in rows] == [("rank1", "43"), ("rank2", "12"), ("rank0", "5")]
    assert [r["status"] for r in rows] == ["Active", "Active", "Expired"]  # link_status(), not a record field
    (referrers_csv,) = tmp_path.glob("referrers_*.csv")
    assert sorted((r["alias"], r["referrer"], r["clicks"]) for r in csv.DictReader(referrers_csv.open())) == [
        ("rank1", "mail.example", "1"),
        ("rank1", "news.example", "2"),
    ]
    (sites_csv,) = tmp_path.glob("websites_*.csv")
    assert [r["domain"] for r in csv.DictReader(sites_csv.open())] == ["a.example.com", "b.example.com"]
    (traffic_csv,) = tmp_path.glob("website_traffic_*.csv")
    traffic = [(r["domain"], r["visitors"], r["pageviews"]) for r in csv.DictReader(traffic_csv.open())]
    assert traffic == [("a.example.com", "4", "6")]  # one day of traffic; b.example.com had none
    charts = sorted(path.name.split("_2")[0] for path in tmp_path.glob("*.png"))
    try:
        import matplotlib  # noqa: F401

        assert charts == ["referrers", "top_links", "website_traffic"]
        assert all(path.stat().st_size > 5000 for path in tmp_path.glob("*.png"))
    except ImportError:
        assert charts == []  # skipped cleanly, the run still succeeded


@pytest.mark.parametrize(
    "dag_id",
    [
        "linkstats_campaign_launch",
        "linkstats_cleanup_expired",
        "linkstats_weekly_report",
        "linkstats_cleanup_on_expiry",
        "linkstats_stats_to_warehouse",
    ],
)
def test_examples_use_only_the_public_api_and_params(dag_id):
    source = (EXAMPLES / f"{dag_id}.py").read_text()
    assert "airflow_provider_linkstats.emulator" not in source  # real services need only other connections
    assert "requests" not in source and "httpx" not in source
    assert "params=" in source


@pytest.mark.skipif(airflow.__version__.startswith("2."), reason="AssetWatcher needs Airflow 3")
def test_cleanup_on_expiry_is_scheduled_by_a_watched_asset_with_stable_trigger_kwargs():
    from airflow.triggers.base import BaseEventTrigger

    from airflow_provider_linkstats.triggers.links import LinkstatsLinksExpiredEventTrigger

    def watcher_trigger():
        module = load_module("linkstats_cleanup_on_expiry")
        asset = module.expired_links
        assert list(module.dag.timetable.asset_condition.objects) == [asset]  # the asset alone schedules it
        (watcher,) = asset.watchers
        return asset, watcher.trigger

    asset, trigger = watcher_trigger()
    assert asset.name == "linkstats_expired_links"
    assert isinstance(trigger, LinkstatsLinksExpiredEventTrigger)
    # Parsed twice (as the dag-processor does), the trigger hashes the same: one watcher, not two.
    assert BaseEventTrigger.hash(*trigger.serialize()) == BaseEventTrigger.hash(*watcher_trigger()[1].serialize())


@pytest.mark.skipif(airflow.__version__.startswith("2."), reason="AssetWatcher needs Airflow 3")
def test_cleanup_on_expiry_deletes_exactly_the_links_of_its_events():
    from types import SimpleNamespace

    dag = load("linkstats_cleanup_on_expiry")
    collect = dag.get_task("expired_in_events").python_callable
    events = {
        "linkstats_expired_links": [
            SimpleNamespace(extra={"from_trigger": True, "payload": {"links": [{"id": 4}, {"id": 9}]}}),
            SimpleNamespace(extra={"from_trigger": True, "payload": {"links": [{"id": 9}, {"id": 2}]}}),
        ]
    }
    assert collect(triggering_asset_events=events) == [4, 9, 2]
    delete = dag.get_task("delete_expired")
    assert delete.missing_ok is True


def test_report_dag_on_an_empty_account_still_writes_the_report(emu_any, airflow_db, tmp_path):
    run = load("linkstats_weekly_report").test(run_conf={"output_dir": str(tmp_path)})
    assert run.state == "success"
    assert run.get_task_instance("write_report").state == "success"  # not skipped with the empty mapped tasks
    (links_csv,) = tmp_path.glob("top_links_*.csv")
    assert list(csv.DictReader(links_csv.open())) == []
