"""``paging.GaplessWalk`` fed a listing that changes between every two page reads: deletes anywhere
(of records read or not), creates (newest), records entering a filtered selection (moved into the
space, edited to match the search: anywhere by id) or leaving it, at random. Every record listed
from the walk's start to its end is yielded, once, at the pages a walk by offset reads
(``ceil(total / size)``) when nothing changes, and at most a page more for each two reads between
which the listing changed; the same listing walked by offset, newest first, skips records."""

from __future__ import annotations

import math
import random

import pytest

from airflow_provider_linkstats.client.paging import GaplessWalk


class Listing:
    """Records by id as a service lists them: sorted by id, paged by offset, with a total. ``outside``
    more records, among the ids, are not in the selection (another space) until moved in."""

    def __init__(self, count: int, size: int, *, outside: int = 0, rng: random.Random | None = None) -> None:
        everything = list(range(1, count + outside + 1))
        self.hidden = set((rng or random.Random(0)).sample(everything, outside))
        self.ids = [i for i in everything if i not in self.hidden]
        self.size = size
        self.next_id = count + outside + 1
        self.left: set[int] = set()  # records that left the listing at some time (not listed throughout)

    def throughout(self, at_start: set[int]) -> set[int]:
        return at_start - self.left

    def page(self, order: str, number: int, *, meta: bool = True, lie: float = 1.0) -> dict:
        ordered = sorted(self.ids, reverse=order == "desc")
        items = [{"id": i} for i in ordered[(number - 1) * self.size : number * self.size]]
        has_next = number * self.size < len(ordered)
        told = int(len(ordered) * lie)
        if lie != 1.0 and told % self.size == 0:
            told += 1  # a lie of a whole number of pages is not caught (see GaplessWalk)
        return {"items": items, "has_next": has_next, "total": told if meta else None}

    def churn(self, rng: random.Random, deletes: int, creates: int, moves_in: int = 0, moves_out: int = 0) -> None:
        for _ in range(min(deletes + moves_out, len(self.ids))):
            gone = rng.choice(self.ids)
            self.ids.remove(gone)
            self.left.add(gone)
            if moves_out:
                moves_out -= 1
                self.hidden.add(gone)
        for _ in range(min(moves_in, len(self.hidden))):
            entered = rng.choice(sorted(self.hidden))
            self.hidden.remove(entered)
            self.ids.append(entered)
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


def read_all(walker: GaplessWalk, listing: Listing, changes=lambda step: None) -> list[int]:
    """The walk over ``listing``; ``changes(step)`` moves it once each page is answered."""
    yielded = []
    while (step := walker.next()) is not None:
        answer = listing.page(*step)
        yielded += [i["id"] for i in walker.read(answer["items"], has_next=answer["has_next"], total=answer["total"])]
        changes(step)
    return yielded


@pytest.mark.parametrize("seed", range(200))
def test_no_record_listed_throughout_is_skipped_whatever_changes_between_pages(seed):
    rng = random.Random(seed)
    listing = Listing(rng.randint(0, 1000), rng.choice([10, 25, 100]))
    at_start, pages = set(listing.ids), math.ceil(len(listing.ids) / listing.size) or 1
    deletes, creates = rng.choice([0, 1, 3, 150]), rng.choice([0, 1, 5])
    walker, seen = walk(listing, rng, deletes=deletes, creates=creates)
    assert listing.throughout(at_start) <= set(seen)  # listed from start to end: seen
    assert len(seen) == len(set(seen))  # each once
    if deletes < listing.size:
        # a delete costs no request; a create (the listing grew) at most the page above read again
        assert walker.pages <= pages + (2 * (walker.pages - 1) if creates else 0)
        assert walker.pages == pages or creates
    else:  # a page's worth deleted before the first oldest-first read: the end is looked for below
        assert walker.pages <= pages + 2 * math.ceil(math.log2(pages + 1)) + walker.rereads


@pytest.mark.parametrize("seed", range(300))
def test_records_entering_or_leaving_the_selection_between_pages_hide_none(seed):
    """Records moved into a filtered selection (anywhere by id), moved out of it, deleted, created,
    one kind of change between two reads, in 30 % of them. Entering, a record pushes the ones
    above it a place up, past the boundary of the pages read; the total that rose says so and the
    page above is read again: nothing listed throughout is skipped, nothing yielded twice, and
    each two reads between which the listing changed cost at most a page more."""
    rng = random.Random(seed)
    listing = Listing(rng.randint(0, 1000), rng.choice([10, 25, 100]), outside=rng.randint(0, 300), rng=rng)
    at_start, pages = set(listing.ids), math.ceil(len(listing.ids) / listing.size) or 1
    most = {name: rng.choice([0, 1, 3]) for name in ("deletes", "creates", "moves_in", "moves_out")}
    changed = 0

    def changes(step):
        nonlocal changed
        if rng.random() < 0.3:
            kind = ("deletes", "moves_out") if rng.random() < 0.5 else ("creates", "moves_in")
            counts = {name: rng.randint(0, most[name]) if name in kind else 0 for name in most}
            changed += any(counts.values())
            listing.churn(rng, **counts)

    walker = GaplessWalk()
    seen = read_all(walker, listing, changes)
    assert listing.throughout(at_start) <= set(seen)
    assert len(seen) == len(set(seen))
    assert walker.pages <= pages + changed and not walker.blind


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


