"""What a hook learned about a connection's service (API root, generation, account facts, the
service's clock), kept in small JSON files for the host's other task processes for ``ttl`` seconds,
so that a campaign of many tasks pays one discovery (docs/connections.md).

Never turned against the key: the directory is 0700, and every access goes through a descriptor of
it, checked private (this user's, writable by no one else), never following a symbolic link; an
entry is named by a one-way fingerprint of (connection id, base URL, API key) and holds no key; a
saved API root is used only if the connection's own base URL yields it (``allowed_roots``); an
entry is bounded before it is parsed, its facts checked after (the caller's ``enough``).

Concurrent tasks: the first to miss takes the entry's lock (``fcntl.flock``) and discovers; the
others wait at most ``wait`` seconds, then read what it saved. No Airflow import here.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import math
import os
import re
import secrets
import stat
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import astuple, dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SETTING_ENV = "AIRFLOW__LINKSTATS__CACHE_DIR"  # Airflow's name for [linkstats] cache_dir
TTL_ENV = "AIRFLOW__LINKSTATS__CACHE_TTL"  # [linkstats] cache_ttl, seconds
DEFAULT_TTL = 3600.0
DIRECTORY_NAME = "airflow-provider-linkstats"
OFF = ("", "off", "none", "false", "0", "disabled")  # settings that disable the store
CLOCK_SKEW = 300.0  # an entry saved further in the future than this is not believed
_POLL = 0.05  # seconds between tries of a lock another process holds
_ENTRY, _LOCK = ".json", ".lock"
FORMAT = 1  # of an entry; another one is ignored
MAX_ENTRY_BYTES = 64 * 1024
MAX_DEPTH = 8  # of nested objects and lists in an entry (ours have 2): deeper is not parsed at all
_FINGERPRINT_LABEL = b"airflow-provider-linkstats learned-service key fingerprint v1"


# -- an entry: whose it is, and its bytes (a file here, a value in the shared store) ----------------


@dataclass(frozen=True)
class EntryKey:
    """Which entry: a connection, its base URL and a fingerprint of its key (never the key)."""

    conn_id: str
    base_url: str
    fingerprint: str

    @classmethod
    def of(cls, conn_id: str, base_url: str, api_key: str) -> EntryKey:
        return cls(conn_id, base_url, fingerprint(api_key))

    @property
    def name(self) -> str:
        """The entry's file name stem: one-way, so listing the directory tells nothing either."""
        text = json.dumps([self.conn_id, self.base_url, self.fingerprint])
        return hashlib.sha256(text.encode()).hexdigest()[:40]


def fingerprint(api_key: str) -> str:
    """HMAC-SHA256 of the key: tells two keys apart, and cannot be turned back into one."""
    return hmac.new(_FINGERPRINT_LABEL, api_key.encode(), hashlib.sha256).hexdigest()


def entry_bytes(key: EntryKey, facts: dict[str, Any]) -> bytes:
    if not isinstance(facts.get("root"), str):
        raise ValueError("learned facts need the API root ('root')")
    record = {"format": FORMAT, "conn_id": key.conn_id, "base_url": key.base_url,
              "key_fingerprint": key.fingerprint, "saved_at": time.time(), "facts": facts}  # fmt: skip
    return json.dumps(record, sort_keys=True).encode()


