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

    def page(self, order: str, number: int, *, meta: bool = True) -> dict:
        ordered = sorted(self.ids, reverse=order == "desc")
        items = [{"id": i} for i in ordered[(number - 1) * self.size : number * self.size]]
        has_next = number * self.size < len(ordered)
        return {"items": items, "has_next": has_next, "total": len(ordered) if meta else None}

    def churn(self, rng: random.Random, deletes: int, creates: int) -> None:
        for _ in range(min(deletes, len(self.ids))):
            self.ids.remove(rng.choice(self.ids))
        for _ in range(creates):
            self.ids.append(self.next_id)
            self.next_id += 1


def walk(listing: Listing, rng: random.Random, deletes: int, creates: int, *, meta: bool = True):
    walker, yielded = GaplessWalk(), []
    while (step := walker.next()) is not None:
        answer = listing.page(*step, meta=meta)
        yielded += walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])
        listing.churn(rng, rng.randint(0, deletes), rng.randint(0, creates))
    return walker, [item["id"] for item in yielded]


@pytest.mark.parametrize("seed", range(200))
def test_no_record_listed_throughout_is_skipped_whatever_changes_between_pages(seed):
    rng = random.Random(seed)
    listing = Listing(rng.randint(0, 1000), rng.choice([10, 25, 100]))
    at_start, pages = set(listing.ids), math.ceil(len(listing.ids) / listing.size) or 1
    walker, seen = walk(listing, rng, deletes=rng.choice([0, 1, 3, 150]), creates=rng.choice([0, 1, 5]))
    assert at_start & set(listing.ids) <= set(seen)  # listed from start to end: seen
    assert len(seen) == len(set(seen))  # each once
    assert walker.pages == pages and walker.gapless


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


def test_without_a_total_the_walk_goes_on_newest_first_and_says_it_is_not_gapless():
    listing = Listing(250, 100)
    walker, seen = walk(listing, random.Random(1), deletes=0, creates=0, meta=False)
    assert sorted(seen) == list(range(1, 251)) and walker.pages == 3
    assert not walker.gapless


def test_a_listing_of_one_page_is_one_read():
    listing = Listing(100, 100)
    walker, seen = walk(listing, random.Random(2), deletes=0, creates=0)
    assert len(seen) == 100 and walker.pages == 1 and walker.gapless