def moved_in(listing: Listing, record: int, after: tuple[str, int], *, also=lambda: None):
    """A ``changes`` that moves ``record`` into the selection once page ``after`` is answered."""

    def changes(step):
        if step == after and record in listing.hidden:
            listing.hidden.remove(record)
            listing.ids.append(record)
            also()

    return changes


def test_a_record_moved_in_below_the_pages_read_costs_the_page_above_read_again():
    """250 records, 100 a page, id 5 in another space until oldest-first page 2 is answered: moved
    in, it pushes id 101 (page 1's last) onto page 2, read already. Before: 101 never seen, 3 pages;
    now the total that rose has page 2 read again: every record, 4 pages."""
    listing = Listing(0, 100)
    listing.ids, listing.hidden, listing.next_id = [i for i in range(1, 252) if i != 5], {5}, 252
    walker = GaplessWalk()
    seen = read_all(walker, listing, moved_in(listing, 5, ("asc", 2)))
    assert sorted(seen) == list(range(1, 252))  # before: 101 missing
    assert walker.pages == 3 + 1 and walker.rereads == 1


@pytest.mark.parametrize(("count", "extra"), [(300, 1), (250, 0)])
def test_a_record_moved_in_before_the_first_oldest_first_page(count, extra):
    """Moved in once the newest-first page 1 is answered. 300 records: the first oldest-first page
    (2) ends where page 1 began, so the record pushed past it is looked for on page 3 (a page more);
    250: that page reaches 50 records into page 1's, which absorb the push (no page more)."""
    listing = Listing(0, 100)
    listing.ids, listing.hidden, listing.next_id = [i for i in range(1, count + 2) if i != 7], {7}, count + 2
    walker = GaplessWalk()
    seen = read_all(walker, listing, moved_in(listing, 7, ("desc", 1)))
    assert sorted(seen) == list(range(1, count + 2))  # before (300): id 201 missing
    assert walker.pages == math.ceil(count / 100) + extra


def test_more_than_a_page_moved_in_at_once():
    """150 records moved in together (a bulk move into the space) once oldest-first page 3 of 450 is
    answered: the 150 pushed past page 2 are read on the two pages above it, read again."""
    listing = Listing(0, 100)
    movers = set(range(2, 302, 2))
    listing.ids, listing.hidden, listing.next_id = [i for i in range(1, 601) if i not in movers], set(movers), 601

    def changes(step):
        if step == ("asc", 3) and listing.hidden:
            listing.hidden.clear()
            listing.ids += sorted(movers)

    walker = GaplessWalk()
    seen = read_all(walker, listing, changes)
    assert set(range(1, 601)) - movers <= set(seen) and len(seen) == len(set(seen))  # before: 100 missing
    assert walker.pages == 5 + 2 and walker.rereads == 2


def test_a_record_moved_out_costs_nothing_and_one_moved_back_meanwhile_a_page_more():
    """Leaving the selection is a delete (nothing to read again). A record entering once page 2
    is answered and one leaving (below) while page 2 is read again: the push may have gone back
    onto page 1, read before it: page 1 is read again too (2 pages for the 2 changes)."""
    listing = Listing(350, 100)
    walker = GaplessWalk()

    def out(step):
        if step == ("asc", 2) and 10 in listing.ids:
            listing.ids.remove(10)
            listing.hidden.add(10)

    seen = read_all(walker, listing, out)
    assert set(range(1, 351)) - {10} <= set(seen) and walker.pages == 4

    listing = Listing(0, 100)
    listing.ids, listing.hidden, listing.next_id = [i for i in range(1, 352) if i != 5], {5}, 352
    walker, read = GaplessWalk(), []

    def changes(step):
        read.append(step)
        if step == ("asc", 2) and len(read) == 3:  # page 2 first read: 5 moves in
            listing.hidden.remove(5)
            listing.ids.append(5)
        elif step == ("asc", 1) and len(read) == 4:  # page 1 read, page 2 next again: 3 moves out
            listing.ids.remove(3)
            listing.hidden.add(3)

    seen = read_all(walker, listing, changes)
    assert set(range(1, 352)) - {3} <= set(seen) and len(seen) == len(set(seen))  # before: 101 missing
    assert read == [("desc", 1), ("asc", 3), ("asc", 2), ("asc", 1), ("asc", 2), ("asc", 1)]


def test_without_a_total_growth_cannot_be_told_and_the_walk_says_so():
    """A proxy strips ``meta``: no total tells that the listing grew, so a record entering the
    selection during the walk can hide another; ``blind`` says so (the caller logs it)."""
    walker, seen = walk(Listing(350, 100), random.Random(3), deletes=0, creates=0, meta=False)
    assert walker.blind and len(seen) == 350
    walker, _ = walk(Listing(350, 100), random.Random(3), deletes=0, creates=0)
    assert not walker.blind


def test_a_total_that_keeps_moving_ends_the_reads_again_and_the_walk_says_so():
    """A total that rises by one at every other answer though nothing changes (a proxy mixing two
    caches' ``meta``): each rise would have the page above read again, without end. The walk reads
    again at most one page per page it planned + 10, then goes on without telling growth (blind)."""
    listing = Listing(1000, 100)
    walker, yielded, told = GaplessWalk(), [], 0
    while (step := walker.next()) is not None and walker.pages < 100:
        answer = listing.page(*step)
        told += 1
        total = answer["total"] + told % 2
        yielded += [i["id"] for i in walker.read(answer["items"], has_next=answer["has_next"], total=total)]
    assert walker.next() is None and sorted(yielded) == list(range(1, 1001))
    assert walker.blind and walker.pages <= 10 + 9 + 10 + 10