def parse_entry(raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(entry, None), or (None, why not) for bytes too large, too deep or not a JSON object."""
    if len(raw) > MAX_ENTRY_BYTES:
        return None, f"larger than {MAX_ENTRY_BYTES} bytes"
    if _depth(raw) > MAX_DEPTH:
        return None, f"nested deeper than {MAX_DEPTH} levels"
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        return None, "not an entry (unreadable JSON)"
    return data, None


def _depth(raw: bytes) -> int:
    """How deeply ``raw``'s JSON nests objects and lists (strings skipped), without parsing it:
    a file nested thousands deep would make the parser raise RecursionError."""
    brackets = _JSON_STRING.sub(b"", raw)
    return max(accumulate((_NESTING.get(byte, 0) for byte in brackets), initial=0))


# A JSON string, escapes included; one left open runs to the end (its brackets are text too).
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_NESTING = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number an entry holds")


# -- the store -------------------------------------------------------------------------------------


class LearnedStore:
    """Entries of learned facts (a JSON object holding at least ``root``), in one private directory;
    ``directory`` None: a store that keeps nothing (``recall`` always misses)."""

    def __init__(self, directory: str | os.PathLike[str] | None, *, ttl: float = DEFAULT_TTL) -> None:
        self.directory = Path(directory) if directory is not None else None
        self.ttl = float(ttl)
        self._warned: set[str] = set()

    def __repr__(self) -> str:
        return f"LearnedStore({str(self.directory) if self.directory else None!r}, ttl={self.ttl:g})"

    @property
    def enabled(self) -> bool:
        return self.directory is not None and fcntl is not None

    # -- reading and writing ------------------------------------------------------------------

    def recall(self, key: EntryKey, allowed_roots: Iterable[str]) -> dict[str, Any] | None:
        """The facts saved for ``key`` if they are fresh, whole and point at an allowed root; else None."""
        name = key.name + _ENTRY
        with self._dir() as dfd:
            data, problem = self._read_checked(dfd, name) if dfd is not None else (None, None)
            if problem:
                self._warn_once(f"file {name}", f"ignored {self.directory}/{name}: {problem}")
            if data is None:
                return None
            problem = self.problem(data, key, tuple(allowed_roots))
            if problem is None:
                return dict(data["facts"])
            log.info("Linkstats connection %r: not using what was learned before (%s)", key.conn_id, problem)
            if problem.startswith("its API root"):
                self._unlink(dfd, name)  # ours, but not what this connection may use
            return None

    def remember(self, key: EntryKey, facts: dict[str, Any]) -> bool:
        """Save ``facts`` for ``key``; False when the store keeps nothing."""
        data = entry_bytes(key, facts)
        with self._dir(create=True) as dfd:
            if dfd is None:
                return False
            temp = f".{key.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            try:
                fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dfd)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
                os.replace(temp, key.name + _ENTRY, src_dir_fd=dfd, dst_dir_fd=dfd)
            except OSError as error:
                self._unlink(dfd, temp)
                self._warn_once("write", f"could not save what was learned in {self.directory} ({error})")
                return False
        return True

    def forget(self, key: EntryKey, reason: str) -> bool:
        """Drop ``key``'s entry (an answer contradicted it); True when there was one."""
        with self._dir() as dfd:
            if dfd is None:
                return False
            dropped = self._unlink(dfd, key.name + _ENTRY)
        if dropped:
            log.info("Linkstats connection %r: dropped what was learned about its service: %s", key.conn_id, reason)
        return dropped

    # -- one discovers, the others wait ---------------------------------------------------------

    def recall_or_learn(
        self,
        key: EntryKey,
        allowed_roots: Iterable[str],
        learn: Callable[[dict[str, Any] | None], dict[str, Any]],
        *,
        wait: float,
        enough: Callable[[dict[str, Any]], bool] = lambda facts: True,
    ) -> tuple[dict[str, Any], bool]:
        """(facts, True) from the store, or (facts ``learn`` found, False), saved for the others.

        Saved facts not ``enough`` are handed to ``learn`` to build on (an entry without the account,
        when the account is wanted). One process learns, holding the entry's lock; the others wait
        for it at most ``wait`` seconds. ``learn`` raising saves nothing: the next waiter tries in turn.
        """
        roots = tuple(allowed_roots)
        facts, ready = self._recall_enough(key, roots, enough)
        if ready:
            return facts, True
        with self._lock_file(key) as fd:
            for _ in _polls_for_lock(key, fd, wait):
                time.sleep(_POLL)
            facts, ready = self._recall_enough(key, roots, enough)
            if ready:
                return facts, True
            facts = learn(facts)
            self.remember(key, facts)
            return facts, False

    async def arecall_or_learn(
        self,
        key: EntryKey,
        allowed_roots: Iterable[str],
        learn: Callable[[dict[str, Any] | None], Awaitable[dict[str, Any]]],
        *,
        wait: float,
        enough: Callable[[dict[str, Any]], bool] = lambda facts: True,
    ) -> tuple[dict[str, Any], bool]:
        """``recall_or_learn`` for the triggerer: the lock is waited for without blocking the loop."""
        roots = tuple(allowed_roots)
        facts, ready = self._recall_enough(key, roots, enough)
        if ready:
            return facts, True
        with self._lock_file(key) as fd:
            for _ in _polls_for_lock(key, fd, wait):
                await asyncio.sleep(_POLL)
            facts, ready = self._recall_enough(key, roots, enough)
            if ready:
                return facts, True
            facts = await learn(facts)
            self.remember(key, facts)
            return facts, False

    def _recall_enough(self, key: EntryKey, roots: tuple[str, ...], enough: Callable[[dict[str, Any]], bool]):
        facts = self.recall(key, roots)
        return facts, facts is not None and enough(facts)

    @contextlib.contextmanager
    def _lock_file(self, key: EntryKey) -> Iterator[int | None]:
        """``key``'s lock file, open (closing it releases the lock), or None when it cannot be used."""
        fd = self._open_lock(key)
        try:
            yield fd
        finally:
            if fd is not None:
                os.close(fd)

    def _open_lock(self, key: EntryKey) -> int | None:
        with self._dir(create=True) as dfd:
            if dfd is None:
                return None
            try:
                fd = os.open(key.name + _LOCK, os.O_RDWR | os.O_CREAT | _NOFOLLOW | os.O_NONBLOCK, 0o600, dir_fd=dfd)
            except OSError as error:
                self._warn_once("lock", f"could not open a lock in {self.directory} ({error})")
                return None
            problem = _not_private(os.fstat(fd), "file")
            if problem:
                os.close(fd)
                self._warn_once(f"lock {key.name}", f"ignored lock file {key.name}{_LOCK}: {problem}")
                return None
            return fd

    # -- seeing and clearing it ----------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Every entry file as ``recall`` reads it: conn id, base URL, facts, age, and why one is unused."""
        found: list[dict[str, Any]] = []
        with self._dir() as dfd:
            if dfd is None:
                return found
            now = time.time()
            found.extend(self._row(dfd, name, now) for name in sorted(os.listdir(dfd)) if name.endswith(_ENTRY))
        return found

    def _row(self, dfd: int, name: str, now: float) -> dict[str, Any]:
        data, problem = self._read_checked(dfd, name)
        row: dict[str, Any] = {"file": name}
        if data is not None:
            row.update(conn_id=data.get("conn_id"), base_url=data.get("base_url"), facts=data.get("facts"))
            saved = data.get("saved_at")
            row["age"] = now - saved if isinstance(saved, (int, float)) else None
            problem = problem or self._freshness(data, now)
        row["unused_because"] = problem
        return row

    def clear(self) -> int:
        """Delete every entry and lock this user owns in the directory; the count of entries deleted."""
        deleted = 0
        with self._dir() as dfd:
            if dfd is None:
                return 0
            for name in os.listdir(dfd):
                if name.endswith((_ENTRY, _LOCK, ".tmp")):
                    try:
                        owner = os.stat(name, dir_fd=dfd, follow_symlinks=False).st_uid
                    except OSError:
                        continue
                    if owner == os.geteuid() and self._unlink(dfd, name) and name.endswith(_ENTRY):
                        deleted += 1
        return deleted

    # -- the directory and the files -------------------------------------------------------------

    @contextlib.contextmanager
    def _dir(self, create: bool = False) -> Iterator[int | None]:
        """A descriptor of the store's directory once checked private, or None (nothing is kept)."""
        if not self.enabled:
            yield None
            return
        assert self.directory is not None
        if create:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as error:
                self._warn_once("mkdir", f"cannot create {self.directory} ({error}); nothing is kept")
                yield None
                return
        try:
            dfd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            yield None  # not there yet (nothing saved) or not usable
            return
        try:
            problem = _not_private(os.fstat(dfd), "directory")
            if problem:
                self._warn_once("dir", f"not using {self.directory}: {problem}")
                yield None
            else:
                yield dfd
        finally:
            os.close(dfd)

    def _read_checked(self, dfd: int, name: str) -> tuple[dict[str, Any] | None, str | None]:
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | os.O_NONBLOCK, dir_fd=dfd)
        except FileNotFoundError:
            return None, None
        except OSError as error:  # a symbolic link (ELOOP), or unreadable
            return None, f"cannot be opened safely ({error.strerror})"
        try:
            problem = _not_private(os.fstat(fd), "file")
            if problem:
                return None, problem
            raw = os.read(fd, MAX_ENTRY_BYTES + 1)
        finally:
            os.close(fd)
        return parse_entry(raw)

    def problem(self, data: dict[str, Any], key: EntryKey, allowed_roots: tuple[str, ...]) -> str | None:
        """Why a parsed entry may not be used for ``key`` (None: it may)."""
        if data.get("format") != FORMAT:
            return f"an entry of another format ({data.get('format')!r})"
        if (data.get("conn_id"), data.get("base_url"), data.get("key_fingerprint")) != astuple(key):
            return "an entry of another connection, base URL or key"
        facts = data.get("facts")
        if not isinstance(facts, dict) or not isinstance(facts.get("root"), str):
            return "an entry without an API root"
        stale = self._freshness(data, time.time())
        if stale:
            return stale
        if facts["root"] not in allowed_roots:
            return (
                f"its API root {facts['root']!r} is not one the base URL {key.base_url!r} yields "
                f"({' or '.join(allowed_roots)})"
            )
        return None

    def _freshness(self, data: dict[str, Any], now: float) -> str | None:
        saved = data.get("saved_at")
        if not isinstance(saved, (int, float)) or isinstance(saved, bool) or not math.isfinite(saved):
            return "no time of saving"
        if saved > now + CLOCK_SKEW:
            return "saved in the future"
        if now - saved >= self.ttl:
            return f"expired ({now - saved:.0f} s old, ttl {self.ttl:g} s)"
        return None

    def _unlink(self, dfd: int, name: str) -> bool:
        try:
            os.unlink(name, dir_fd=dfd)
        except OSError:
            return False
        return True

    def _warn_once(self, topic: str, message: str) -> None:
        if topic not in self._warned:
            self._warned.add(topic)
            log.warning("Linkstats learned-service cache: %s", message)


