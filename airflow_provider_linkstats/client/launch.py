"""The bulk launch's decisions, without I/O and without Airflow: the rows (from a list, a JSON or
a CSV file's text) checked and given their aliases (``plan_items``), which existing link is one of
this launch's (``wanted_alias``), what a conflict is (``conflicts``)
(who made a link: ``ownership.made_by``) and what the result holds per link (``entry``, ``Outcome``).

``drivers.launch.Launch`` drives it: one listing walk, then the creates on a bounded pool.
``operators.launch`` turns the task's arguments into the plan and the result into XCom.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.checks import check_future
from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.ownership import EARLIER_TRY
from airflow_provider_linkstats.client.records import record_domain_id
from airflow_provider_linkstats.client.validation import validate_fields
from airflow_provider_linkstats.client.verify import identity_differences

LIST_FIELDS = tuple(spec.name for spec in LINKS.fields if spec.kind.name in ("TARGETING", "ID_LIST"))
SOURCE_FORMATS = ("json", "csv")

# -- reading the input ------------------------------------------------------------------------------


def load_rows(
    links: Any, source: str | None, *, from_file: bool = False, read: Callable[[str], str] | None = None
) -> list[dict[str, Any]]:
    """The items as dicts (``Row``: each knows where it came from), from ``links`` or from the file at
    ``source`` (exactly one of the two), whose text ``read`` returns (the driver's object storage);
    ``from_file``: ``links`` is a JSON file's list."""
    if (links is None) == (source is None or source == ""):
        raise LinkstatsInputError("links/source", (links, source), "exactly one of the two")
    if source:
        return _read_source(str(source), read)
    if isinstance(links, str):  # a template rendered without native types
        try:
            links = json.loads(links)
        except ValueError:
            raise LinkstatsInputError("links", links, "a list of dicts of link fields, or JSON text of one") from None
    if isinstance(links, Mapping) or not isinstance(links, Sequence):
        raise LinkstatsInputError("links", links, "a list of dicts of link fields")
    return [_row(row, f"item {index + 1}" if from_file else f"links[{index}]") for index, row in enumerate(links)]


def _row(fields: Any, where: str) -> Row:
    if not isinstance(fields, Mapping):
        raise LinkstatsInputError(where, fields, "a dict of link fields (url, alias, ...)")
    return Row(fields, where)


class Row(dict):
    """One link's fields from the input, and where they came from, for messages: ``line 5`` of a
    CSV file, ``links[3]`` of the argument, ``item 4`` of a JSON file."""

    __slots__ = ("where",)

    def __init__(self, fields: Mapping[str, Any], where: str) -> None:
        super().__init__(fields)
        self.where = where


def _read_source(source: str, read: Callable[[str], str] | None) -> list[dict[str, Any]]:
    kind = source.rsplit(".", 1)[-1].lower() if "." in source.rsplit("/", 1)[-1] else ""
    if kind not in SOURCE_FORMATS:
        raise LinkstatsInputError("source", source, "a URL of a .json or .csv file (file://, s3://, gs://, ...)")
    if read is None:
        raise LinkstatsInputError("source", source, "links given as a list here (no reader of files)")
    try:
        text = read(source)
    except FileNotFoundError:
        raise LinkstatsInputError("source", source, "a file that exists") from None
    if kind == "json":
        return _json_rows(source, text)
    reader = csv.DictReader(io.StringIO(text))
    # reader.line_num: the file's line where this row ends (the header is line 1)
    return [Row(_csv_fields(row), f"line {reader.line_num}") for row in reader]


def _json_rows(source: str, text: str) -> list[dict[str, Any]]:
    """A JSON file's links: a list, or an object with a ``links`` list."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise LinkstatsInputError("source", source, f"a JSON list of link objects ({error})") from None
    if isinstance(data, Mapping) and isinstance(data.get("links"), list):
        data = data["links"]
    return load_rows(data, None, from_file=True)


def _csv_fields(row: Mapping[str | None, str | None]) -> dict[str, Any]:
    """A CSV row's given fields (an empty cell gives none), a list field's cell read as JSON."""
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
    return clean


_NOT_ALIAS = r"[^a-z0-9_-]+"  # compiled on first use (re caches it), not at every DAG parse


def derive_alias(prefix: str, value: Any) -> str:
    """``prefix`` + ``value`` lower-cased, each run of other characters than a-z 0-9 - _ as one ``-``."""
    return prefix + re.sub(_NOT_ALIAS, "-", str(value).strip().lower()).strip("-")


class Item:
    """One link of the launch."""

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
    """Every row checked and given its alias, before any request; all problems reported at once (every
    problem of every row, one sentence each), naming the row by where it came from (``Row.where``) and
    its alias. ``origin``: where the rows came from, for the message ("links", or "source '<url>'")."""
    if defaults is not None and not isinstance(defaults, Mapping):
        raise LinkstatsInputError("defaults", defaults, "a dict of create fields for every link")
    problems: list[str] = []
    items: list[Item] = []
    seen: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        place = getattr(row, "where", None) or f"row {number}"  # the file's line, or the list's index
        fields, found = _row_fields(row, place, defaults, alias_column, prefix)
        alias = str(fields["alias"]) if fields.get("alias") else None
        found = _row_problems(fields, place, alias, found, seen)
        if found:
            problems += found
            continue
        assert alias is not None
        seen[alias] = place
        items.append(Item(alias, fields, number, place))
    if problems:
        raise _invalid_rows(problems, len(rows), origin)
    return items


def _row_problems(
    fields: dict[str, Any], place: str, alias: str | None, found: list[str], seen: dict[str, str]
) -> list[str]:
    """``found`` (the alias's problems), then every field the contract refuses, then an alias given again."""
    where = f"{place} (alias {alias!r})" if alias else place
    found = found + [f"{where}: {problem}" for problem in _field_problems(fields, place.startswith("line "))]
    if alias in seen and not found:
        first = seen[alias]
        found.append(f"{where}: the alias again, first {'on' if first.startswith('line') else 'at'} {first}.")
    return found


def _invalid_rows(problems: list[str], rows: int, origin: str) -> Exception:
    """One error for every problem of every row: the first 20 listed, the rows counted."""
    shown = problems[:20] + ([f"and {len(problems) - 20} more."] if len(problems) > 20 else [])
    listed = "\n".join(f"- {problem}" for problem in shown)
    bad = len({problem.split(":", 1)[0].split(" (alias", 1)[0] for problem in problems})
    counted = f"{bad} of {rows} rows"
    message = f"{counted} of {origin} are invalid; nothing was sent:\n{listed}"
    return LinkstatsInputError(origin.split(" ", 1)[0], counted, listed, message=message)


def _row_fields(
    row: Mapping[str, Any], place: str, defaults: Mapping[str, Any] | None, alias_column: str | None, prefix: str
) -> tuple[dict[str, Any], list[str]]:
    """The row's create fields (the defaults under it, its alias given or derived) and the problems
    with its alias."""
    fields = {**(defaults or {}), **row}
    if not alias_column:
        if fields.get("alias"):
            return fields, []
        return fields, [f"{place}: no alias (give one per link, or alias_column)."]
    fields.pop(alias_column, None)
    problems = []
    if "alias" in row:
        problems.append(
            f"{place}: both an alias and alias_column {alias_column!r}; they do not mix: with alias_column every "
            "row's alias comes from that column (leave the alias out, or give every row its alias and no "
            "alias_column)."
        )
    if alias_column not in row:
        problems.append(f"{place}: no {alias_column!r} value to derive the alias from.")
    elif "alias" not in row:
        fields["alias"] = derive_alias(prefix, row[alias_column])
    return fields, problems


def _unknown_columns(left: dict[str, Any], accepted: list[str]) -> list[str]:
    """The CSV columns of ``left`` that are no create field, set aside and named with the fields they may be."""
    problems = []
    for name in [name for name in left if name not in accepted]:
        problems.append(f"column {name!r} is no link field; the columns may be: {', '.join(accepted)}.")
        left.pop(name)
    return problems


def _field_problems(fields: dict[str, Any], from_csv: bool) -> list[str]:
    """Every field of ``fields`` the contract refuses, one sentence each (the check stops at the first
    problem, so each refused field is set aside and the rest checked again); a CSV column that is no
    create field is named as an unknown column, with the fields it may be."""
    accepted = sorted(spec.name for spec in LINKS.fields_for("create"))
    left = dict(fields)
    problems = _unknown_columns(left, accepted) if from_csv else []
    for _ in range(len(left) + 1):
        try:
            checked = validate_fields(LINKS, "create", left)
            if checked.get("expires_at") is not None:  # a past end would create a dead link
                check_future(checked["expires_at"], "expires_at")
            return problems
        except LinkstatsInputError as error:
            if error.field not in left:  # nothing more to set aside: a required field missing, or a pair
                if error.field not in fields:  # (else "required" for a field already named as refused: said once)
                    problems.append(error.sentence())
                return problems
            problems.append(error.sentence())
            left.pop(error.field)
    return problems


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


def kept(outcome: str, made_by: str) -> str:
    """A create refused as taken, then skipped or updated: an earlier try's link counts as that."""
    if outcome == "skipped" and made_by == EARLIER_TRY:
        return "created_earlier"
    return outcome


def walk_filters(aliases: list[str]) -> tuple[str, dict[str, Any]]:
    """The one listing walk's filter: the aliases' common prefix (and the prefix)."""
    prefix = os.path.commonprefix(aliases)
    return prefix, ({"search": prefix, "search_by": "alias"} if prefix else {})


def wanted_alias(record: dict[str, Any], wanted: Mapping[str, Any]) -> str | None:
    """The alias of this launch ``record`` is (``wanted``: alias -> the row's domain_id), or None:
    another alias, or the same alias on another domain."""
    alias = str(record.get("alias"))
    if alias not in wanted:
        return None
    domain, on = wanted[alias], record_domain_id(record)
    if domain is not None and on is not None and str(domain) != str(on):
        return None  # the same alias on another domain: not this launch's link
    return alias


def conflicts(items: list[Item], existing: Mapping[str, dict[str, Any]], rows: Mapping[str, str]) -> list[str]:
    """The rows whose alias belongs to another link (another long URL), one sentence each."""
    problems = []
    for item in items:
        record = existing.get(item.alias)
        others = identity_differences(LINKS, item.fields, record) if record is not None else []
        if others:
            problems.append(
                f"{rows[item.alias]}: link id={record.get('id')} has this alias with "  # type: ignore[union-attr]
                f"{'; '.join(d.describe() for d in others)}"
            )
    return problems


def entry(record: dict[str, Any], outcome: str, made_by: str) -> dict[str, Any]:
    """One link of the result: its id and short URL, what happened and who made it; its stored end
    (the moment the service keeps: a duration counts from this link's own create)."""
    value = {"id": record.get("id"), "short_url": record.get("short_url"), "outcome": outcome, "made_by": made_by}
    if record.get("expires_at"):
        value["expires_at"] = record["expires_at"]
    return value
