"""Deleting many records at once, for cleanup jobs.

The ids are fixed before the first delete (a listing walked while deleting would shift under
us and skip records), deletes run on a bounded thread pool sharing one hook (one HTTP session
and one rate limiter, so the pool together stays under the service's budget), progress is
logged as "deleted 300/1200 links (5.0/s, about 3 min left)", and a failure of one id does not
stop the others: every id is tried, then the failures are reported together.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

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
) -> BulkResult:
    """Call ``delete_one(id)`` for every id (True: deleted, False: already gone)."""
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
                log.info("%s", progress_line(done, total, elapsed, len(result.errors), noun))
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


def progress_line(done: int, total: int, elapsed: float, failed: int, noun: str) -> str:
    """``deleted 300/1200 links (1.0/s, about 15 min left)``: under a rate limit the rate is the limit's."""
    rate = done / elapsed if elapsed > 0 else 0.0
    left = (total - done) / rate if rate > 0 else 0.0
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
