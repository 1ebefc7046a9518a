"""Deleting many records at once, for cleanup jobs.

The ids are fixed before the first delete (a listing walked while deleting would shift under
us and skip records), deletes run on a bounded thread pool sharing one hook (one HTTP session
and one rate limiter, so the pool together stays under the service's budget), progress is
logged as "deleted 300/1200 links (5.0/s, about 3 min left)" (the time left from the rate so far,
never faster than the rate limiter's budget allows), and a failure of one id does not
stop the others: every id is tried, then the failures are reported together.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsError
from airflow_provider_linkstats.client.settings import POOL_SIZE

MAX_WORKERS_LIMIT = POOL_SIZE  # the hook's connection pool size: more threads would only queue


@dataclass
class BulkResult:
    deleted: list[int] = field(default_factory=list)
    already_gone: list[int] = field(default_factory=list)
    errors: dict[int, LinkstatsError] = field(default_factory=dict)

    @property
    def failed(self) -> dict[int, str]:
        return {record_id: str(error) for record_id, error in self.errors.items()}


def delete_many(
    delete_one: Callable[[int], bool],
    ids: Sequence[int],
    *,
    max_workers: int,
    noun: str,
    log: logging.Logger,
    limiter: Any = None,
) -> BulkResult:
    """Call ``delete_one(id)`` for every id (True: deleted, False: already gone).

    ``limiter`` is the hook's rate limiter, read only for its public ``limit`` and ``window``: the
    budget's pace caps the rate the time left is estimated from.
    """
    result = BulkResult()
    total = len(ids)
    every = max(1, min(100, total // 10))  # about ten progress lines, at least one per 100
    if not total:
        log.info("nothing to delete: 0 %s given", noun)
        return result
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="linkstats-delete") as pool:
        futures = {pool.submit(delete_one, record_id): record_id for record_id in ids}
        for done, future in enumerate(as_completed(futures), start=1):
            record_id = futures[future]
            try:
                (result.deleted if future.result() else result.already_gone).append(record_id)
            except LinkstatsError as error:
                result.errors[record_id] = error
            if done % every == 0 or done == total:
                elapsed = time.monotonic() - started
                line = progress_line(done, total, elapsed, len(result.errors), noun, pace=budget_pace(limiter))
                log.info("%s", line)
    result.deleted.sort()
    result.already_gone.sort()
    log.info(
        "bulk delete finished in %.1f s: %d deleted, %d already gone, %d failed, of %d %s",
        time.monotonic() - started,
        len(result.deleted),
        len(result.already_gone),
        len(result.errors),
        total,
        noun,
    )
    return result


def budget_pace(limiter: Any) -> float | None:
    """Requests a second the service's budget allows (``limit / window``), or None while unknown."""
    limit, window = getattr(limiter, "limit", None), getattr(limiter, "window", None)
    if not limit or not window:
        return None
    return float(limit) / float(window)


def progress_line(done: int, total: int, elapsed: float, failed: int, noun: str, *, pace: float | None = None) -> str:
    """``deleted 300/1200 links (1.0/s, about 15 min left)``.

    The time left comes from the run's rate so far, capped by the budget's ``pace``: the first half
    of a window's budget goes out at once, so the first deletes run far faster than the rest can.
    """
    rate = done / elapsed if elapsed > 0 else 0.0
    ahead = min(rate, pace) if pace and rate > 0 else (pace or rate)
    left = (total - done) / ahead if ahead > 0 else 0.0
    parts = [f"{rate:.1f}/s"]
    if done < total:
        parts.append(f"about {_duration(left)} left")
    if failed:
        parts.append(f"{failed} failed")
    return f"deleted {done - failed}/{total} {noun} ({', '.join(parts)})"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
