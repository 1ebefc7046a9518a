"""What a cleanup's delete rests on: evidence bounded per delete, and the answer's own ``Date``.

- Issue 43, item 5: no delete acts on a confirming read more than ``evidence_max_age`` old, 15 s by
  default. Before, one confirming read covered every delete of its page however long the rate
  limit held them, up to 120 s: a link renewed after the read and before its own delete was deleted.
- Issue 44, item 1: a page's links are judged over only if that answer's own ``Date`` says they
  ended, not by an offset the answer contradicts (the service's clock stepped back since it was learned).
"""

from __future__ import annotations

import threading
import time

import pendulum
import pytest
import requests

from tests.conftest import API_KEY, connection_json, run_operator


def cleanup(**kwargs):
    from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator

    return LinkstatsCleanupLinksOperator(task_id="cleanup", max_share=None, **kwargs)


def confirming_reads(emu) -> list[dict]:
    return [
        r for r in emu.stats.requests() if r["method"] == "GET" and r["path"].endswith("/links") and "_" in r["query"]
    ]


def test_a_link_renewed_after_its_pages_confirming_read_and_before_its_delete_is_kept(emu):
    """The page's confirming read shows the link over; its delete is held 40 s (a 429 whose
    ``Retry-After`` says so, as the real limit holds a page's later deletes); 10 s after the read its
    owner renews it (a click limit raised). Before: deleted 40 s after the read, on its evidence (the
    default allowed 120 s). Now: the page is read again 15 s after, which shows it renewed: kept."""
    renewed = emu.store.add_link(url="https://example.com/renewed", alias="renewed", expiration_clicks=1, clicks=1)
    emu.stats.reset()
    emu.faults.fail_next(count=1, status=429, retry_after=40, method="DELETE")
    renewed_at: list[float] = []
    stop = threading.Event()

    def owner() -> None:  # renews the link 10 s after the first confirming read was answered
        while not stop.is_set() and not confirming_reads(emu):
            time.sleep(0.05)
        if stop.wait(10):
            return
        answer = requests.put(
            f"{emu.url}/public/api/v1/links/{renewed['id']}",
            data={"expiration_clicks": 100},
            headers={"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        renewed_at.append(time.monotonic())

    thread = threading.Thread(target=owner, daemon=True)
    thread.start()
    started = time.monotonic()
    try:
        result, _ = run_operator(cleanup(max_workers=1))
    finally:
        stop.set()
        thread.join(timeout=15)
    assert renewed_at, "the owner's renewal was not sent"
    assert {link["id"] for link in emu.store.links()} == {renewed["id"]}, result  # before: deleted at 40 s
    # The Expired listing (phpShort 44) no longer holds it at the read after: left, not deleted.
    assert result["deleted"] == 0 and result["unconfirmed"] + result["changed"] == 1, result
    assert result["evidence_max_age"] == 15 and result["evidence_age_max"] <= 15, result
    assert len(confirming_reads(emu)) >= 2 and time.monotonic() - started < 120, result


@pytest.fixture
def emu49(emulators, monkeypatch):
    """phpShort 49: its Expired filter misses links ended by date, so the walk covers all links and
    each record is judged by the provider's clock (where a clock step matters)."""
    emulator = emulators("49")
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version="49"))
    yield emulator
    emulator.reset()


def dated(emu, alias: str, ends: pendulum.DateTime) -> int:
    start = ends.subtract(days=30).isoformat()
    fields = {"active_period_start_at": start, "active_period_end_at": ends.isoformat()}
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **fields)["id"]


@pytest.mark.parametrize("dry_run", [True, False])
def test_links_live_by_the_answers_own_date_are_not_taken_for_over_after_a_step_back(emu49, dry_run):
    """The cleanup learns the service's clock from its first page (offset 0); right after that
    answer the service's clock steps 10 minutes back (an NTP correction). 5 links end 5 minutes
    after the service's new now, 3 ended a minute before it; 145 live ones fill two pages.
    Before: the dry run counted the 5 as over (5 of 5, judged by the offset learned before the step,
    which the client took each later answer as a cache's copy against). Now each page is judged at its
    own Date: the 5 are neither counted nor deleted."""
    emu = emu49
    now = pendulum.now("UTC")
    stepped = now.subtract(minutes=10)  # the service's clock after the step
    ids = [dated(emu, f"live{i}", now.add(days=30)) for i in range(70)]
    soon = [dated(emu, f"soon{i}", stepped.add(minutes=5)) for i in range(5)]
    ids += [dated(emu, f"live{i}", now.add(days=30)) for i in range(70, 145)]
    over = [dated(emu, f"over{i}", stepped.subtract(minutes=1)) for i in range(3)]
    emu.stats.reset()
    emu.faults.after_page(page=1, advance=-600, sort="asc")  # right after the first read of page 1

    result, _ = run_operator(cleanup(dry_run=dry_run))

    remaining = {link["id"] for link in emu.store.links()}
    assert set(soon) <= remaining and set(ids) <= remaining, result  # nothing live by the service's clock goes
    deleted = {int(r["path"].rsplit("/", 1)[1]) for r in emu.stats.requests() if r["method"] == "DELETE"}
    assert not deleted & set(soon), deleted
    if dry_run:
        assert result["matched"] == len(over), result  # before: 8 (the 5 live ones counted)
    else:
        assert deleted <= set(over) and result["matched"] <= len(over), result


