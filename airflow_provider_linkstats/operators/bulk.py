"""Deleting many records at once, for cleanup jobs.

The ids are fixed before the first delete (a listing walked while deleting would shift under
us and skip records), deletes run on a bounded thread pool sharing one hook (one HTTP
session), progress is logged as "deleted 300/1200 links", and a failure of one id does not stop
the others: every id is tried, then the failures are reported together.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from airflow_provider_linkstats.client.errors import LinkstatsError

MAX_WORKERS_LIMIT = 16  # the hook's connection pool size: more threads would only queue


@dataclass
class BulkResult:
    deleted: list[int] = field(default_factory=list)
    already_gone: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)


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
    with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="linkstats-delete") as pool:
        futures = {pool.submit(delete_one, record_id): record_id for record_id in ids}
        for done, future in enumerate(as_completed(futures), start=1):
            record_id = futures[future]
            try:
                (result.deleted if future.result() else result.already_gone).append(record_id)
            except LinkstatsError as error:
                result.failed[record_id] = str(error)
            if done % every == 0 or done == total:
                log.info("deleted %d/%d %s", done - len(result.failed), total, noun)
    result.deleted.sort()
    result.already_gone.sort()
    log.info(
        "bulk delete finished: %d deleted, %d already gone, %d failed, of %d %s",
        len(result.deleted),
        len(result.already_gone),
        len(result.failed),
        total,
        noun,
    )
    return result
