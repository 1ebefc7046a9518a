"""``paging.GaplessWalk`` fed a listing that changes between every two page reads: deletes anywhere
(of records read or not), creates (newest), at random. Every record listed from the walk's start to
its end is yielded, once, at the pages a walk by offset reads (``ceil(total / size)``); the same
listing walked by offset, newest first, skips records."""

from __future__ import annotations

import math
import random

import pytest

from airflow_provider_linkstats.client.paging import GaplessWalk


class Listing:
    """Records by id as a service lists them: sorted by id, paged by offset, with a total."""

    def __init__(self, count: int, size: int) -> None:
        self.ids = list(range(1, count + 1))
        self.size = size
        self.next_id = count + 1

    def page(self, order: str, number: int, *, meta: bool = True, lie: float = 1.0) -> dict:
        ordered = sorted(self.ids, reverse=order == "desc")
        items = [{"id": i} for i in ordered[(number - 1) * self.size : number * self.size]]
        has_next = number * self.size < len(ordered)
        told = int(len(ordered) * lie)
        if lie != 1.0 and told % self.size == 0:
            told += 1  # a lie of a whole number of pages is not caught (see GaplessWalk)
        return {"items": items, "has_next": has_next, "total": told if meta else None}

    def churn(self, rng: random.Random, deletes: int, creates: int) -> None:
        for _ in range(min(deletes, len(self.ids))):
            self.ids.remove(rng.choice(self.ids))
        for _ in range(creates):
            self.ids.append(self.next_id)
            self.next_id += 1


def walk(listing: Listing, rng: random.Random, deletes: int, creates: int, *, meta: bool = True, lie: float = 1.0):
    walker, yielded = GaplessWalk(), []
    while (step := walker.next()) is not None:
        answer = listing.page(*step, meta=meta, lie=lie)
        yielded += walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])
        listing.churn(rng, rng.randint(0, deletes), rng.randint(0, creates))
    return walker, [item["id"] for item in yielded]


@pytest.mark.parametrize("seed", range(200))
def test_no_record_listed_throughout_is_skipped_whatever_changes_between_pages(seed):
    rng = random.Random(seed)
    listing = Listing(rng.randint(0, 1000), rng.choice([10, 25, 100]))
    at_start, pages = set(listing.ids), math.ceil(len(listing.ids) / listing.size) or 1
    deletes = rng.choice([0, 1, 3, 150])
    walker, seen = walk(listing, rng, deletes=deletes, creates=rng.choice([0, 1, 5]))
    assert at_start & set(listing.ids) <= set(seen)  # listed from start to end: seen
    assert len(seen) == len(set(seen))  # each once
    if deletes < listing.size:
        assert walker.pages == pages  # a delete or a create costs no request
    else:  # a page's worth deleted before the first oldest-first read: the end is looked for below
        assert walker.pages <= pages + 2 * math.ceil(math.log2(pages + 1))


def test_a_walk_by_offset_skips_where_the_gapless_walk_does_not():
    listing = Listing(150, 100)
    newest_first = [item["id"] for item in listing.page("desc", 1)["items"]]
    listing.ids.remove(120)  # deleted once page 1 was read
    newest_first += [item["id"] for item in listing.page("desc", 2)["items"]]
    assert 50 not in newest_first  # moved up to page 1: skipped

    listing = Listing(150, 100)
    walker, yielded = GaplessWalk(), []
    while (step := walker.next()) is not None:
        answer = listing.page(*step)
        yielded += [i["id"] for i in walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])]
        if 120 in listing.ids:
            listing.ids.remove(120)
    assert set(range(1, 151)) - {120} <= set(yielded) and walker.pages == 2


@pytest.mark.parametrize("seed", range(200))
def test_without_a_total_the_end_is_found_first_and_nothing_is_skipped(seed):
    """A proxy strips ``meta``: the walk finds the last page (doubling, then halving) and goes down
    from it, at about 2 log2(pages) requests more."""
    rng = random.Random(seed)
    listing = Listing(rng.randint(0, 1000), rng.choice([10, 25, 100]))
    at_start, pages = set(listing.ids), math.ceil(len(listing.ids) / listing.size) or 1
    walker, seen = walk(listing, rng, deletes=rng.choice([0, 1, 3, 50]), creates=rng.choice([0, 1, 5]), meta=False)
    assert at_start & set(listing.ids) <= set(seen)
    assert len(seen) == len(set(seen))
    assert walker.pages <= pages + 2 * math.ceil(math.log2(pages + 1)) + 3


def test_without_a_total_100_pages_cost_14_more():
    walker, seen = walk(Listing(10_000, 100), random.Random(1), deletes=0, creates=0, meta=False)
    assert sorted(seen) == list(range(1, 10_001)) and walker.pages == 100 + 14


@pytest.mark.parametrize("lie", [0.3, 0.9, 3.0, 40.0])
@pytest.mark.parametrize("seed", range(40))
def test_a_total_that_lies_is_caught_by_the_first_oldest_first_page(seed, lie):
    """A stale or lying total (a proxy's cached ``meta``): too short, the first oldest-first page is
    full below the newest records, too long, it is empty; either way the end is looked for. (A total
    short by a whole number of pages is believed: that page would meet the newest ones exactly.)"""
    rng = random.Random(seed)
    listing = Listing(rng.randint(101, 1000), rng.choice([10, 25, 100]))
    at_start = set(listing.ids)
    walker, seen = walk(listing, rng, deletes=rng.choice([0, 1, 3]), creates=rng.choice([0, 1]), lie=lie)
    assert at_start & set(listing.ids) <= set(seen)
    assert len(seen) == len(set(seen))


@pytest.mark.parametrize("served", ["asc", "desc"])
def test_a_service_that_ignores_sort_is_read_forward_and_says_so(served):
    """A page in another order than asked: the walk reads the listing forward from page 1 (every
    record once), ``unsorted`` says so."""
    listing = Listing(350, 100)
    walker, yielded = GaplessWalk(), []
    while (step := walker.next()) is not None:
        answer = listing.page(served, step[1])
        yielded += [i["id"] for i in walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])]
    assert sorted(yielded) == list(range(1, 351)) and walker.unsorted
    assert walker.pages == (4 if served == "asc" else 1 + 1 + 4)  # asc: page 1 told at once; desc: at page 3


def test_a_listing_of_one_page_is_one_read():
    listing = Listing(100, 100)
    walker, seen = walk(listing, random.Random(2), deletes=0, creates=0)
    assert len(seen) == 100 and walker.pages == 1


def test_a_page_1_served_oldest_first_while_later_pages_follow_sort_is_read_on_in_its_order():
    """A proxy or cache that drops ``sort`` on page 1 only: page 1 comes oldest first, pages 2.. as
    asked. The plain walk went on newest first from page 2, so the 100 newest of 350 were never
    read (250 seen); it goes on in page 1's order: every record once."""
    listing = Listing(350, 100)
    walker, yielded = GaplessWalk(), []
    while (step := walker.next()) is not None:
        order = "asc" if walker.pages == 0 else step[0]
        answer = listing.page(order, step[1])
        yielded += [i["id"] for i in walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])]
    assert sorted(yielded) == list(range(1, 351)) and walker.unsorted  # before: 250 of 350
    assert walker.pages == 4