# -- what contradicts an entry ---------------------------------------------------------------------


def contradiction(status: int, body: bytes) -> str | None:
    """Why an answer of an ordinary request (not a probe) says the learned root or key is wrong: a 401
    (a revoked key, or another install at that address), a 404 that is not the API's JSON (a web page)."""
    if status == 401:
        return "the service refused the key (HTTP 401)"
    if status == 404:
        try:
            is_api = isinstance(json.loads(body), dict)
        except ValueError:
            is_api = False
        if not is_api:
            return "the API root answered HTTP 404 with a page that is not the API's"
    return None


# -- where it lives ------------------------------------------------------------------------------


def default_directory() -> Path:
    """``$XDG_CACHE_HOME/airflow-provider-linkstats``, else ``~/.cache/...``; without a usable home (an
    arbitrary uid with HOME=/), a per-user directory in the temporary one (the ownership check holds)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / DIRECTORY_NAME
    home = os.path.expanduser("~")
    if os.path.isabs(home) and home != "/" and os.access(home, os.W_OK):
        return Path(home) / ".cache" / DIRECTORY_NAME
    return Path(tempfile.gettempdir()) / f"{DIRECTORY_NAME}-{os.geteuid()}"


def resolve(setting: str | None = None, ttl: float | str | None = None) -> LearnedStore:
    """The store a setting names: a directory, empty or ``off`` (disabled), or None (the environment
    variable, else the default directory). ``ttl``: seconds, else the environment's, else an hour."""
    if setting is None:
        setting = os.environ.get(SETTING_ENV)
    seconds = _ttl_seconds((os.environ.get(TTL_ENV) or DEFAULT_TTL) if ttl is None else ttl)
    if setting is not None and setting.strip().lower() in OFF or seconds <= 0:
        return LearnedStore(None)
    directory = Path(os.path.expanduser(setting.strip())) if setting is not None else default_directory()
    if not directory.is_absolute():
        raise ValueError(f"cache_dir {setting!r}: allowed is an absolute path, or empty or 'off' to disable it")
    return LearnedStore(directory, ttl=seconds)


