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

import json
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS, POOL_SIZE
from airflow_provider_linkstats.operators.base import (
    IF_EXISTS_CHOICES,
    LinksServiceMixin,
    LinkstatsBaseOperator,
    fails_fast,
)
from airflow_provider_linkstats.operators.lineage import LinkstatsLineageMixin

__all__ = ["LinkstatsBulkCreateLinksOperator", "launch_result"]

XCOM_LIMIT = 500  # links listed in the XCom itself; above it the full result goes to ``result_path``
LIST_FIELDS = tuple(spec.name for spec in LINKS.fields if spec.kind.name in ("TARGETING", "ID_LIST"))
SOURCE_FORMATS = ("json", "csv")


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

    :param links: the links: a list of dicts of create fields (``url`` required, ``alias`` unless
        ``alias_column`` is given). Templated.
    :param source: an object-storage URL of a ``.json`` or ``.csv`` file of links, instead of ``links``. Templated.
    :param alias_column: derive each alias from this column (lower-cased, other characters than
        letters, digits, ``-`` and ``_`` turned into ``-``), after ``alias_prefix``. Templated.
    :param alias_prefix: put before each derived alias, e.g. ``spring-``. Templated.
    :param defaults: create fields for every link unless the link gives its own (e.g.
        ``expires_at``, ``domain_id``, ``space_id``). Templated.
    :param if_exists: "skip" (default), "update" or "fail": what an existing link with the alias means. Templated.
    :param max_workers: concurrent requests (1-16, default 8); the rate limiter sets the pace. Templated.
    :param result_path: object-storage URL the full result is written to when it is too big for the
        XCom (default: ``source`` with ``.result.json`` appended). Templated.
    :param xcom_limit: the most links listed in the XCom itself (default 500).
    """

    template_fields: Sequence[str] = (
        "linkstats_conn_id",
        "links",
        "source",
        "alias_column",
        "alias_prefix",
        "defaults",
        "if_exists",
        "max_workers",
        "result_path",
    )
    template_fields_renderers = {"links": "json", "defaults": "json"}
    ui_color = "#d6ecfa"

    def __init__(
        self,
        *,
        links: Sequence[Mapping[str, Any]] | str | None = None,
        source: str | None = None,
        alias_column: str | None = None,
        alias_prefix: str = "",
        defaults: Mapping[str, Any] | None = None,
        if_exists: str = "skip",
        max_workers: int = DEFAULT_MAX_WORKERS,
        result_path: str | None = None,
        xcom_limit: int = XCOM_LIMIT,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.links = links
        self.source = source
        self.alias_column = alias_column
        self.alias_prefix = alias_prefix
        self.defaults = defaults
        self.if_exists = if_exists
        self.max_workers = max_workers
        self.result_path = result_path
        self.xcom_limit = xcom_limit
        self.mask_secrets()

    def mask_secrets(self) -> None:
        """The links' passwords (in ``links`` or ``defaults``) go to the secret masker before any log line."""
        rows = self.links if isinstance(self.links, list) else []
        mask_passwords([*rows, self.defaults if isinstance(self.defaults, Mapping) else {}])

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import check_choice, check_whole_number

        if_exists = check_choice("if_exists", self.if_exists, IF_EXISTS_CHOICES)
        workers = check_whole_number("max_workers", self.max_workers, minimum=1, maximum=POOL_SIZE)
        limit = check_whole_number("xcom_limit", self.xcom_limit, minimum=0)
        rows = load_rows(self.links, self.source)
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
        from airflow_provider_linkstats.operators.base import earlier_tries_since

        since, known = earlier_tries_since(context)
        launch = Launch(
            self.hook, items, if_exists=if_exists, workers=workers, log=self.log, run_start=since, known=known
        )
        outcome = launch.run()
        self.touched_ids = tuple(entry["id"] for entry in outcome.links.values())
        value = outcome.summary()
        if len(items) > limit:
            value["result_path"] = write_result(result_path, outcome)
            self.log.info("full result of %d links written to %s", len(items), value["result_path"])
        else:
            value["links"] = outcome.links
        if outcome.failed:
            outcome.raise_failures(len(items))
        return value


