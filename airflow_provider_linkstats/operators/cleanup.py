"""Cleanup of links at any size: walk the listing, decide from each record, delete as it goes.

The operator module stays cheap to import (the scheduler imports it at every parse): the walk
and the deletes live in ``airflow_provider_linkstats/drivers/cleanup.py`` (the driver) and
``client/cleanup.py`` (its decisions, and the checks of the arguments: ``checked_rules``,
``CleanupLimits``), imported when the task runs.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.checks import not_given as is_blank  # noqa: F401 (DAG code imports it here)
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS, POOL_SIZE
from airflow_provider_linkstats.operators.base import Argument, LinksServiceMixin, LinkstatsBaseOperator, fails_fast

__all__ = ["LinkstatsCleanupLinksOperator"]

DEFAULT_EVIDENCE_MAX_AGE = 15  # seconds; client.cleanup's default, repeated here to keep the import cheap
DEFAULT_MARGIN_WITHOUT_DATE = 3600  # seconds; client.cleanup's default, likewise
RULES = ("expired", "older_than_days", "search", "search_by", "space_id", "domain_id")
LIMITS = ("dry_run", "max_deletes", "max_share", "max_workers", "sample_size", "evidence_max_age",
          "margin_without_date")  # fmt: skip


class LinkstatsCleanupLinksOperator(LinksServiceMixin, LinkstatsBaseOperator):
    """Delete the links that match every rule given (at least one), walking the listing once, deleting as it goes.

    Each link is decided from its own record before it is deleted, by the provider's reading of the
    connected phpShort generation and by the service's clock (learned from its answers' ``Date``,
    less a safety margin); the listing's filters only narrow the walk, so a server whose filter
    lists live links loses none of them. A link is deleted only on fresh evidence: its page is read
    again right before its deletes (a confirming read), and a delete is sent at most
    ``evidence_max_age`` seconds after it. Memory and XCom stay small whatever the number of links:
    the task returns counts and at most ``sample_size`` ids. Requests: one per page of 100 listed
    links, one confirming read per page with matches (and another each ``evidence_max_age`` its
    deletes wait for the rate limit), plus one per delete (and one to count all
    links, for ``max_share``, when the walk is narrowed by filters). A retry after a lost worker
    continues where the listing stands: the links already deleted are no longer listed, so no
    answered delete is sent again.

    The ceiling is the lower of ``max_deletes`` and ``max_share``. When more links are listed than
    the ceiling, the matches are counted first (one more walk, no delete) and a run over the ceiling
    fails before its first delete; links that come to match during the run stop it before the
    delete that would pass the ceiling. Either way the error says by how much, and Airflow does not
    retry it. Each try of the task has the whole ceiling.

    Returns (XCom) ``{"matched", "deleted", "already_gone", "failed", "kept", "listed_not_matching",
    "changed", "unconfirmed", "pages", "confirming_reads", "stale_reads", "total_links", "ceiling", "over_ceiling",
    "clock", "evidence_age_max", "sample_ids", "dry_run", ...}``.
    """

    ui_color = "#fde8e8"

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        return (
            Argument("expired", "rule: the link is over: its end time passed or its click limit was reached (a "
                     "phpShort 46+ window that has not started yet is not over). Default True.", True, "bool | str"),
            Argument("older_than_days", "rule: its ``created_at`` is more than this many days ago by the service's "
                     "clock (a record without ``created_at`` is kept).", annotation="float | str"),
            Argument("search", "rule: text its ``search_by`` field contains (SQL LIKE, as the service searches: "
                     "case-insensitive, ``%`` and ``_`` are wildcards).", annotation="str"),
            Argument("search_by", "title (default), alias or url.", "title", "str"),
            Argument("space_id", "rule: the space it is filed in (0: in no space).", annotation="int | str"),
            Argument("domain_id", "rule: the domain it lives on.", annotation="int | str"),
            Argument("dry_run", "delete nothing; return what would go (count and sample ids) and whether that is "
                     "over the ceiling.", False, "bool | str"),
            Argument("max_deletes", "the most links one run may delete (default: no count limit).",
                     annotation="int | str"),
            Argument("max_share", "the most links one run may delete as a share of all the account's links (0 to "
                     "1, default 0.5; None: no share limit).", 0.5, "float | str | None"),
            Argument("max_workers", f"concurrent deletes (1-{POOL_SIZE}, default {DEFAULT_MAX_WORKERS}), paced "
                     "together by the connection's rate limiter.", DEFAULT_MAX_WORKERS, "int | str"),
            Argument("sample_size", "ids kept in the returned sample (0-100, default 20).", 20, "int | str"),
            Argument("evidence_max_age", "the most seconds between a page's confirming read and a delete it allows "
                     f"(1-3600, default {DEFAULT_EVIDENCE_MAX_AGE}). A delete the rate limiter holds longer is not "
                     "sent: the page is read again before the rest (at the real limit, 60 requests a minute, a page "
                     "of 100 expired links costs about 7 reads more).", DEFAULT_EVIDENCE_MAX_AGE, "float | str"),
            Argument("margin_without_date", f"seconds (0-86400, default {DEFAULT_MARGIN_WITHOUT_DATE}). A service "
                     "whose answers carry no ``Date`` header has no known clock: the worker's stands in, and a link "
                     "counts as over (or older than ``older_than_days``) only when it is so by more than this "
                     "margin; the log says so once. Unused when the service sends ``Date`` (every real install "
                     "does).", DEFAULT_MARGIN_WITHOUT_DATE, "float | str"),
        )  # fmt: skip

    def rules(self) -> Any:
        """The rules, checked (each error names its argument and what is allowed), before any request."""
        from airflow_provider_linkstats.client.cleanup import checked_rules

        return checked_rules(**{name: getattr(self, name) for name in RULES})

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.cleanup import CleanupLimits
        from airflow_provider_linkstats.client.paging import UntrustedListingError
        from airflow_provider_linkstats.drivers.cleanup import CeilingError, StreamingCleanup

        rules = self.rules()
        limits = CleanupLimits.checked(**{name: getattr(self, name) for name in LIMITS}, pool_size=POOL_SIZE)
        cleanup = StreamingCleanup(self.hook, rules, **limits.as_kwargs(), log=self.log)
        try:
            outcome = cleanup.run()
        except (CeilingError, UntrustedListingError) as error:
            from airflow.providers.common.compat.sdk import AirflowFailException

            raise AirflowFailException(str(error)) from error
        if outcome.failed:
            from airflow.providers.common.compat.sdk import AirflowException

            # A retry walks the listing again and deletes only what is left.
            raise AirflowException(
                f"{outcome.failed:,} of {outcome.matched:,} matching links could not be deleted "
                f"({outcome.deleted:,} deleted); first failures: {'; '.join(outcome.first_failures)}"
            )
        return outcome.as_xcom()