def _ttl_seconds(ttl: float | str) -> float:
    try:
        return float(ttl)
    except (TypeError, ValueError):
        raise ValueError(f"cache_ttl {ttl!r}: allowed is a number of seconds, e.g. 3600 (0 disables)") from None


# -- helpers ---------------------------------------------------------------------------------------

try:  # POSIX only; elsewhere (Windows, where Airflow does not run either) nothing is kept
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _polls_for_lock(key: EntryKey, fd: int | None, wait: float) -> Iterator[None]:
    """Yields while another process holds ``fd``'s lock (the caller sleeps, or awaits, a poll), for at
    most ``wait`` seconds; then says this one discovers too. Shared by ``recall_or_learn`` and its async twin."""
    if fd is None:
        return
    deadline = time.monotonic() + wait
    while not _try_lock(fd):
        if time.monotonic() >= deadline:
            log.warning("Linkstats connection %r: another task is still discovering after %.0f s; "
                        "discovering here too", key.conn_id, wait)  # fmt: skip
            return
        yield


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _not_private(st: os.stat_result, what: str) -> str | None:
    """Why a directory or file may not be trusted: another owner, another kind, others may write it."""
    if st.st_uid != os.geteuid():
        return f"the {what} is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    kind = stat.S_ISDIR if what == "directory" else stat.S_ISREG
    if not kind(st.st_mode):
        return f"not a regular {what}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"the {what} is writable by its group or by others (mode {stat.filemode(st.st_mode)})"
    return None


