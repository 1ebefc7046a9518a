"""Deleting many records at once, for cleanup jobs: the ids are fixed before the first delete (a
listing walked while deleting would shift and skip records), deletes run on a bounded thread pool
sharing one hook (one session and rate limiter), progress is logged ("deleted 300/1200 links (5.0/s,
about 3 min left)"), and every id is tried before the failures are reported together.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsError
from airflow_provider_linkstats.drivers.progress import Progress, budget_pace, progress_line

__all__ = ["BulkResult", "Progress", "budget_pace", "delete_many", "progress_line"]


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
    """Call ``delete_one(id)`` for every id (True: deleted, False: already gone); ``limiter``'s budget
    caps the rate the time left is estimated from."""
    result = BulkResult()
    total = len(ids)
    every = max(1, min(100, total // 10))  # about ten progress lines, at least one per 100
    if not total:
        log.info("nothing to delete: 0 %s given", noun)
        return result
    started = time.monotonic()
    progress = Progress(limiter=limiter)  # the budget's pace, and the requests that may still go at once
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="linkstats-delete") as pool:
        futures = {pool.submit(delete_one, record_id): record_id for record_id in ids}
        for done, future in enumerate(as_completed(futures), start=1):
            record_id = futures[future]
            try:
                (result.deleted if future.result() else result.already_gone).append(record_id)
            except LinkstatsError as error:
                result.errors[record_id] = error
            progress.update(done)
            if done % every == 0 or done == total:
                log.info("%s", progress.line(done, total, len(result.errors), noun))
    result.deleted.sort()
    result.already_gone.sort()
    log.info(
        "bulk delete finished in %.1f s: %d deleted, %d already gone, %d failed, of %d %s",
        time.monotonic() - started, len(result.deleted), len(result.already_gone), len(result.errors), total, noun,
    )  # fmt: skip
    return result