# -- reading the input ------------------------------------------------------------------------------


def load_rows(links: Any, source: str | None, *, from_file: bool = False) -> list[dict[str, Any]]:
    """The items as dicts (``Row``: each knows where it came from), from ``links`` or from the file at
    ``source`` (exactly one of the two); ``from_file``: ``links`` is a JSON file's list."""
    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    if (links is None) == (source is None or source == ""):
        raise LinkstatsInputError("links/source", (links, source), "exactly one of the two")
    if source:
        return _read_source(str(source))
    if isinstance(links, str):  # a template rendered without native types
        try:
            links = json.loads(links)
        except ValueError:
            raise LinkstatsInputError("links", links, "a list of dicts of link fields, or JSON text of one") from None
    if isinstance(links, Mapping) or not isinstance(links, Sequence):
        raise LinkstatsInputError("links", links, "a list of dicts of link fields")
    rows = []
    for index, row in enumerate(links):
        where = f"item {index + 1}" if from_file else f"links[{index}]"
        if not isinstance(row, Mapping):
            raise LinkstatsInputError(where, row, "a dict of link fields (url, alias, ...)")
        rows.append(Row(row, where))
    return rows


class Row(dict):
    """One link's fields from the input, and where they came from, for messages: ``line 5`` of a
    CSV file, ``links[3]`` of the argument, ``item 4`` of a JSON file."""

    __slots__ = ("where",)

    def __init__(self, fields: Mapping[str, Any], where: str) -> None:
        super().__init__(fields)
        self.where = where


def _read_source(source: str) -> list[dict[str, Any]]:
    import csv
    import io

    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    kind = source.rsplit(".", 1)[-1].lower() if "." in source.rsplit("/", 1)[-1] else ""
    if kind not in SOURCE_FORMATS:
        raise LinkstatsInputError("source", source, "a URL of a .json or .csv file (file://, s3://, gs://, ...)")
    path = _storage_path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise LinkstatsInputError("source", source, "a file that exists") from None
    if kind == "json":
        try:
            data = json.loads(text)
        except ValueError as error:
            raise LinkstatsInputError("source", source, f"a JSON list of link objects ({error})") from None
        if isinstance(data, Mapping) and isinstance(data.get("links"), list):
            data = data["links"]
        return load_rows(data, None, from_file=True)
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for row in reader:  # reader.line_num: the file's line where this row ends (the header is line 1)
        clean: dict[str, Any] = {}
        for name, value in row.items():
            if name is None or value is None or value.strip() == "":
                continue  # an empty cell: the field is not given
            value = value.strip()
            if name in LIST_FIELDS and value.startswith("["):
                try:
                    value = json.loads(value)
                except ValueError:
                    raise LinkstatsInputError(name, value, "a JSON list in the CSV cell") from None
            clean[name.strip()] = value
        rows.append(Row(clean, f"line {reader.line_num}"))
    return rows


def mask_passwords(rows: Sequence[Any]) -> None:
    from airflow.providers.common.compat.sdk import mask_secret

    for row in rows:
        if isinstance(row, Mapping):
            for name in LINKS.secret_fields:
                if isinstance(row.get(name), str) and row[name]:
                    mask_secret(row[name])


_NOT_ALIAS = r"[^a-z0-9_-]+"  # compiled on first use (re caches it), not at every DAG parse


def derive_alias(prefix: str, value: Any) -> str:
    """``prefix`` + ``value`` lower-cased, each run of other characters than a-z 0-9 - _ as one ``-``."""
    return prefix + re.sub(_NOT_ALIAS, "-", str(value).strip().lower()).strip("-")


class Item:
    """One link of the launch. (Plain classes here, not dataclasses: this module is imported at
    every DAG parse, where each dataclass definition costs about half a millisecond.)"""

    __slots__ = ("alias", "fields", "row", "where")

    def __init__(self, alias: str, fields: dict[str, Any], row: int, where: str = "") -> None:
        self.alias = alias
        self.fields = fields  # the create fields, checked against the contract
        self.row = row  # 1-based position in the input, for ordering messages
        self.where = where or f"row {row}"  # the file's line ("line 5") or the list's index ("links[3]")

    @property
    def named(self) -> str:
        """``line 5 (alias 'spring-0004')``: the row as the user finds it in the file, for messages."""
        return f"{self.where} (alias {self.alias!r})"