# -- python -m airflow_provider_linkstats.client.learned --list | --clear ------------------------------


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m airflow_provider_linkstats.client.learned",
        description="See or clear what the Linkstats hooks learned about their services (API root, version, "
        "account time zone and default domain). Holds no secret.",
    )
    parser.add_argument(
        "--dir", help=f"the directory (default: {SETTING_ENV}, else [linkstats] cache_dir, else {default_directory()})"
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--list", action="store_true", help="show every entry (the default)")
    action.add_argument("--clear", action="store_true", help="delete every entry")
    args = parser.parse_args(argv)
    store = resolve(args.dir if args.dir is not None else _airflow_setting())
    if not store.enabled:
        print("The learned-service cache is disabled ([linkstats] cache_dir is empty or off).")
        return 0
    if args.clear:
        print(f"Deleted {store.clear()} entries from {store.directory}.")
        return 0
    from airflow_provider_linkstats.client.discovery import ServiceProfile

    rows = store.entries()
    print(f"{store.directory}: {len(rows)} entries (kept {store.ttl:g} s)")
    kept = [name for name in ServiceProfile("links", "", "").to_json() if name != "service"]
    now = time.time()
    for row in rows:
        print(_entry_line(row, kept, now))
    return 0


def _entry_line(row: dict[str, Any], kept: list[str], now: float) -> str:
    """One entry for ``--list``: its connection, its checked facts, its age or why it is unused."""
    from airflow_provider_linkstats.client.discovery import facts_problem

    facts = row.get("facts") or {}
    bad_facts = facts_problem(facts)
    if bad_facts:
        shown, problem = "not shown", row["unused_because"] or f"its facts: {bad_facts}"
    else:  # only what a profile holds, checked: no other text is shown
        shown = ", ".join(_shown(name, facts[name], now) for name in kept if name in facts)
        problem = row["unused_because"]
    state = f"unused: {problem}" if problem else f"{row['age']:.0f} s old"
    if row.get("conn_id") is None:
        state = f"{row['file']}, {state}"
    return f"- {row.get('conn_id')!s} {row.get('base_url')!s}: {shown} ({state})"


def _shown(name: str, value: Any, now: float) -> str:
    if name.endswith("_at") and isinstance(value, (int, float)):
        return f"{name[:-3]} {now - value:.0f} s ago" if value else f"{name[:-3]} never"
    return f"{name}={value}"


def _airflow_setting() -> str | None:
    """The environment variable, else ``[linkstats] cache_dir`` when Airflow is installed (as the hooks read it)."""
    if SETTING_ENV in os.environ:
        return os.environ[SETTING_ENV]
    try:
        from airflow.configuration import conf
    except Exception:
        return None
    return conf.get("linkstats", "cache_dir", fallback=None)


if __name__ == "__main__":
    sys.exit(main())
