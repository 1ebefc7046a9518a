"""The bulk launch's driver: one listing walk for the links that exist, then the creates (or the
mends) on a bounded thread pool sharing the hook's one rate limiter; and the full result written to
object storage. What it decides is ``client.launch``'s plan, without I/O. Imported when a task runs.
"""

from __future__ import annotations

import json
import time
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.launch import Item, Outcome, conflicts, entry, kept, walk_filters, wanted_alias
from airflow_provider_linkstats.client.ownership import EARLIER_TRY, THIS_TRY, Claim
from airflow_provider_linkstats.client.ownership import made_by as who_made

__all__ = ["Launch", "read_result", "read_text", "write_result"]


class Launch:
    """One bulk create: walk once, then create (or mend) what is missing, concurrently.

    A link the walk finds is an earlier try's by ``ownership.is_ours`` (``claim``): the records and
    Airflow's record of the tries outlive a killed worker and a clear, its XCom and memory do not.
    """

    def __init__(
        self,
        hook: Any,
        items: list[Item],
        *,
        if_exists: str,
        workers: int,
        log: Any,
        claim: Claim | None = None,
    ) -> None:
        self.hook = hook
        self.items = items
        self.if_exists = if_exists
        self.workers = workers
        self.log = log
        self.claim = claim or Claim()
        self.outcome = Outcome()
        self.outcome.rows = {item.alias: item.named for item in items}
        self.outcome.order = {item.alias: item.row for item in items}

    def run(self) -> Outcome:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from airflow_provider_linkstats.drivers.progress import FAILED, LaunchProgress, budget_pace, waits_told

        # Checked and made ready once; a duration (expires_at="PT2H") is resolved again at each
        # create by the service's clock, and a fixed end checked again then (``client.prepare``).
        prepared = [(item, self.hook.prepare_link_fields(item.fields, "create")) for item in self.items]
        existing = self.walk(prepared)
        if self.if_exists == "skip":
            self.refuse_conflicts(existing)  # before any write: "skip" never touches another's link
        total = len(prepared)
        limiter = getattr(self.hook.client, "limiter", None)
        progress = LaunchProgress(
            total, log=self.log, pace=lambda: budget_pace(limiter), requests=lambda: getattr(limiter, "answered", None)
        )
        every = max(1, min(100, total // 10))
        with (
            waits_told(limiter, progress.waiting),
            progress,
            ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="linkstats-launch") as pool,
        ):
            futures = {
                pool.submit(self.one, item, fields, existing.get(item.alias)): item for item, fields in prepared
            }
            for done, future in enumerate(as_completed(futures), start=1):
                item = futures[future]
                try:
                    record, outcome, made_by = future.result()
                except Exception as error:  # every item is tried; failures are reported together
                    self.outcome.failed[item.alias] = error
                    progress.add(FAILED)
                else:
                    self.outcome.links[item.alias] = entry(record, outcome, made_by)
                    progress.add(outcome)
                if done % every == 0 or done == total:
                    progress.report()
        summary = self.outcome.summary()
        self.log.info(
            "bulk create finished in %.1f s: %d created, %d created by an earlier try of this run, %d skipped, "
            "%d updated, %d failed, of %d links",
            time.monotonic() - progress.started, summary["created"], summary["created_earlier"],
            summary["skipped"], summary["updated"], summary["failed"], total,
        )  # fmt: skip
        return self.outcome

    def walk(self, prepared: list[tuple[Item, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """The launch's links that exist already: one listing walk, filtered by the aliases' common prefix."""
        wanted = {item.alias: fields.get("domain_id") for item, fields in prepared}
        if not wanted:
            return {}
        prefix, filters = walk_filters(list(wanted))
        found: dict[str, dict[str, Any]] = {}
        # A complete walk: a link deleted meanwhile hides no other (a hidden one would be created
        # again, meet "taken" and cost a reconcile).
        for record in self.hook.iter_records(filters, complete=True):
            alias = wanted_alias(record, wanted)
            if alias is not None:
                found[alias] = record
        self.log.info(
            "%d of %d links exist already (one listing walk%s)",
            len(found), len(wanted), f" of aliases containing {prefix!r}" if prefix else "",
        )  # fmt: skip
        return found

    def refuse_conflicts(self, existing: dict[str, dict[str, Any]]) -> None:
        """Fail before any write when a row's alias belongs to another link (another long URL)."""
        from airflow_provider_linkstats.client.errors import LinkstatsConflictError

        problems = conflicts(self.items, existing, self.outcome.rows)
        if problems:
            shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
            raise LinkstatsConflictError(
                f"{len(problems)} of {len(self.items)} rows name an alias that belongs to another link, so nothing "
                f"was written: {shown}. Give those rows other aliases, or set if_exists='update' to overwrite "
                "those links",
                conn_id=getattr(self.hook, "linkstats_conn_id", None),
            )

    def made_by(self, item: Item, record: dict[str, Any]) -> str:
        client = self.hook.client
        return who_made(LINKS, self.claim, item.fields, record, client.clock, client.zone(LINKS))

    def one(
        self, item: Item, fields: dict[str, Any], existing: dict[str, Any] | None
    ) -> tuple[dict[str, Any], str, str]:
        """Create one link, or meet the existing one as ``if_exists`` says: (record, outcome, made_by)."""
        from airflow_provider_linkstats.client.reconcile import SKIPPED, UPDATED, updatable

        if existing is None:  # created first; a 422 "taken" (a concurrent launch) is reconciled there
            record, outcome = self.hook.create_or_reconcile(fields, self.if_exists, claim=self.claim)
            if outcome == "created":
                return record, outcome, THIS_TRY
            return record, self._kept(item, record, outcome), self.made_by(item, record)
        made_by = self.made_by(item, existing)
        if made_by == EARLIER_TRY and self.if_exists != "update":
            # Our own link (its try's worker was lost): fields the service left unset (a write it
            # ignored) are filled in.
            repair = self.hook.unset_fields(existing, item.fields)
            if repair:
                self.log.warning(
                    "%s: link id=%s, made by an earlier try of this run, lacks %s as asked; updating them",
                    self.outcome.rows[item.alias], existing.get("id"), ", ".join(sorted(repair)),
                )  # fmt: skip
                return self.hook.update_record(existing["id"], repair), "created_earlier", made_by
            return existing, "created_earlier", made_by
        if self.if_exists == "fail":
            from airflow_provider_linkstats.client.errors import LinkstatsExistsError

            error = LinkstatsExistsError(
                f"set if_exists='skip' to reuse it or 'update' to overwrite it: a link with alias {item.alias!r} "
                f"already exists (id={existing.get('id')}, made {made_by})"
            )
            error.record_id = existing.get("id")
            raise error
        if self.if_exists == "update":
            # The row as given: a duration counts from this update, not from the launch's start.
            return self.hook.update_record(existing["id"], updatable(LINKS, item.fields)), UPDATED, made_by
        return existing, SKIPPED, made_by

    def _kept(self, item: Item, record: dict[str, Any], outcome: str) -> str:
        """A create refused as taken, then skipped or updated: an earlier try's link counts as that."""
        return kept(outcome, self.made_by(item, record)) if outcome == "skipped" else outcome


def write_result(path: str, outcome: Outcome) -> str:
    """The full result as JSON at the object-storage URL ``path``; returns the URL."""
    target = _storage_path(path)
    body = {
        **outcome.summary(),
        "links": outcome.links,
        "failures": {alias: str(error) for alias, error in sorted(outcome.failed.items())},
    }
    target.write_text(json.dumps(body, indent=1, sort_keys=True), encoding="utf-8")
    return str(path)


def read_text(url: str) -> str:
    """The text of the file at the object-storage URL ``url`` (a launch's ``source``)."""
    return _storage_path(url).read_text(encoding="utf-8")


def read_result(url: str) -> dict[str, dict[str, Any]]:
    """alias -> {"id", "short_url", ...} from a full result written by ``write_result``."""
    return dict(json.loads(_storage_path(url).read_text(encoding="utf-8"))["links"])


def _storage_path(url: str) -> Any:
    """Airflow's ``ObjectStoragePath`` of ``url``; a local ``file://`` URL as its plain path, because
    Airflow 3.0's class refuses the file protocol under universal_pathlib 0.3 (which pip installs
    beside it unless Airflow's constraints pin 0.2)."""
    from urllib.parse import unquote, urlsplit

    from airflow.providers.common.compat.sdk import ObjectStoragePath

    text = str(url)
    if text.startswith("file://"):
        parts = urlsplit(text)
        if parts.netloc in ("", "localhost"):
            text = unquote(parts.path)
    return ObjectStoragePath(text)
