"""Fault injection: what the next API requests suffer, changed at any time without a restart."""

from __future__ import annotations

import datetime as dt
import email.utils
import threading
from dataclasses import asdict, dataclass

from airflow_provider_linkstats.emulator import paths


@dataclass
class FaultRule:
    """Applies to the next ``remaining`` requests matching ``method`` and ``path_prefix`` (None: any)."""

    remaining: int
    method: str | None = None
    path_prefix: str | None = None
    status: int | None = None  # None for a drop rule
    retry_after: str | None = None
    body: str | None = None  # None: a JSON {"message": ...}
    content_type: str = "text/html; charset=utf-8"
    after_commit: bool = False  # handle the request (the change is committed), then answer ``status``
    commit_after: float | None = None  # answer ``status`` at once, handle the request this many seconds later

    def matches(self, method: str, path: str) -> bool:
        relative = paths.api_relative(path)
        return (self.method is None or self.method == method) and (
            self.path_prefix is None or (relative if relative is not None else path).startswith(self.path_prefix)
        )


@dataclass
class AfterPage:
    """Right after answering page ``page`` of a listing (a GET of ``path_prefix`` exactly, sorted
    ``sort`` when given), delete ``delete`` (ids of ``path_prefix``'s records) and advance the
    clock ``advance`` seconds, for the next ``remaining`` such answers."""

    page: int
    delete: list[int]
    advance: float = 0.0
    path_prefix: str = "/links"
    sort: str | None = None
    remaining: int = 1

    def matches(self, method: str, path: str, query: dict[str, str]) -> bool:
        relative = paths.api_relative(path)
        listed = (relative if relative is not None else path).rstrip("/")
        try:
            page = int(query.get("page") or 1)
        except ValueError:
            page = 1
        return (
            method == "GET"
            and listed == self.path_prefix.rstrip("/")
            and page == self.page
            and (self.sort is None or query.get("sort", "desc") == self.sort)
        )


@dataclass(frozen=True)
class Decision:
    """What the middleware does to one request."""

    latency: float = 0.0
    fail: FaultRule | None = None
    drop: bool = False


