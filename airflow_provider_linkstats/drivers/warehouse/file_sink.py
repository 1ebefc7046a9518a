"""The file sink: ``<path>/<YYYY-MM-DD>/<selection>.<format>`` on object storage, ``<selection>`` a
digest of the selection and statistic (``_state/<selection>/selection.json`` says which), and beside
them the selection's state: ``counters.json``, one ``incomplete/<day>.json`` per day loaded before it
was over and one ``complete/<day>.json`` per day loaded complete (its zone, and its span where not
the zone's midnights). Object storage has no locks: each file is written under a temporary name and
renamed, and no file holds two days, so two runs writing different days cannot lose each other's
flags, and two runs of one day leave the last writer's, whose rows are the file's. The layout before
selections (``<path>/<day>.<format>``, ``_days.json``, ``_counters.json``) and the ``zones.json`` of
the builds before ``complete/`` are read and adopted."""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import io
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.warehouse import Counter, ServiceDay
from airflow_provider_linkstats.drivers.warehouse.schema import FORMATS, LEGACY, WRITE_ATTEMPTS, Schema, _now


class FileSink:
    """A load's rows and state as files under one directory (the module says which)."""

    def __init__(
        self,
        path: Any,
        file_format: str,
        schema: Schema,
        conn_id: str | None = None,
        selection: str = LEGACY,
        generation: str = "",
    ) -> None:
        from airflow.providers.common.compat.sdk import ObjectStoragePath

        if file_format not in FORMATS:
            raise LinkstatsInputError("file_format", file_format, "one of " + ", ".join(FORMATS), secret=False)
        if file_format == "parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise LinkstatsInputError(
                    "file_format", file_format, "csv or jsonl (parquet needs pyarrow, which is not installed)"
                ) from None
        if not isinstance(path, (str, ObjectStoragePath)) or not str(path).strip():
            raise LinkstatsInputError("path", path, "a directory path or URL such as 's3://bucket/linkstats/clicks'")
        self.base = ObjectStoragePath(str(path), conn_id=conn_id) if isinstance(path, str) else path
        self.format, self.schema = file_format, schema
        self.selection, self.generation = selection, generation

    def asset_uri(self) -> str:
        return str(self.base).rstrip("/")

    def lineage_dataset(self) -> tuple[str, str]:
        """(namespace, name) of the directory: ``s3://bucket`` and its path, ``file`` and the local path."""
        from urllib.parse import urlsplit

        parts = urlsplit(self.asset_uri())
        if parts.scheme in ("", "file"):
            return "file", parts.path
        return f"{parts.scheme}://{parts.netloc}", parts.path.lstrip("/")

    def describe(self) -> str:
        return f"files {self.asset_uri()}/<day>/<selection>.{self.format}"

    def create_tables(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True)

    def slug(self, statistic: str) -> str:
        """The file name of this selection and statistic: a digest (a selection may be long)."""
        import hashlib

        return "s" + hashlib.sha256(f"{self.selection}\n{statistic}".encode()).hexdigest()[:16]

    def day_file(self, day: dt.date, statistic: str) -> Any:
        return self.base / day.isoformat() / f"{self.slug(statistic)}.{self.format}"

    def legacy_day_file(self, day: dt.date) -> Any:
        return self.base / f"{day.isoformat()}.{self.format}"

    def state_dir(self, statistic: str) -> Any:
        return self.base / "_state" / self.slug(statistic)

    def counters(self, statistic: str) -> dict[int, Counter]:
        """As ``SqlSink.counters``: this selection's, else the legacy ``_counters.json``'s."""
        own = self.state_dir(statistic) / "counters.json"
        legacy = self._json("_counters.json").get(statistic, {})
        found = {int(i): Counter(int(c), dt.datetime.fromisoformat(s)) for i, (c, s) in legacy.items()}
        if own.exists():
            saved = json.loads(own.read_text())
            if saved.get("generation", "") not in ("", self.generation):
                return {}
            found.update({
                int(i): Counter(int(c), dt.datetime.fromisoformat(since), str(alias))
                for i, (c, since, alias) in saved.get("counters", {}).items()
            })  # fmt: skip
        return found

    def incomplete_days(self, statistic: str, zone: str) -> list[dt.date]:
        return sorted(day for day, name in self.incomplete_zones(statistic).items() if name == zone)

    def incomplete_zones(self, statistic: str) -> dict[dt.date, str]:
        """Every day this selection loaded incomplete, with the zone it was loaded in."""
        self._adopt_legacy_days(statistic)
        return {day: str(mark.get("zone")) for day, mark in _flags(self.state_dir(statistic) / "incomplete")}

    def complete_days(self, statistic: str) -> dict[dt.date, ServiceDay]:
        """Every day this selection holds complete, with its zone and span (``complete/``), less
        the days marked incomplete since."""
        marked = self.incomplete_zones(statistic)
        return {day: held for day, held in self._held_days(statistic).items() if day not in marked}

    def _held_days(self, statistic: str) -> dict[dt.date, ServiceDay]:
        folder = self.state_dir(statistic) / "complete"
        if not folder.exists():
            self._adopt_held_days(statistic, folder)
        return {day: _held(day, entry) for day, entry in _flags(folder)}

    def _adopt_held_days(self, statistic: str, folder: Any) -> None:
        """``complete/`` made once from the builds before it: ``zones.json``'s days, else the zone of
        each day file's rows and ``_days.json``'s complete days. A day a concurrent load wrote keeps its file."""
        target = self.state_dir(statistic) / "zones.json"
        saved = json.loads(target.read_text()) if target.exists() else {}
        if isinstance(saved.get("days"), dict):
            days = (dt.date.fromisoformat(day) for day in saved["days"])
            found = {day: _held(day, entry) for day, entry in zip(days, saved["days"].values(), strict=True)}
        else:
            found = self._held_in_day_files(statistic)
        folder.mkdir(parents=True, exist_ok=True)
        for day, held in found.items():
            flag = folder / f"{day.isoformat()}.json"
            if not flag.exists():
                self._replace(flag, json.dumps(_entry(day, held)).encode())

    def _held_in_day_files(self, statistic: str) -> dict[dt.date, ServiceDay]:
        found = {}
        if self.base.exists():
            for part in self.base.iterdir():
                if not re.fullmatch(r"\d{4}-\d\d-\d\d", part.name):
                    continue
                day = dt.date.fromisoformat(part.name)
                zones = {str(row["zone"]) for row in self._read(self.day_file(day, statistic))}
                if len(zones) == 1:
                    found[day] = ServiceDay.of(day, zones.pop())
        for name, flag in self._json("_days.json").get(statistic, {}).items():
            day = dt.date.fromisoformat(name)
            if flag.get("complete") and flag.get("zone") and day not in found:
                found[day] = ServiceDay.of(day, str(flag["zone"]))
        return found

    def _note_complete(self, statistic: str, day: dt.date, zone: str, span: Any = None) -> None:
        folder = self.state_dir(statistic) / "complete"
        if not folder.exists():  # the state of the builds before adopted first: it never overwrites this day
            self._adopt_held_days(statistic, folder)
        held = ServiceDay.of(day, zone, span)
        self._replace(folder / f"{day.isoformat()}.json", json.dumps(_entry(day, held)).encode())

    def _adopt_legacy_days(self, statistic: str) -> None:
        """Once per selection: the legacy ``_days.json``'s incomplete days become this selection's."""
        state = self.state_dir(statistic)
        adopted = state / "legacy_days_adopted"
        if adopted.exists() or not (self.base / "_days.json").exists():
            return
        for day, flag in self._json("_days.json").get(statistic, {}).items():
            if not flag.get("complete"):
                self.mark_incomplete(statistic, dt.date.fromisoformat(day), flag.get("zone", ""))
        self._describe_state(statistic)
        self._replace(adopted, b"")

    def mark_incomplete(self, statistic: str, day: dt.date, zone: str) -> None:
        """``day`` flagged incomplete (its rows stay): the next run of this selection loads it again."""
        marks = self.state_dir(statistic) / "incomplete"
        marks.mkdir(parents=True, exist_ok=True)
        self._replace(marks / f"{day.isoformat()}.json", json.dumps({"zone": zone, "loaded_at": _now()}).encode())

    def _describe_state(self, statistic: str) -> None:
        """``selection.json``: which selection and statistic a digest stands for (for a person reading)."""
        state = self.state_dir(statistic)
        state.mkdir(parents=True, exist_ok=True)
        described = state / "selection.json"
        if not described.exists():
            text = json.dumps({"selection": self.selection, "statistic": statistic, "file": self.slug(statistic)})
            self._replace(described, text.encode())

    def write_day(
        self,
        day: dt.date,
        zone: str,
        statistic: str,
        record_ids: Sequence[int],
        rows: Sequence[Sequence[Any]],
        complete: bool,
        span: tuple[dt.datetime, dt.datetime] | None = None,
    ) -> None:
        """This selection's file of the day, rows of ``record_ids`` replaced, and the day's flag.

        Two runs of one selection may write the day at once (no lock), so the flag follows the rows:
        an incomplete day is marked before and after its rows; a complete one is unmarked after
        them, the file read back, and marked again if another run's rows replaced it meanwhile."""
        names = self.schema.names
        replaced = set(record_ids)
        self._describe_state(statistic)
        if not complete:
            self.mark_incomplete(statistic, day, zone)
        target = self.day_file(day, statistic)
        kept = [row for row in self._read(target) if int(row[self.schema.record]) not in replaced]
        records = kept + [dict(zip(names, row, strict=True)) for row in rows]
        records.sort(key=lambda row: tuple(str(row[k]) for k in self.schema.key))
        data = self._encode(records)
        target.parent.mkdir(parents=True, exist_ok=True)
        self._replace(target, data)
        self._drop_from_legacy(day, statistic, replaced)
        if not complete:
            self.mark_incomplete(statistic, day, zone)
            return
        self._note_complete(statistic, day, zone, span)
        with contextlib.suppress(FileNotFoundError):  # not marked, or a concurrent run of this selection unmarked it
            (self.state_dir(statistic) / "incomplete" / f"{day.isoformat()}.json").unlink()
        if target.read_bytes() != data:  # another run's rows since ours: their flag may be ours
            self.mark_incomplete(statistic, day, zone)

    def _drop_from_legacy(self, day: dt.date, statistic: str, replaced: set[int]) -> None:
        """The legacy day file (every selection's rows) loses the rows now in this selection's file
        (emptied, it goes), again while another selection's rewrite puts them back: no row is lost."""
        legacy = self.legacy_day_file(day)
        breakdown = "statistic" in self.schema.names
        for _ in range(WRITE_ATTEMPTS):
            if not legacy.exists():
                return
            rows = self._read(legacy)
            kept = [
                row
                for row in rows
                if int(row[self.schema.record]) not in replaced or (breakdown and row["statistic"] != statistic)
            ]
            if len(kept) == len(rows):
                return
            if kept:
                self._replace(legacy, self._encode(kept))
            else:
                try:
                    legacy.unlink()
                except FileNotFoundError:
                    return

    def save_counters(self, statistic: str, counters: Mapping[int, Counter]) -> None:
        """Merged into this selection's ``counters.json`` (counters of another generation dropped)."""
        target = self.state_dir(statistic) / "counters.json"
        self._describe_state(statistic)
        saved = json.loads(target.read_text()) if target.exists() else {}
        mine = saved.get("counters", {}) if saved.get("generation", "") in ("", self.generation) else {}
        mine.update({str(i): [c.clicks, c.steady_since.isoformat(), c.alias] for i, c in counters.items()})
        text = json.dumps({"generation": self.generation, "counters": mine}, sort_keys=True)
        self._replace(target, text.encode())

    def read_day(self, day: dt.date) -> list[dict[str, Any]]:
        """Every row of a day: each selection's file, and the legacy day file's."""
        found = self._read(self.legacy_day_file(day))
        folder = self.base / day.isoformat()
        if folder.exists():
            for part in sorted(folder.iterdir(), key=lambda item: item.name):
                if part.name.endswith(f".{self.format}") and not part.name.startswith("."):
                    found.extend(self._read(part))
        return found

    def _read(self, target: Any) -> list[dict[str, Any]]:
        if not target.exists():
            return []
        data = target.read_bytes()
        if self.format == "jsonl":
            return [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        if self.format == "csv":
            return [self._typed(row) for row in csv.DictReader(io.StringIO(data.decode()))]
        import pyarrow.parquet as pq

        return [self._typed(row) for row in pq.read_table(io.BytesIO(data)).to_pylist()]

    def _typed(self, row: Mapping[str, Any]) -> dict[str, Any]:
        types = dict(self.schema.columns)
        return {k: int(v) if types.get(k) == "BIGINT" else str(v) for k, v in row.items()}

    def _encode(self, records: list[dict[str, Any]]) -> bytes:
        names = self.schema.names
        if self.format == "jsonl":
            return "".join(json.dumps(row, sort_keys=False) + "\n" for row in records).encode()
        if self.format == "csv":
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=names, lineterminator="\n")
            writer.writeheader()
            writer.writerows(records)
            return out.getvalue().encode()
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(records, schema=_arrow_schema(self.schema))
        out = io.BytesIO()
        pq.write_table(table, out)
        return out.getvalue()

    def _json(self, name: str) -> dict[str, Any]:
        target = self.base / name
        return json.loads(target.read_text()) if target.exists() else {}

    def _replace(self, target: Any, data: bytes) -> None:
        """Write under a temporary name, then rename over ``target``: a reader sees the old file or the new."""
        import uuid

        temporary = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
        temporary.write_bytes(data)
        temporary.rename(target)