def plan_items(
    rows: list[dict[str, Any]],
    defaults: Mapping[str, Any] | None,
    alias_column: str | None,
    prefix: str,
    origin: str = "links",
) -> list[Item]:
    """Every row checked and given its alias, before any request; all problems reported at once, one
    sentence each, naming the row by where it came from (``Row.where``) and its alias. ``origin``: where
    the rows came from, for the message ("links", or "source '<url>'")."""
    from airflow_provider_linkstats.client.checks import check_future
    from airflow_provider_linkstats.client.errors import LinkstatsInputError
    from airflow_provider_linkstats.client.validation import validate_fields

    if defaults is not None and not isinstance(defaults, Mapping):
        raise LinkstatsInputError("defaults", defaults, "a dict of create fields for every link")
    problems: list[str] = []
    items: list[Item] = []
    seen: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        place = getattr(row, "where", None) or f"row {number}"  # the file's line, or the list's index
        fields = {**(defaults or {}), **row}
        if alias_column:
            if alias_column not in row:
                problems.append(f"{place}: no {alias_column!r} value to derive the alias from.")
                continue
            fields.pop(alias_column)
            if "alias" in row:
                problems.append(f"{place}: both an alias and alias_column {alias_column!r}; give one.")
                continue
            fields["alias"] = derive_alias(prefix, row[alias_column])
        elif not fields.get("alias"):
            problems.append(f"{place}: no alias (give one per link, or alias_column).")
            continue
        where = f"{place} (alias {str(fields['alias'])!r})"
        try:
            checked = validate_fields(LINKS, "create", fields)
            if checked.get("expires_at") is not None:  # a past end would create a dead link
                check_future(checked["expires_at"], "expires_at")
        except LinkstatsInputError as error:
            problems.append(f"{where}: {error.sentence()}")
            continue
        alias = str(fields["alias"])
        if alias in seen:
            first = seen[alias]
            problems.append(f"{where}: the alias again, first {'on' if first.startswith('line') else 'at'} {first}.")
            continue
        seen[alias] = place
        items.append(Item(alias, fields, number, place))
    if problems:
        shown = problems[:20] + ([f"and {len(problems) - 20} more."] if len(problems) > 20 else [])
        listed = "\n".join(f"- {problem}" for problem in shown)
        counted = f"{len(problems)} of {len(rows)} rows"
        message = f"{counted} of {origin} are invalid; nothing was sent:\n{listed}"
        raise LinkstatsInputError(origin.split(" ", 1)[0], counted, listed, message=message)
    return items


# -- the launch -------------------------------------------------------------------------------------


class Outcome:
    def __init__(self) -> None:
        # alias -> {"id", "short_url", "outcome", "made_by"[, "expires_at"]}
        self.links: dict[str, dict[str, Any]] = {}
        self.failed: dict[str, BaseException] = {}
        self.rows: dict[str, str] = {}  # alias -> "line 5 (alias 'x')", for messages
        self.order: dict[str, int] = {}  # alias -> its row, to name failures in the file's order

    def count(self, outcome: str) -> int:
        return sum(1 for entry in self.links.values() if entry["outcome"] == outcome)

    def summary(self) -> dict[str, Any]:
        return {
            "total": len(self.links) + len(self.failed),
            "created": self.count("created"),
            "created_earlier": self.count("created_earlier"),
            "skipped": self.count("skipped"),
            "updated": self.count("updated"),
            "failed": len(self.failed),
        }

    def raise_failures(self, total: int) -> None:
        from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

        from airflow_provider_linkstats.client.errors import is_permanent

        named = sorted(self.failed.items(), key=lambda pair: self.order.get(pair[0], 0))
        shown = "; ".join(f"{self.rows.get(alias, alias)}: {error}" for alias, error in named[:10])
        more = f"; and {len(self.failed) - 10} more" if len(self.failed) > 10 else ""
        message = (
            f"{len(self.failed)} of {total} links failed ({len(self.links)} done; a retry creates only what is "
            f"missing): {shown}{more}"
        )
        if all(is_permanent(error) for error in self.failed.values()):
            raise AirflowFailException(message)
        raise AirflowException(message)


