"""The cases next to issue 43's counter reset, against the emulator: a reset of only some counters.

A counter that went down proves a reset happened since the last load; a link reset at the same time
and clicked as often since as its counter read then reads the same again, and nothing in the
listing tells it from a link never reset. So one counter down is enough to trust none that run.
"""

from __future__ import annotations

from tests.integration.test_warehouse import link_load, rows, run, truth, warehouse  # noqa: F401 - the fixture
from tests.integration.test_warehouse_trust import at, interval


def test_a_reset_of_some_counters_distrusts_every_counter(emu, warehouse):  # noqa: F811
    """Ten links clicked twice, loaded. Four counters reset (40%: not most): two clicked twice since
    (their counters read 2 again, what the last load saw), two once. Every click is loaded."""
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    made = [emu.store.add_link(url=f"https://example.com/p{i}", alias=f"part{i}") for i in range(10)]
    for link in made:
        emu.record_clicks(link["id"], at=at(0, 3), count=2)
    emu.clock.set(at(1, 0.5), freeze=True)
    assert run(link_load(interval=interval(0)))["fetched"] == 10

    reset = made[:4]
    assert emu.reset_counters([link["id"] for link in reset])["count"] == 4
    for link, clicks in zip(reset, (2, 2, 1, 1), strict=True):
        emu.record_clicks(link["id"], at=at(1, 3), count=clicks)
    emu.clock.set(at(2, 0.5), freeze=True)
    second = run(link_load(interval=interval(1)))
    day = {row for row in rows(warehouse) if row[1] == "2026-10-07"}
    assert day == {row for row in truth(emu, "UTC") if row[1] == "2026-10-07"}  # before: the two at 2 missing
    assert len(day) == 4
    assert second["fetched"] == 10 and second["requests"] == second["minimum_requests"] == 11


def test_a_link_id_given_again_to_a_new_link_is_fetched(emu, warehouse):  # noqa: F811
    """MySQL before 8.0 forgets its AUTO_INCREMENT on restart: a deleted link's id (the highest) goes
    to the next link created. The new link, another alias, reads as many clicks as the old one's
    counter did: its clicks are loaded."""
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    kept = emu.store.add_link(url="https://example.com/k", alias="kept")
    old = emu.store.add_link(url="https://example.com/o", alias="old")
    emu.record_clicks(kept["id"], at=at(0, 3), count=1)
    emu.record_clicks(old["id"], at=at(0, 3), count=3)
    emu.clock.set(at(1, 0.5), freeze=True)
    assert run(link_load(interval=interval(0)))["fetched"] == 2

    emu.store.delete("links", old["id"])
    emu.store._next["links"] = old["id"]  # the restart: the id counted again from the highest left
    new = emu.store.add_link(url="https://example.com/n", alias="new")
    assert new["id"] == old["id"]
    emu.record_clicks(new["id"], at=at(1, 3), count=3)
    assert int(next(link for link in emu.store.links() if link["alias"] == "new")["clicks"]) == 3
    emu.clock.set(at(2, 0.5), freeze=True)
    second = run(link_load(interval=interval(1)))
    assert {row for row in rows(warehouse) if row[1] == "2026-10-07"} == {(new["id"], "2026-10-07", "UTC", 3)}
    assert second["fetched"] == 1  # before: 0 (same id, same counter)