def _arrow_schema(schema: Schema) -> Any:
    import pyarrow as pa

    kinds = {"BIGINT": pa.int64()}
    return pa.schema([(name, kinds.get(kind, pa.string())) for name, kind in schema.columns])


def _entry(day: dt.date, held: ServiceDay) -> Any:
    if held.natural:
        return held.zone
    return [held.zone, held.start.isoformat(), held.end.isoformat()]


def _flags(folder: Any) -> Iterator[tuple[dt.date, Any]]:
    for flag in folder.iterdir() if folder.exists() else ():
        if not flag.name.endswith(".json") or flag.name.startswith("."):
            continue
        try:
            entry = json.loads(flag.read_text())
        except FileNotFoundError:  # replaced or completed by a concurrent load of this selection meanwhile
            continue
        yield dt.date.fromisoformat(flag.name[: -len(".json")]), entry


def _held(day: dt.date, entry: Any) -> ServiceDay:
    """One day's ``complete/<day>.json`` or ``zones.json`` entry: its zone, or [zone, start, end]."""
    if isinstance(entry, list):
        span = (dt.datetime.fromisoformat(entry[1]), dt.datetime.fromisoformat(entry[2]))
        return ServiceDay.of(day, str(entry[0]), span)
    return ServiceDay.of(day, str(entry))