_NOTHING = Decision()


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fail: list[FaultRule] = []
        self._drop: list[FaultRule] = []
        self._latency = 0.0
        self._after: list[AfterPage] = []

    def after_page(
        self,
        page: int = 1,
        delete: list[int] | int | None = None,
        advance: float = 0.0,
        path_prefix: str = "/links",
        sort: str | None = None,
        count: int = 1,
    ) -> None:
        """Once page ``page`` of the listing at ``path_prefix`` ("/links", "/websites", ...) has been
        answered (``sort``: only when asked in that order, "asc" or "desc"), delete the records
        ``delete`` (ids) and advance the clock ``advance`` seconds (below 0: a clock stepped back,
        as NTP may step a server's), before the answer's last byte
        leaves: the client's next request meets the change. For the next ``count`` such answers.
        A record already gone is passed over."""
        ids = [delete] if isinstance(delete, int) else list(delete or [])
        if any(isinstance(i, bool) or not isinstance(i, int) for i in ids):
            raise ValueError(f"delete must be a record id or a list of ids, got {delete!r}")
        if isinstance(page, bool) or not isinstance(page, int) or page < 1:
            raise ValueError(f"page must be a page number (1 or more), got {page!r}")
        if not isinstance(advance, (int, float)) or isinstance(advance, bool):
            raise ValueError(f"advance must be seconds (below 0: the clock stepped back), got {advance!r}")
        if sort not in (None, "asc", "desc"):
            raise ValueError(f"sort must be 'asc', 'desc' or null, got {sort!r}")
        if not ids and not advance:
            raise ValueError("give the ids to delete, or seconds to advance the clock, or both")
        prefix = paths.relative_prefix(path_prefix) or "/links"
        with self._lock:
            self._after.append(AfterPage(page, ids, float(advance), prefix, sort, _count(count)))

    def take_after(self, method: str, path: str, query: dict[str, str]) -> AfterPage | None:
        """The after-page rule this answer sets off, consuming one count of it."""
        if not self._after:
            return None
        with self._lock:
            for rule in self._after:
                if rule.matches(method, path, query):
                    rule.remaining -= 1
                    if rule.remaining <= 0:
                        self._after.remove(rule)
                    return rule
        return None

    def fail_next(
        self,
        count: int = 1,
        status: int = 503,
        retry_after: int | float | str | dt.datetime | None = None,
        method: str | None = None,
        path_prefix: str | None = None,
        body: str | None = None,
        content_type: str = "text/html; charset=utf-8",
        after_commit: bool = False,
        commit_after: float | None = None,
    ) -> None:
        """Answer the next ``count`` matching API requests with ``status`` instead of handling them.

        ``retry_after``: seconds, or an aware datetime sent as an HTTP date. ``body``: sent as-is
        (an HTML error page, truncated JSON...) instead of the JSON message; with ``after_commit``
        and no body, a proxy's own HTML page. ``after_commit``: the request is handled first (a
        create or update is committed) and its answer replaced, as a gateway that gave up waiting
        for a PHP request that still ran to the end (502, 504; a proxy's 503). ``commit_after``
        (seconds): the gateway answers at once (a proxy's HTML page unless ``body``) and the request
        is handled (committed) that much later, as a PHP request that runs on after its gateway gave up.
        """
        if not 200 <= int(status) <= 599:
            raise ValueError(f"status must be a final HTTP status (200-599), got {status!r}")
        if commit_after is not None and (
            isinstance(commit_after, bool) or not isinstance(commit_after, (int, float)) or commit_after < 0
        ):
            raise ValueError(f"commit_after must be a number of seconds >= 0, got {commit_after!r}")
        rule = FaultRule(
            _count(count),
            _method(method),
            api_path_prefix(path_prefix),
            int(status),
            _retry_after(retry_after),
            body if body is not None or not (after_commit or commit_after is not None) else proxy_page(int(status)),
            content_type,
            bool(after_commit),
            None if commit_after is None else float(commit_after),
        )
        with self._lock:
            self._fail.append(rule)

    def drop_next(self, count: int = 1, method: str | None = "POST", path_prefix: str | None = None) -> None:
        """Handle the next ``count`` matching requests (the change is committed), then close the
        connection without answering, as a proxy timing out or a crash would."""
        with self._lock:
            self._drop.append(FaultRule(_count(count), _method(method), api_path_prefix(path_prefix)))

    def set_latency(self, seconds: float) -> None:
        """Seconds added before every API response (awaited, so concurrent requests overlap)."""
        if seconds < 0:
            raise ValueError("latency cannot be negative")
        self._latency = float(seconds)

    def clear(self) -> None:
        with self._lock:
            self._fail.clear()
            self._drop.clear()
            self._after.clear()
            self._latency = 0.0

    def describe(self) -> dict:
        with self._lock:
            return {
                "latency": self._latency,
                "fail_next": [asdict(r) for r in self._fail],
                "drop_next": [asdict(r) for r in self._drop],
                "after_page": [asdict(r) for r in self._after],
            }

    def take(self, method: str, path: str) -> Decision:
        """The faults for this request, consuming one count of each matching rule."""
        if not (self._fail or self._drop or self._latency):
            return _NOTHING  # the common case, without the lock
        with self._lock:
            return Decision(
                self._latency, _consume(self._fail, method, path), _consume(self._drop, method, path) is not None
            )


PROXY_REASONS = {502: "Bad Gateway", 503: "Service Temporarily Unavailable", 504: "Gateway Time-out"}


def proxy_page(status: int) -> str:
    """The HTML page nginx answers with when it gives up on the upstream."""
    reason = PROXY_REASONS.get(status, "Error")
    return (
        f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n"
        f"<center><h1>{status} {reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    )


def _consume(rules: list[FaultRule], method: str, path: str) -> FaultRule | None:
    for rule in rules:
        if rule.matches(method, path):
            rule.remaining -= 1
            if rule.remaining <= 0:
                rules.remove(rule)
            return rule
    return None


def _count(count: int) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be a positive integer, got {count!r}")
    return count


def _method(method: str | None) -> str | None:
    return method.upper() if method else None


def api_path_prefix(path_prefix: str | None) -> str | None:
    """A full path, or one under the API root ("/links" matches "/public/api/v1/links" and "/api/v1/links")."""
    return paths.relative_prefix(path_prefix)


def _retry_after(value: int | float | str | dt.datetime | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.utcoffset() is None:
            raise ValueError("retry_after datetime must be time-zone aware")
        return email.utils.format_datetime(value.astimezone(dt.timezone.utc), usegmt=True)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return str(value)
