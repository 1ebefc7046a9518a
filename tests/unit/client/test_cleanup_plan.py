"""The cleanup's plan without I/O (client/cleanup.py, client/paging.py): canned pages and times in,
decisions out. The driver and the service are tested in tests/integration/test_cleanup.py."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_linkstats.client.cleanup import CleanupRules, CleanupWalk, decision_moment
from airflow_provider_linkstats.client.paging import PageGuard, UntrustedListingError, page_bound

NOW = dt.datetime(2026, 11, 26, 12, 0, tzinfo=dt.timezone.utc)
URL = "http://svc/api/v1/links?per_page=3&sort_by=id&sort=asc"


def link(link_id: int, *, ends: dt.datetime | None = None, created_days_ago: float = 90) -> dict:
    ends = ends or NOW - dt.timedelta(days=1)
    return {
        "id": link_id,
        "alias": f"a{link_id}",
        "ends_at": ends.isoformat(),
        "created_at": (NOW - dt.timedelta(days=created_days_ago)).isoformat(),
    }


def walk_of(rows: list[dict], size: int = 3, *, meta: bool = True, **kwargs) -> CleanupWalk:
    first = rows[:size]
    last_page = max(1, -(-len(rows) // size)) if meta else None
    total = len(rows) if meta else None
    return CleanupWalk(
        CleanupRules(**kwargs), first, per_page=size, url=URL, last_page=last_page, total=total, max_age=120.0
    )


def test_expired_is_decided_by_the_moment_given_not_the_workers_clock():
    rules = CleanupRules()
    ends = NOW + dt.timedelta(minutes=5)  # live for 5 more minutes by the service's clock
    assert rules.failed_rule(link(1, ends=ends), NOW) == "expired"
    assert rules.failed_rule(link(1, ends=ends), NOW + dt.timedelta(minutes=10)) is None
    older = CleanupRules(expired=False, older_than=dt.timedelta(days=30))
    assert older.failed_rule(link(2, created_days_ago=31), NOW) is None
    assert older.failed_rule(link(2, created_days_ago=29), NOW) == "older_than_days"
    assert older.describe() == "created more than 30 days ago"


def test_a_page_is_judged_no_later_than_its_own_date_says():
    """The clock's settled now is a belief; the answer's Date is the evidence: the earlier wins."""
    margin = 2.5
    behind = (NOW - dt.timedelta(minutes=10)).timestamp()  # the service's clock stepped back 10 min
    judged = decision_moment(NOW, behind, margin=margin)
    assert judged == NOW - dt.timedelta(minutes=10, seconds=margin)
    ends = NOW - dt.timedelta(minutes=5)  # over by the offset learned before the step, live by the answer
    assert CleanupRules().failed_rule(link(1, ends=ends), NOW) is None
    assert CleanupRules().failed_rule(link(1, ends=ends), judged) == "expired"  # kept
    ahead = (NOW + dt.timedelta(minutes=10)).timestamp()  # an answer ahead of the clock decides nothing sooner
    assert decision_moment(NOW, ahead, margin=margin) == NOW
    walk = walk_of([link(1, ends=ends), link(2)], meta=True)
    plan = walk.page(1, walk.first, judged)
    verdict = plan.confirm(walk.confirming(plan, walk.first), judged, sent_at=0.0)
    assert verdict.delete == [2] and sorted(plan.examined) == [1, 2]


def test_the_backward_walk_reads_the_last_page_first_and_confirms_each_page():
    rows = [link(i) for i in range(1, 8)]  # 3 pages of 3: [1,2,3] [4,5,6] [7]
    walk = walk_of(rows)
    assert walk.backward and not walk.distrusted
    numbers = []
    while (number := walk.next_number()) is not None:
        numbers.append(number)
        page = rows[(number - 1) * 3 : number * 3]
        plan = walk.page(number, page, NOW)
        assert sorted(plan.candidates) == [r["id"] for r in page]
        verdict = plan.confirm(walk.confirming(plan, page), NOW, sent_at=100.0)
        assert verdict.delete == [r["id"] for r in page] and verdict.fresh_until == 220.0
        walk.done(plan, removed=len(verdict.delete))
    assert numbers == [3, 2, 1]


def test_a_record_changed_after_the_walk_read_is_kept_and_a_vanished_one_is_not_deleted():
    rows = [link(i) for i in range(1, 7)]
    walk = walk_of(rows)
    assert walk.next_number() == 2
    plan = walk.page(2, rows[3:6], NOW)
    assert sorted(plan.candidates) == [4, 5, 6]
    # Between the two reads: 5's end moved 30 days later, 6 was deleted by someone else.
    confirming = [rows[3], link(5, ends=NOW + dt.timedelta(days=30))]
    verdict = plan.confirm(walk.confirming(plan, confirming), NOW, sent_at=0.0)
    assert verdict.delete == [4]
    assert [(r["id"], rule) for r, rule in verdict.changed] == [(5, "expired")]
    assert verdict.left == [6] and not plan.pending


def test_a_record_that_moved_to_an_earlier_page_is_read_again_there_not_deleted_here():
    rows = [link(i) for i in range(1, 7)]
    walk = walk_of(rows)
    walk.next_number()
    plan = walk.page(2, rows[3:6], NOW)
    # Someone deleted link 2: page 2 now starts at 5, link 4 is on page 1.
    verdict = plan.confirm(walk.confirming(plan, [rows[4], rows[5]]), NOW, sent_at=0.0)
    assert verdict.delete == [5, 6] and verdict.moved == [4] and verdict.left == []
    walk.done(plan, removed=2)
    assert walk.next_number() == 1
    plan = walk.page(1, [rows[0], rows[2], rows[3]], NOW)
    assert sorted(plan.candidates) == [1, 3, 4]  # 4 is found again, and confirmed by page 1's own read


def test_a_delete_held_too_long_goes_back_for_another_confirming_read():
    rows = [link(i) for i in range(1, 4)]
    walk = walk_of(rows)
    walk.next_number()
    plan = walk.page(1, rows, NOW)
    verdict = plan.confirm(walk.confirming(plan, rows), NOW, sent_at=0.0)
    assert verdict.delete == [1, 2, 3] and not plan.pending
    walk.settle(plan)  # as the driver does after the first confirming read: the page's own re-reads still count
    plan.requeue([{"id": 3}])  # its delete waited past the freshness window: not sent
    assert plan.pending
    verdict = plan.confirm(walk.confirming(plan, rows[2:]), NOW, sent_at=130.0)
    assert verdict.delete == [3] and verdict.fresh_until == 250.0 and plan.rounds == 2


def test_a_listing_without_meta_walks_forward_from_the_offset_still_listed():
    rows = [link(i) if i % 2 else link(i, ends=NOW + dt.timedelta(days=9)) for i in range(1, 8)]
    walk = walk_of(rows, meta=False)
    assert not walk.backward
    listed = list(rows)
    numbers = []
    while (number := walk.next_number()) is not None:
        numbers.append(number)
        page = listed[(number - 1) * 3 : number * 3]
        plan = walk.page(number, page, NOW)
        gone = sorted(plan.candidates)
        listed = [r for r in listed if r["id"] not in gone]  # deleted
        walk.done(plan, removed=len(gone))
    assert numbers == [1, 1, 1, 2] and [r["id"] for r in listed] == [2, 4, 6]


def test_a_dry_run_without_meta_ends_too():
    """Before: the next page was computed from what was deleted, so a dry run read page 1 forever."""
    rows = [link(i) for i in range(1, 8)]
    walk = walk_of(rows, meta=False)
    numbers = []
    while (number := walk.next_number()) is not None:
        numbers.append(number)
        walk.done(walk.page(number, rows[(number - 1) * 3 : number * 3], NOW), removed=0)
    assert numbers == [1, 2, 3]


def test_a_service_that_ignores_the_page_number_is_stopped_naming_the_url():
    rows = [link(i) for i in range(1, 4)]
    walk = walk_of(rows, meta=False)
    walk.done(walk.page(walk.next_number(), rows, NOW), removed=0)
    with pytest.raises(UntrustedListingError, match="answered page 2 with the same 3 rows as page 1") as error:
        walk.page(walk.next_number(), rows, NOW)
    assert URL in str(error.value)


def test_a_page_count_that_disagrees_with_the_total_is_not_believed():
    rows = [link(i) for i in range(1, 4)]
    walk = CleanupWalk(CleanupRules(), rows, per_page=3, url=URL, last_page=1_000_000, total=3)
    assert walk.distrusted and not walk.backward and walk.next_number() == 1


def test_the_guard_bounds_a_walk_by_the_total_else_a_cap():
    assert page_bound(250, 100) == 5 and page_bound(None, 100) == 20_000
    guard = PageGuard(100)
    for number in range(1, 6):
        guard.read(number, [{"id": number}], url=URL, total=250)
    with pytest.raises(UntrustedListingError, match=r"at most 5 pages") as error:
        guard.read(6, [{"id": 6}], url=URL, total=250)
    assert URL in str(error.value)
    capped = PageGuard(100, cap=3)
    for number in range(1, 4):
        capped.read(number, [{"id": number}], url=URL)
    with pytest.raises(UntrustedListingError, match="no total"):
        capped.read(4, [{"id": 4}], url=URL)


def test_the_guard_learns_a_larger_page_size_than_asked():
    guard = PageGuard(10)
    guard.read(1, [{"id": i} for i in range(25)], url=URL, total=50)
    assert guard.page_size == 25 and guard.bound == 4


def test_a_record_handled_on_a_later_page_is_not_handled_again_when_it_moves_down():
    live = NOW + dt.timedelta(days=9)
    rows = [link(1), link(2), link(3), link(4, ends=live), link(5), link(6, ends=live)]
    walk = walk_of(rows)
    walk.next_number()
    later = walk.page(2, rows[3:6], NOW)
    verdict = later.confirm(walk.confirming(later, rows[3:6]), NOW, sent_at=0.0)
    assert verdict.delete == [5] and later.kept == 2
    walk.settle(later)  # before page 1 is read: the driver settles the page at its first confirming read
    # Someone deleted link 2, and 5 is gone: page 1 now holds 1, 3 and 4 (kept on page 2 already).
    earlier = walk.page(1, [rows[0], rows[2], rows[3]], NOW)
    assert sorted(earlier.candidates) == [1, 3] and earlier.kept == 0
