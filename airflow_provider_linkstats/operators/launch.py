"""Launching many links in one task: ``LinkstatsBulkCreateLinksOperator``.

A campaign of hundreds or thousands of links is one task, not one mapped task instance per link
(seconds of Airflow overhead each, a row of task state each, and no way to resume the launch as
one unit). Each link's alias is its identity: the task first walks the listing once (filtered by
the aliases' common prefix, so ceil(N/100) requests, not a look-up per link), skips what already
exists, and creates only the rest, concurrently on one hook, so one HTTP session and one rate
limiter keep the whole launch within the service's budget. Every link is tried; the failures are
reported together at the end. A killed or failed launch is resumed by its retry.

Cheap to import (DAG parse): the loading, walking and creating happen in ``execute``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS, POOL_SIZE
from airflow_provider_linkstats.operators.base import (
    IF_EXISTS_CHOICES,
    Argument,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fail_task,
    fails_fast,
)
from airflow_provider_linkstats.operators.lineage import LinkstatsLineageMixin

__all__ = ["LinkstatsBulkCreateLinksOperator", "launch_result"]

XCOM_LIMIT = 500  # links listed in the XCom itself; above it the full result goes to ``result_path``


class LinkstatsBulkCreateLinksOperator(LinksServiceMixin, LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Create many links in one task, resumable: each link's alias is its identity.

    The links come from ``links`` (a list of dicts with the create operator's field names, e.g. a
    task's XCom) or from ``source``, a JSON (a list of objects) or CSV (a header row of field names)
    file at an Airflow object-storage URL (``file://``, ``s3://``, ``gs://``, ...; list fields such as
    ``country`` or ``pixel_ids`` as JSON text in a CSV cell). Every item is checked before any request.

    One listing walk (filtered by the aliases' common prefix) finds the links that already exist:
    with ``if_exists="skip"`` (the default) they are kept, and any field the service left unset of
    what was asked (a write it ignored) is filled in; "update" writes the given fields to them;
    "fail" counts them as failures. The rest are created on ``max_workers`` threads sharing the
    hook's one rate limiter, with progress lines and the time left at the budget's pace. Every link
    is tried; then, if any failed, the task fails naming them (its retry creates only what is
    missing).

    Returns ``{"links": {alias: {"id", "short_url"}}, "created", "skipped", "updated", "failed",
    "total"}``; for more than ``xcom_limit`` links the mapping is written as JSON to ``result_path``
    and the XCom holds ``"result_path"`` and the counts instead. ``launch_result(xcom)`` reads
    either back.
    """

    ui_color = "#d6ecfa"

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        return (
            Argument("links", "the links: a list of dicts of create fields (``url`` required, ``alias`` unless "
                     "``alias_column`` is given).", annotation="Sequence[Mapping[str, Any]] | str", renderer="json"),
            Argument("source", "an object-storage URL of a ``.json`` or ``.csv`` file of links, instead of "
                     "``links``.", annotation="str"),
            Argument("alias_column", "derive each alias from this column (lower-cased, other characters than "
                     "letters, digits, ``-`` and ``_`` turned into ``-``), after ``alias_prefix``.", annotation="str"),
            Argument("alias_prefix", "put before each derived alias, e.g. ``spring-``.", "", "str"),
            Argument("defaults", "create fields for every link unless the link gives its own (e.g. ``expires_at``, "
                     "``domain_id``, ``space_id``).", annotation="Mapping[str, Any]", renderer="json"),
            Argument("if_exists", '"skip" (default), "update" or "fail": what an existing link with the alias means.',
                     "skip", "str"),
            Argument("max_workers", f"concurrent requests (1-{POOL_SIZE}, default {DEFAULT_MAX_WORKERS}); the rate "
                     "limiter sets the pace.", DEFAULT_MAX_WORKERS, "int"),
            Argument("result_path", "object-storage URL the full result is written to when it is too big for the "
                     "XCom (default: ``source`` with ``.result.json`` appended).", annotation="str"),
            Argument("xcom_limit", f"the most links listed in the XCom itself (default {XCOM_LIMIT}).", XCOM_LIMIT,
                     "int", templated=False),
        )  # fmt: skip

    def mask_secrets(self) -> None:
        """The links' passwords (in ``links`` or ``defaults``) go to the secret masker before any log line."""
        rows = self.links if isinstance(self.links, list) else []
        mask_passwords([*rows, self.defaults if isinstance(self.defaults, Mapping) else {}])

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import check_choice, check_whole_number
        from airflow_provider_linkstats.client.launch import load_rows, plan_items
        from airflow_provider_linkstats.drivers.launch import Launch, read_text, write_result

        if_exists = check_choice("if_exists", self.if_exists, IF_EXISTS_CHOICES)
        workers = check_whole_number("max_workers", self.max_workers, minimum=1, maximum=POOL_SIZE)
        limit = check_whole_number("xcom_limit", self.xcom_limit, minimum=0)
        rows = load_rows(self.links, self.source, read=read_text)
        mask_passwords(rows)
        origin = f"source {self.source!r}" if self.source else "links"
        items = plan_items(rows, self.defaults, self.alias_column, self.alias_prefix or "", origin)
        result_path = self.result_path or (f"{self.source}.result.json" if self.source else None)
        if len(items) > limit and not result_path:
            from airflow_provider_linkstats.client.errors import LinkstatsInputError

            raise LinkstatsInputError(
                "result_path",
                None,
                f"an object-storage URL for the full result of {len(items)} links (more than xcom_limit={limit})",
            )
        from airflow_provider_linkstats.operators.ownership import task_claim

        # Every row has its alias (given or from alias_column): the claim's first try decides, not a key.
        claim = task_claim(context, keyed=False)
        launch = Launch(self.hook, items, if_exists=if_exists, workers=workers, log=self.log, claim=claim)
        outcome = launch.run()
        self.touched_ids = tuple(entry["id"] for entry in outcome.links.values())
        value = outcome.summary()
        if len(items) > limit:
            value["result_path"] = write_result(result_path, outcome)
            self.log.info("full result of %d links written to %s", len(items), value["result_path"])
        else:
            value["links"] = outcome.links
        if outcome.failed:
            raise_failures(outcome, len(items))
        return value


def mask_passwords(rows: Sequence[Any]) -> None:
    from airflow.providers.common.compat.sdk import mask_secret

    for row in rows:
        if isinstance(row, Mapping):
            for name in LINKS.secret_fields:
                if isinstance(row.get(name), str) and row[name]:
                    mask_secret(row[name])


def raise_failures(outcome: Any, total: int) -> None:
    """Fail the task naming the links that failed: for good when every failure is permanent."""
    named = sorted(outcome.failed.items(), key=lambda pair: outcome.order.get(pair[0], 0))
    shown = "; ".join(f"{outcome.rows.get(alias, alias)}: {error}" for alias, error in named[:10])
    more = f"; and {len(outcome.failed) - 10} more" if len(outcome.failed) > 10 else ""
    message = (
        f"{len(outcome.failed)} of {total} links failed ({len(outcome.links)} done; a retry creates only what is "
        f"missing): {shown}{more}"
    )
    fail_task(message, outcome.failed.values())


def launch_result(value: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """alias -> {"id", "short_url", ...} from a bulk create's XCom, read from ``result_path`` if it went there."""
    if value.get("links") is not None:
        return dict(value["links"])
    from airflow_provider_linkstats.drivers.launch import read_result

    return read_result(value["result_path"])