# Who made a link (the result's "made_by"): this try, an earlier try of this run (a resumed launch),
# or nobody of this run (it existed before; "before this try" when the run's start is not known).
THIS_TRY, EARLIER_TRY = "this try", "an earlier try of this run"
BEFORE_RUN, BEFORE_TRY = "before the run", "before this try"


class Launch:
    """One bulk create: walk once, then create (or mend) what is missing, concurrently.

    ``run_start``: the moment before which no try of this task sent anything (``earlier_tries_since``:
    the run's ``run_after``, which neither a retry nor a clear moves; None on the first try, with
    ``known``). A link found by the walk whose ``created_at`` (the service's clock) is after it was
    made by an earlier try of this run: that moment and the records both outlive a killed worker and
    a clear, where the earlier try's XCom and memory do not, and it costs no request (the walk reads
    ``created_at`` anyway).
    """

    def __init__(
        self,
        hook: Any,
        items: list[Item],
        *,
        if_exists: str,
        workers: int,
        log: Any,
        run_start: Any = None,
        known: bool | None = None,
    ) -> None:
        self.hook = hook
        self.items = items
        self.if_exists = if_exists
        self.workers = workers
        self.log = log
        self.run_start = run_start
        # Whether who made a link can be told: in a DAG run (on its first try no earlier try made any).
        self.known = run_start is not None if known is None else known
        self.run_since: Any = None  # the run's start on the service's clock, once it has answered
        self.outcome = Outcome()
        self.outcome.rows = {item.alias: item.named for item in items}
        self.outcome.order = {item.alias: item.row for item in items}

    def run(self) -> Outcome:
        from concurrent.futures import ThreadPoolExecutor, as_completed

        from airflow_provider_linkstats.launch_progress import FAILED, LaunchProgress

        # Checked and made ready once; a duration (expires_at="PT2H") is resolved again at each
        # create by the service's clock, and a fixed end checked again then (``client.prepare``).
        prepared = [(item, self.hook.prepare_link_fields(item.fields, "create")) for item in self.items]
        existing = self.walk(prepared)
        self.run_since = self.hook.on_service_clock(self.run_start)
        if self.run_since is not None:
            import datetime as dt

            # Only a link certainly made after the run started counts as an earlier try's: the start at
            # its latest within the clocks' measured offset, and ``made_by`` compares strictly (created_at
            # keeps whole seconds), so a link made in the run's first second is taken as existing before
            # and nothing is filled in on a link that may be another's.
            self.run_since += dt.timedelta(seconds=2 * self.hook.client.clock.uncertainty)
        if self.if_exists == "skip":
            self.refuse_conflicts(existing)  # before any write: "skip" never touches another's link
        total = len(prepared)
        limiter = getattr(self.hook.client, "limiter", None)
        progress = LaunchProgress(
            total, log=self.log, pace=lambda: _pace(limiter), requests=lambda: getattr(limiter, "answered", None)
        )
        every = max(1, min(100, total // 10))
        told = getattr(limiter, "on_wait", None)
        if limiter is not None:
            limiter.on_wait = progress.waiting
        try:
            with progress, ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="linkstats-launch") as pool:
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
        finally:
            if limiter is not None:
                limiter.on_wait = told
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
        import os

        from airflow_provider_linkstats.client.records import record_domain_id

        wanted = {item.alias: fields.get("domain_id") for item, fields in prepared}
        if not wanted:
            return {}
        prefix = os.path.commonprefix(list(wanted))
        filters = {"search": prefix, "search_by": "alias"} if prefix else {}
        found: dict[str, dict[str, Any]] = {}
        # A complete walk: a link deleted meanwhile hides no other (a hidden one would be created
        # again, meet "taken" and cost a reconcile).
        for record in self.hook.iter_records(filters, complete=True):
            alias = str(record.get("alias"))
            if alias not in wanted:
                continue
            domain, on = wanted[alias], record_domain_id(record)
            if domain is not None and on is not None and str(domain) != str(on):
                continue  # the same alias on another domain: not this launch's link
            found[alias] = record
        self.log.info(
            "%d of %d links exist already (one listing walk%s)",
            len(found), len(wanted), f" of aliases containing {prefix!r}" if prefix else "",
        )  # fmt: skip
        return found

    def refuse_conflicts(self, existing: dict[str, dict[str, Any]]) -> None:
        """Fail before any write when a row's alias belongs to another link (another long URL)."""
        from airflow_provider_linkstats.client.errors import LinkstatsConflictError
        from airflow_provider_linkstats.client.verify import identity_differences

        problems = []
        for item in self.items:
            record = existing.get(item.alias)
            others = identity_differences(LINKS, item.fields, record) if record is not None else []
            if others:
                problems.append(
                    f"{self.outcome.rows[item.alias]}: link id={record.get('id')} has this alias with "  # type: ignore[union-attr]
                    f"{'; '.join(d.describe() for d in others)}"
                )
        if problems:
            shown = "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
            raise LinkstatsConflictError(
                f"{len(problems)} of {len(self.items)} rows name an alias that belongs to another link, so nothing "
                f"was written: {shown}. Give those rows other aliases, or set if_exists='update' to overwrite "
                "those links",
                conn_id=getattr(self.hook, "linkstats_conn_id", None),
            )

    def made_by(self, record: dict[str, Any]) -> str:
        """Who made an existing link: an earlier try of this run, or nobody of this run."""
        from airflow_provider_linkstats.client.reconcile import created_since

        if self.run_since is None:
            return BEFORE_RUN if self.known else BEFORE_TRY  # known: the first try, no earlier try made any
        return EARLIER_TRY if created_since(record, self.run_since, slack=0) else BEFORE_RUN

    def one(
        self, item: Item, fields: dict[str, Any], existing: dict[str, Any] | None
    ) -> tuple[dict[str, Any], str, str]:
        """Create one link, or meet the existing one as ``if_exists`` says: (record, outcome, made_by)."""
        from airflow_provider_linkstats.client.reconcile import SKIPPED, UPDATED, updatable
        from airflow_provider_linkstats.client.verify import identity_differences

        if existing is None:  # created first; a 422 "taken" (a concurrent launch) is reconciled there
            record, outcome = self.hook.create_or_reconcile(fields, self.if_exists, tries_since=self.run_start)
            if outcome == "created":
                return record, outcome, THIS_TRY
            return record, self._kept(record, outcome), self.made_by(record)
        made_by = self.made_by(existing)
        ours = made_by == EARLIER_TRY and not identity_differences(LINKS, item.fields, existing)
        if ours and self.if_exists != "update":
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

    def _kept(self, record: dict[str, Any], outcome: str) -> str:
        """A create refused as taken, then skipped or updated: an earlier try's link counts as that."""
        if outcome == "skipped" and self.made_by(record) == EARLIER_TRY:
            return "created_earlier"
        return outcome


def entry(record: dict[str, Any], outcome: str, made_by: str) -> dict[str, Any]:
    """One link of the result: its id and short URL, what happened and who made it; its stored end
    (the moment the service keeps: a duration counts from this link's own create)."""
    value = {"id": record.get("id"), "short_url": record.get("short_url"), "outcome": outcome, "made_by": made_by}
    if record.get("expires_at"):
        value["expires_at"] = record["expires_at"]
    return value


def _pace(limiter: Any) -> float | None:
    limit, window = getattr(limiter, "limit", None), getattr(limiter, "window", None)
    return float(limit) / float(window) if limit and window else None


# -- the result --------------------------------------------------------------------------------------


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


def launch_result(value: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """alias -> {"id", "short_url", ...} from a bulk create's XCom, read from ``result_path`` if it went there."""
    if value.get("links") is not None:
        return dict(value["links"])
    return dict(json.loads(_storage_path(value["result_path"]).read_text(encoding="utf-8"))["links"])


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