def test_a_confirming_read_without_a_date_is_judged_as_without_a_clock(scripted, monkeypatch):
    """The first page tells the service's time, the confirming read (a proxy that strips it) does
    not: that answer cannot say a link ended, so its links are judged as without a clock, by
    ``margin_without_date``. Before: a link that ended 10 min ago was deleted on it; now kept, while
    one that ended 3 h ago goes."""
    now = pendulum.now("UTC")

    def record(i: int, ended: pendulum.DateTime) -> dict:
        return {"id": i, "alias": f"a{i}", "url": "https://example.com", "ends_at": ended.isoformat(),
                "expiration_clicks": 0, "clicks": 0, "disabled": 0, "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip

    items = [record(1, now.subtract(minutes=10)), record(2, now.subtract(hours=3))]
    reads = []

    def answer(request: dict):
        if request["method"] == "DELETE":
            return ("respond", 200, {"deleted": True}, {})
        reads.append(request)
        page = {"data": items, "meta": {"current_page": 1, "last_page": 1, "total": 2, "per_page": 100}}
        return ("respond", 200, page, {} if len(reads) == 1 else {"Date": None})

    scripted.set_default(answer)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    result, _ = run_operator(cleanup(margin_without_date=3600))
    deleted = [r["path"] for r in scripted.requests if r["method"] == "DELETE"]
    assert deleted == ["/public/api/v1/links/2"], (deleted, result)  # before: links 1 and 2
    assert result["changed"] == 1 and len(reads) == 2, result


def test_a_delete_done_behind_a_504_whose_retry_waits_past_its_evidence_is_counted_deleted(emu, caplog, capsys):
    """The service deletes the link but its gateway answers 504 with ``Retry-After: 3``; the retry
    would leave 3 s after the confirming read, past ``evidence_max_age`` (2 s), so it is not sent and
    the page is read again: the link is gone. Before: counted "not confirmed (left)" and logged as
    "not deleted", with 0 deleted. Now: counted deleted, and the log says why."""
    import logging

    caplog.set_level(logging.INFO)
    gone = emu.store.add_link(url="https://example.com/gone", alias="gone", expiration_clicks=1, clicks=1)
    emu.stats.reset()
    emu.faults.fail_next(count=1, status=504, retry_after=3, method="DELETE", after_commit=True)
    result, _ = run_operator(cleanup(max_workers=1, evidence_max_age=2))
    assert emu.store.links() == [] and emu.stats.count(method="DELETE") == 1  # the retry was not sent
    assert result["deleted"] == 1 and result["unconfirmed"] == 0 and result["sample_ids"] == [gone["id"]], result
    said = [r.getMessage() for r in caplog.records] + capsys.readouterr().out.splitlines()
    assert any(f"link {gone['id']} is gone: its delete was sent" in text for text in said), said
    assert not any("not deleted on that evidence" in text for text in said), said


def test_a_link_that_moves_to_the_earlier_page_during_a_later_confirming_read_is_still_deleted(emu, make_hook):
    """150 expired links, two pages walked backward; the rate limit (10 requests per 2 s) holds the
    deletes past ``evidence_max_age`` (1 s), so page 2 is read again several times. Right after its
    first confirming read a teammate deletes 5 links of page 1: page 2's lowest links move onto page
    1, which the walk read already. Before: page 2's next read no longer showed them and they were
    left (5 expired links kept, "not confirmed"). Now page 1 takes them and its own confirming read
    decides: every expired link goes, each counted once."""
    from tests.integration.test_cleanup import deletes_by_id, seed_expired

    expired = [seed_expired(emu, f"m{i}")["id"] for i in range(150)]
    teammates = expired[:5]
    emu.stats.reset()
    stop = threading.Event()

    def teammate() -> None:  # deletes 5 links of page 1 once page 2's first confirming read is answered
        while not stop.is_set():
            if any(r["query"].get("page") == ["2"] for r in confirming_reads(emu)):
                for record_id in teammates:
                    emu.store.delete("links", record_id)
                return
            time.sleep(0.005)

    thread = threading.Thread(target=teammate, daemon=True)
    thread.start()
    task = cleanup(evidence_max_age=1, max_workers=4)
    task.hook = make_hook("links", rate_limit_window=2.0)
    emu.limiter.configure(10, 2.0)
    try:
        result, _ = run_operator(task)
    finally:
        emu.limiter.configure(None)
        stop.set()
        thread.join(timeout=5)
    assert emu.store.links() == [], result  # before: 5 of page 2's links left
    assert result["deleted"] == result["matched"] == 145 and result["unconfirmed"] == 5, result  # the teammate's
    assert all(count == 1 for count in deletes_by_id(emu).values()), result
