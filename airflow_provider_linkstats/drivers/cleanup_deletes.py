"""The streaming cleanup's deletes: a bounded thread pool, each delete sent only on fresh evidence.

A confirming read allows a ``Batch`` of deletes until its evidence is ``evidence_max_age`` old; each
is checked right before it leaves, after any rate-limit wait. One held too long goes back to its page.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow_provider_linkstats.client.cleanup import PagePlan
from airflow_provider_linkstats.client.errors import LinkstatsError

FAILURES_IN_A_ROW = 20  # a cause that fails every delete (a revoked permission) stops the run
FIRST_FAILURES = 5  # failures named in the outcome
# A delete sent once (a 502-504, or its answer lost) whose retry was then held past its evidence:
# the service may have done it. Its page's next read tells: gone is counted as deleted.
UNANSWERED = "unanswered"


class Stale(Exception):
    """A delete's evidence is older than ``evidence_max_age`` at the moment it would be sent."""


class Batch:
    """The deletes one confirming read allowed: sent only until ``fresh_until`` (monotonic)."""

    def __init__(self, plan: PagePlan, fresh_until: float) -> None:
        self.plan = plan
        self.fresh_until = fresh_until
        self.read_at = fresh_until - plan.walk.max_age
        self.expired = False  # once one delete found the evidence too old, the rest are not tried
        self.sent = 0
        self.stale_records: list[dict[str, Any]] = []

    def check(self) -> float:
        """The evidence's age now; raises ``Stale`` past the freshness window."""
        now = time.monotonic()
        if self.expired or now > self.fresh_until:
            self.expired = True
            raise Stale()
        return now - self.read_at


class Deleter:
    """Deletes on a bounded thread pool sharing the hook's client (one session and rate limiter): at
    most ``max_pending`` in flight; answers are counted on the walking thread."""

    def __init__(self, cleanup: Any, outcome: Any) -> None:
        self.cleanup = cleanup
        self.outcome = outcome
        self.pool = ThreadPoolExecutor(max_workers=cleanup.max_workers, thread_name_prefix="linkstats-cleanup")
        self.max_pending = max(4 * cleanup.max_workers, 200)
        self.slots = threading.BoundedSemaphore(self.max_pending)
        self.answered: deque[tuple[int, Batch, Any]] = deque()  # (id, batch, future), from the pool's threads
        self.in_flight = 0  # submitted, not yet counted here
        self.submitted = 0
        self.first_failures: list[str] = []
        self.in_a_row = 0
        self.client = cleanup.client
        self.lock = threading.Lock()

    def submit(self, record_id: int, batch: Batch) -> None:
        ceiling = self.outcome.ceiling
        if ceiling is not None and self.submitted >= ceiling:
            self.collect(block=True)
            raise self.cleanup._over_ceiling(self.outcome, self.outcome.matched, before_any=False)
        while not self.slots.acquire(timeout=0.5):  # all slots busy: count what was answered meanwhile
            self.collect(block=False)
        future = self.pool.submit(self._delete, record_id, batch)
        self.in_flight += 1
        self.submitted += 1
        future.add_done_callback(lambda done, record_id=record_id: self._answered(record_id, batch, done))
        self.collect(block=False)

    def _answered(self, record_id: int, batch: Batch, future: Any) -> None:
        self.answered.append((record_id, batch, future))
        self.slots.release()

    def _delete(self, record_id: int, batch: Batch) -> bool | str | None:
        """True: deleted; False: already gone; None: not sent (its evidence grew too old);
        ``UNANSWERED``: sent, but its retry was held past its evidence (the service may have done it)."""
        from airflow_provider_linkstats.client.contract import LINKS
        from airflow_provider_linkstats.client.sending import BEFORE_SEND

        try:
            batch.check()  # before waiting for the limiter: a delete already too late does not queue
        except Stale:
            return None

        sent: list[int] = []  # the limiter's count of 429s when each attempt of this delete left

        def fresh(request: Any) -> None:
            age = batch.check()
            sent.append(self._throttled())
            with self.lock:
                self.outcome.evidence_age_max = max(self.outcome.evidence_age_max, round(age, 1))

        token = BEFORE_SEND.set(fresh)
        try:
            return self.client.delete(LINKS, record_id, missing_ok=True)
        except Stale:
            # Sent, and no 429 seen since (a 429 says "not done"): a 502-504 or a lost answer.
            return UNANSWERED if sent and self._throttled() == sent[-1] else None
        finally:
            BEFORE_SEND.reset(token)

    def _throttled(self) -> int:
        return getattr(getattr(self.client, "limiter", None), "throttled", 0)

    def collect(self, *, block: bool) -> None:
        while True:
            while self.answered:
                record_id, batch, future = self.answered.popleft()
                self.in_flight -= 1
                self._count(record_id, batch, future)
            if not block or not self.in_flight:
                return
            time.sleep(0.002)

    def _count(self, record_id: int, batch: Batch, future: Any) -> None:
        try:
            gone_now = future.result()
        except LinkstatsError as error:
            self._failed(record_id, batch, error)
            return
        if gone_now in (None, UNANSWERED):  # back to its page for another confirming read
            if gone_now is None:
                self.submitted -= 1  # not sent (one sent counts towards the ceiling, as sent)
            batch.stale_records.append({"id": record_id, UNANSWERED: gone_now == UNANSWERED})
            return
        batch.sent += 1
        self.in_a_row = 0
        if gone_now:
            self.outcome.deleted += 1
        else:
            self.outcome.already_gone += 1
        self.cleanup._sample(self.outcome, record_id)

    def _failed(self, record_id: int, batch: Batch, error: LinkstatsError) -> None:
        batch.sent += 1
        self.outcome.failed += 1
        self.in_a_row += 1
        if len(self.first_failures) < FIRST_FAILURES:
            self.first_failures.append(f"id {record_id}: {error}")
        if self.in_a_row >= FAILURES_IN_A_ROW:
            raise LinkstatsError(
                f"{self.in_a_row} deletes failed in a row, the cleanup stopped "
                f"({self.outcome.deleted:,} deleted); first failures: {'; '.join(self.first_failures)}"
            ) from error

    def close(self) -> None:
        try:
            self.collect(block=True)
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)
