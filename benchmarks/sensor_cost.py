"""Sensor cost: requests per poke with 10,000 links in the account, counted by the server.

``poke()`` is called directly, the way a worker calls it in poke mode (the watch is built from
the inputs first, as ``execute`` does), so every figure is requests the service really got.
The links that expire do so by date: the emulator's clock is moved past it, and the waits read
the emulator's clock (``waiting.plan.offset``: at once, where a real install's clock, which
never jumps, is learnt from the Date header of its answers). A link
that ends by date is not polled: a poke with nothing due sends nothing (in poke mode Airflow
would not even call it before the end; see docs/waiting.md).
"""

from __future__ import annotations

import math
from typing import Any

from benchmarks.common import LINKS_CONN_ID, EmulatorProcess, Row, verdict

POKES = 10


def _sensor(task_id: str, **inputs: Any) -> Any:
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    sensor = LinkstatsLinkExpiredSensor(
        task_id=task_id, linkstats_conn_id=LINKS_CONN_ID, mode="poke", deferrable=False, **inputs
    )
    sensor._watch = sensor._watch_from_inputs()  # what execute() does before the first poke
    return sensor


def _pokes(emu: EmulatorProcess, sensor: Any, pokes: int) -> tuple[list[int], Any]:
    """Requests the server got for each of ``pokes`` pokes, and the last poke's result."""
    counts, result = [], None
    for _ in range(pokes):
        emu.reset_stats()
        result = sensor.poke({})
        counts.append(emu.count())
    return counts, result


def run(emu: EmulatorProcess, total: int, expiring: list[dict], expire_after: float) -> list[Row]:
    """``expiring``: the records that expire once the clock moves ``expire_after`` seconds on."""
    import datetime as dt
    import time

    from airflow_provider_linkstats.waiting import plan

    offset = [dt.datetime.fromisoformat(emu.admin("GET", "/clock")["now"]).timestamp() - time.time()]
    plan.offset = lambda clock: offset[0]  # type: ignore[assignment]  # the emulator's clock, jumps included
    rows: list[Row] = []
    one = expiring[-1]
    n = len(expiring)
    # Before expiry: what a wait costs while it is still waiting.
    with_alias = _sensor("alias_waiting", link_id=one["id"], alias=one["alias"])
    counts, done = _pokes(emu, with_alias, POKES)
    assert not done
    rows.append(
        Row(
            "4. sensor",
            f"link_id + alias, not expired: requests per poke, {POKES} pokes",
            " ".join(map(str, counts)),
            f"{sum(counts)} in all",
            "1 read on poke 1 (learns the end), then nothing until the end (a read every 10th)",
            verdict(counts[0] == 1 and sum(counts[1:]) == 0),
        )
    )
    id_only = _sensor("id_waiting", link_id=one["id"])
    counts, done = _pokes(emu, id_only, 3)
    rows.append(
        Row(
            "4. sensor",
            "link_id only, not expired: first 3 pokes (alias and end read once)",
            " ".join(map(str, counts)),
            "",
            "",
            "",
        )
    )
    many = _sensor("list_waiting", link_ids=[r["id"] for r in expiring])
    counts, done = _pokes(emu, many, POKES)
    assert not done
    per_link = max(counts) >= n
    rows.append(
        Row(
            "4. sensor",
            f"link_ids (n={n:,}), none expired: requests per poke, {POKES} pokes",
            f"{counts[0]}, then {' '.join(map(str, counts[1:]))}",
            f"{sum(counts) / POKES:.1f} avg",
            "never one per link (issue 5)",
            verdict(not per_link),
        )
    )

    emu.advance_clock(expire_after)
    offset[0] += expire_after

    counts, done = _pokes(emu, with_alias, 1)
    assert done, "the link should have expired"
    rows.append(
        Row(
            "4. sensor",
            f"link_id + alias, expired, {total:,} links in the account",
            f"{counts[0]} request",
            "",
            "1",
            verdict(counts[0] == 1),
        )
    )
    alias_only = _sensor("alias_only", alias=one["alias"])
    counts, done = _pokes(emu, alias_only, 1)
    rows.append(
        Row("4. sensor", "alias only, expired (first poke finds the id too)", f"{counts[0]} requests", "", "", "")
    )
    counts, done = _pokes(emu, many, 1)
    assert done and len(done.xcom_value) == n
    pages = math.ceil(n / 100)
    rows.append(
        Row(
            "4. sensor",
            f"link_ids (n={n:,}), all expired, {total:,} links in the account",
            f"{counts[0]} requests",
            "",
            f"ceil({n:,}/100) = {pages}",
            verdict(counts[0] == pages),
        )
    )
    return rows
