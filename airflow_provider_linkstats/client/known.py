"""What is known about one connection's service: its ``ServiceProfile``, found once and kept.

A ``KnownService`` holds the profile that discovery (``discovery.py``) finds through a sync or an
async client, shares it with the host's other processes (the learned-service store, ``learned.py``)
and drops it when an answer contradicts it: an error saying a root or key is wrong, a record in
another generation's fields, a write whose answer did not hold what was sent. No Airflow import.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.clock import adopt_profile_clock
from airflow_provider_linkstats.client.discovery import ServiceProfile, with_clock
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsWriteMismatchError,
)
from airflow_provider_linkstats.client.generations import Generation, record_generation_contradicts
from airflow_provider_linkstats.client.verify import mismatch_for_connection

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.contract import Resource
    from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore

Facts = dict[str, Any]

# Handed-over profiles an answer contradicted in this process, by (conn id, root, generation):
# a trigger started again with the same kwargs finds the service out instead.
_CONTRADICTED: set[tuple[str | None, str, str]] = set()


@dataclass(eq=False, repr=False)
class KnownService:
    """What is known about one connection's service (``resource``: its main collection).

    :param roots: the API roots the base URL allows, tried in order.
    :param pinned: the generation the connection names (``api_version``), or None (detected).
    :param store: gives the learned-service store, resolved on first need (it may be disabled).
    :param entry: gives this connection's entry in the store (a fingerprint of the key, never the key).
    :param wait: how long to wait for another process's discovery before finding out alone.
    :param on_found: told each profile found (the hook moves its settings to the root that answered).
    """

    resource: Resource
    _: KW_ONLY
    conn_id: str | None
    roots: tuple[str, ...]
    pinned: Generation | None
    store: Callable[[], LearnedStore]
    entry: Callable[[], EntryKey]
    wait: float
    log: logging.Logger | logging.LoggerAdapter[Any]
    on_found: Callable[[ServiceProfile], None] | None = None
    profile: ServiceProfile | None = field(default=None, init=False)  # what discovery learned, once it has
    handed: ServiceProfile | None = field(default=None, init=False)  # adopted from another process, if any
    client: LinkstatsClient | None = field(default=None, init=False)  # the sync client that reads the profile

    def __repr__(self) -> str:
        return f"KnownService({self.resource.service!r}, conn_id={self.conn_id!r}, profile={self.profile!r})"

    # -- the profile, found once --------------------------------------------------------------

    def _sufficient(self, account: bool, domains: bool = False) -> ServiceProfile | None:
        known = self.profile
        if known is None or not known.tells(account, domains):
            return None
        return known

    def get(
        self, client: Callable[[], LinkstatsClient], *, account: bool = False, domains: bool = False
    ) -> ServiceProfile:
        """The profile, discovered through the sync ``client()`` unless known (here or in the store)."""
        known = self._sufficient(account, domains)
        if known is not None:
            return known
        sync_client = client()
        known = self._aged(self.profile, domains)  # the client's first use may have found it (in the store)
        found: list[ServiceProfile] = []  # what this process discovered (the store keeps less: ``to_json``)

        def learn(previous: Facts | None) -> Facts:
            profile = sync_client.discover(
                self.resource.service, roots=self.roots, generation=self.pinned, account=account,
                known=known or self._aged(self._from_facts(previous), domains), domains=domains,
            )  # fmt: skip
            found.append(with_clock(profile, sync_client.clock))  # the host's other tasks start from this clock
            return found[-1].to_json()

        learned = self.learned if self.needs_discovery(account) else None
        try:
            if learned is None:
                facts, recalled = learn(None), False
            else:
                store, key = learned
                enough = self._enough(account, domains)
                facts, recalled = store.recall_or_learn(key, self.roots, learn, wait=self.wait, enough=enough)
        except LinkstatsApiError as error:
            raise self.discovery_failed(error) from error
        return self._found(sync_client.adopt(self._recalled(facts if recalled else found[-1], recalled)), recalled)

    async def aget(self, client: AsyncLinkstatsClient, *, account: bool = False) -> ServiceProfile:
        """``get`` for the triggerer, through ``client`` (moved to the root that answers)."""
        known = self._sufficient(account)
        if known is not None:
            return client.adopt(known)
        known = self.profile
        found: list[ServiceProfile] = []

        async def learn(previous: Facts | None) -> Facts:
            profile = await client.discover(
                self.resource.service, roots=self.roots, generation=self.pinned, account=account,
                known=known or self._from_facts(previous),
            )  # fmt: skip
            found.append(with_clock(profile, client.clock))
            return found[-1].to_json()

        learned = self.learned if self.needs_discovery(account) else None
        try:
            if learned is None:
                facts, recalled = await learn(None), False
            else:
                store, key = learned
                enough = self._enough(account)
                facts, recalled = await store.arecall_or_learn(key, self.roots, learn, wait=self.wait, enough=enough)
        except LinkstatsApiError as error:
            raise self.discovery_failed(error) from error
        return self._found(client.adopt(self._recalled(facts if recalled else found[-1], recalled)), recalled)

    def relearn_account(self, reason: str) -> ServiceProfile:
        """Read the account again (a write's answer contradicted it) and keep it, here and for the host."""
        assert self.client is not None, "the sync client reads the account"
        current = self.profile or self.client.learner.profiles.get(self.resource.service)
        stale = replace(current, account_read=False) if current is not None else None
        profile = self.client.discover(
            self.resource.service, roots=self.roots, generation=self.pinned, account=True, known=stale,
            domains=self.resource.service == "links",  # the domain a create gets may have changed too
        )  # fmt: skip
        profile = with_clock(profile, self.client.clock)
        if self.learned is not None:
            store, key = self.learned
            store.remember(key, profile.to_json())
        self.log.info(
            "Linkstats connection %r: read the account again (%s): time zone %s, default domain %s",
            self.conn_id, reason, profile.timezone, profile.default_domain_id,
        )  # fmt: skip
        self.profile = profile
        return profile

    def adopt(self, handed: Any) -> ServiceProfile | None:
        """Keep a profile a deferring sensor handed over (``ServiceProfile`` JSON) unless it is not this
        connection's: a root the base URL does not allow (no kwargs can send the key elsewhere), or a
        generation other than the ``api_version`` extra's. None: ignored, discovery as usual."""
        profile = self._from_facts(dict(handed)) if isinstance(handed, dict) else None
        if profile is None:
            why = "not a service profile of this version"
        elif profile.root not in self.roots:
            why = f"its root {profile.root} is not one of the connection's ({', '.join(self.roots)})"
        elif self.pinned is not None and profile.generation != self.pinned.name:
            why = f"its version {profile.generation} is not the api_version extra's ({self.pinned.name})"
        elif (self.conn_id, profile.root, profile.generation) in _CONTRADICTED:
            why = "an answer contradicted it earlier"
        else:
            self.log.info("Linkstats connection %r: %s at %s, as handed over by the task that deferred",
                          self.conn_id, profile.spoken.label, profile.root)  # fmt: skip
            self.handed = profile
            return self._found(profile, recalled=True)  # said above
        self.log.info("Linkstats connection %r: not using the service profile handed over (%s); finding it out",
                      self.conn_id, why)  # fmt: skip
        return None

    def generation(self, client: Callable[[], LinkstatsClient]) -> Generation:
        """The pinned generation when it needs no probe to find the root, else the profile's."""
        if self.pinned is not None and len(self.roots) == 1:
            return self.pinned
        return self.get(client).spoken

    def _found(self, profile: ServiceProfile, recalled: bool = False) -> ServiceProfile:
        """Keep ``profile``; the log says what this task learned (never a request that was not sent)."""
        before = self.profile
        if not recalled:
            self._say_found(profile, before)
        self.profile = profile
        if self.on_found is not None:
            self.on_found(profile)
        return profile

    def _say_found(self, profile: ServiceProfile, before: ServiceProfile | None) -> None:
        if not profile.generation:
            self.log.info("Linkstats connection %r: the API answers at %s (%s, sent by this task)", self.conn_id,
                          profile.root, profile.note)  # fmt: skip
        elif before is None or (before.generation, before.root) != (profile.generation, profile.root):
            self.log.info("Linkstats connection %r: %s at %s (%s)", self.conn_id, profile.spoken.label,
                          profile.root, self._how_found(profile))  # fmt: skip
        if profile.account_read and not (before is not None and before.account_read):
            self.log.info("Linkstats connection %r: %s", self.conn_id, describe_account(profile, "read by this task"))

    def _how_found(self, profile: ServiceProfile) -> str:
        if profile.note:
            return f"version probe GET /stats/0 {profile.note}, sent by this task"
        if self.pinned is not None:
            return "the api_version extra; no request sent"
        return f"{_learned_when(profile.learned_at, 'found')}, host cache"  # built on the host cache's facts

    def discovery_failed(self, error: LinkstatsApiError) -> LinkstatsApiError:
        """A refused key says so first; another failed probe says what it asked and what to set."""
        if isinstance(error, (LinkstatsAuthError, LinkstatsNotFoundError, LinkstatsRateLimitError)):
            return error  # each says what to do: the key, the base URL, the request budget
        if error.method != "GET" or error.path != "/stats/0":
            return error
        fix = "check the base URL and the service"
        if self.pinned is None:
            fix += ", or set the api_version extra to the service's version (skips this request)"
        return error.reworded(f"the {self.resource.service} API's version probe failed: {error.message}; {fix}")

    # -- shared with the host's other processes (the learned-service store) --------------------

    @cached_property
    def learned(self) -> tuple[LearnedStore, EntryKey] | None:
        """The host's store and this connection's entry in it; None when the store is off."""
        store = self.store()
        return (store, self.entry()) if store.enabled else None

    def needs_discovery(self, account: bool) -> bool:
        """Whether finding the profile would send a request (else the store is not worth a look)."""
        return account or len(self.roots) > 1 or self.pinned is None

    def _from_facts(self, facts: Facts | None, *, said: bool = False) -> ServiceProfile | None:
        """The profile ``facts`` hold, if they are whole and of this service; else None (``said``:
        the reason is logged once per process, for facts read from the host cache)."""
        if facts is None:
            return None
        try:
            profile = ServiceProfile.from_json(facts)
            profile.spoken  # noqa: B018 - a generation this version of the provider knows
        except Exception as error:
            if said and _first_time(("ignored", self.conn_id, str(error)[:200])):
                self.log.warning(
                    "Linkstats connection %r: ignored what an earlier task saved about the service (%s); "
                    "finding it out again", self.conn_id, str(error)[:200],
                )  # fmt: skip
            return None
        return profile if profile.service == self.resource.service else None

    def _enough(self, account: bool, domains: bool = False) -> Callable[[Facts], bool]:
        """Whether the store's facts are a profile of this service that says all that is asked."""

        def enough(facts: Facts) -> bool:
            profile = self._from_facts(facts, said=True)
            return profile is not None and (not account or (profile.account_read and profile.knows_domain(domains)))

        return enough

    @staticmethod
    def _aged(profile: ServiceProfile | None, domains: bool) -> ServiceProfile | None:
        """``profile`` to build on: its account read again when too old for a create's domain."""
        return profile.aged(domains) if profile is not None else None

    def _recalled(self, facts: Facts | ServiceProfile, recalled: bool) -> ServiceProfile:
        profile = facts if isinstance(facts, ServiceProfile) else self._from_facts(facts)
        assert profile is not None
        if recalled:
            self._say_recalled(profile)
        if self.pinned is not None and profile.generation != self.pinned.name:
            profile = replace(profile, generation=self.pinned.name)  # the extra decides
        return profile

    def _say_recalled(self, profile: ServiceProfile) -> None:
        """Where the host cache's facts came from, each said once per process."""
        if _first_time(("found", self.conn_id, profile.root, profile.learned_at)):
            when = _learned_when(profile.learned_at, "found")
            self.log.info("Linkstats connection %r: %s at %s, %s (host cache; no request sent)", self.conn_id,
                          profile.spoken.label, profile.root, when)  # fmt: skip
        if profile.account_read and _first_time(("read", self.conn_id, profile.account_read_at)):
            self.log.info("Linkstats connection %r: %s", self.conn_id,
                          describe_account(profile, _learned_when(profile.account_read_at, "read")))  # fmt: skip

    # -- the service's clock, shared with the host's other processes ---------------------------------

    def recall_clock(self, clock: Any) -> bool:
        """Start ``clock`` from the offset an earlier task on this host kept (no request); True when taken."""
        learned = self.learned
        if learned is None or clock.known:
            return False
        store, key = learned
        profile = self._from_facts(store.recall(key, self.roots))
        return profile is not None and adopt_profile_clock(clock, profile)

    def remember_clock(self, clock: Any) -> None:
        """Keep what this process heard of the service's clock with the profile, for the host's next
        task; not an offset only adopted (the host's, a sensor's). Blocking: the triggerer calls it in
        a thread."""
        learned = self.learned
        if learned is None or not clock.known or clock.adopted_from is not None:
            return
        store, key = learned
        profile = self._clock_profile(store.recall(key, self.roots))
        if profile is not None and profile.generation:
            store.remember(key, with_clock(profile, clock).to_json())

    def _clock_profile(self, kept: Facts | None) -> ServiceProfile | None:
        """What the clock is kept with: the host's entry when of this process's root and generation (it
        may hold more of the account than a profile a sensor handed over), else this process's profile."""
        stored, mine = self._from_facts(kept), self.profile
        if stored is not None and (mine is None or (stored.root, stored.generation) == (mine.root, mine.generation)):
            return stored
        return mine

    # -- dropping what an answer contradicts -----------------------------------------------------

    def forget(self, reason: str) -> None:
        """Drop what was learned about the service: from the host's store, here and in the sync client."""
        self._drop(self.learned, reason)
        self.profile = None
        if self.client is not None:
            self.client.forget(self.resource.service)

    def contradicted(self, reason: str) -> None:
        """A client's answer contradicted the learned root or key: the next task finds out again."""
        self._drop(self.__dict__.get("learned"), reason)  # the store only if this hook resolved it

    def _drop(self, learned: tuple[LearnedStore, EntryKey] | None, reason: str) -> None:
        """Drop the store's entry; a handed profile too, refused if handed again in this process."""
        if learned is not None:
            store, key = learned
            store.forget(key, reason)
        if self.handed is not None:
            _CONTRADICTED.add((self.conn_id, self.handed.root, self.handed.generation))
            if self.profile == self.handed:
                self.profile = None
            self.handed = None

    def watch(self, record: dict[str, Any], resource: Resource | None) -> dict[str, Any]:
        """``record``; one of the main collection in another generation's fields drops what was learned."""
        if (resource or self.resource) is self.resource and self.profile is not None and record:
            other = record_generation_contradicts(record, self.profile.spoken)
            if other is not None:
                believed = self.profile.spoken
                self.log.warning(
                    "Linkstats connection %r: a %s record in %s's fields, not %s's: dropping what was learned "
                    "about the service; the next request finds out again",
                    self.conn_id, self.resource.singular, other.label, believed.label,
                )  # fmt: skip
                self.forget(f"a record in {other.label}'s fields, not {believed.label}'s")
        return record

    @contextlib.contextmanager
    def verified(self) -> Iterator[None]:
        """A write answered without what was sent: its version is wrong. A detected one is dropped (the
        retry detects it again, its create reconciled into an update); a pinned one cannot be mended by
        a retry: the error says to change the connection and fails the task at once."""
        try:
            yield
        except LinkstatsWriteMismatchError as error:
            pinned = self.pinned is not None
            if not pinned:
                self.forget_version()
            raise mismatch_for_connection(error, self.conn_id, pinned=pinned) from error

    def forget_version(self) -> None:
        """Drop the detected version (the next request detects it again)."""
        if self.pinned is None and self.profile is not None:
            self.log.warning("Linkstats connection %r: forgetting the detected version (%s); it is detected again "
                             "on next use", self.conn_id, self.profile.generation)  # fmt: skip
            self.forget(f"a write's answer did not hold what was sent as {self.profile.generation}")


# What this process has said of the host cache's facts (where they came from, why ignored): a task
# says it once, however many hooks (or recalls of one hook) read them.
_SAID: set[tuple[Any, ...]] = set()
_SAID_LOCK = threading.Lock()


def _first_time(fact: tuple[Any, ...]) -> bool:
    with _SAID_LOCK:
        if fact in _SAID:
            return False
        _SAID.add(fact)
        return True


def _learned_when(moment: float, verb: str) -> str:
    """Where a fact from the host cache came from and how old it is, for the log."""
    if not moment:
        return f"{verb} by an earlier task on this host"
    return f"{verb} {max(0.0, time.time() - moment):.0f} s ago by an earlier task on this host"


def describe_account(profile: ServiceProfile, how: str) -> str:
    """The account's facts a write relies on, and where they came from."""
    if profile.default_domain_id is not None:
        domain = f"default domain {profile.default_domain_id}"
    elif profile.sole_domain_id is not None:
        domain = f"no default domain (the only one it can use: {profile.sole_domain_id})"
    else:
        domain = "no default domain"
    zone = profile.timezone or "not one this worker knows"
    return f"the account's time zone {zone}, {domain}, {how}"
