"""What a client learns about a connection's service, once: where the API answers, which
generation it is (``detection``), and the account's time zone and default domain. ``discover``
is a plan (run by ``drive`` or ``adrive`` with a sender that hands back every answer whatever its
status); its answer, a ``ServiceProfile``, holds no secret, so it can be kept across processes.

A fresh phpShort account has no default domain, and ``GET /domains`` lists only the account's own
domains, never the install's global ones (the one made at install, id 1, is usable by every
account: the web form offers it to all). So when the account names no default, the plan also reads
its domains: with none of its own, the install's domain is the only one it can use
(``sole_domain_id``); with some, the caller must choose (``domain_choices``, kept in memory only:
names are the service's text, not stored).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from airflow_provider_linkstats.client.contract import DOMAINS
from airflow_provider_linkstats.client.detection import (
    NotTheApi,
    VersionUntold,
    identify,
    no_api_answered,
    probe_note,
    probe_request,
    probes,
    read_probe,
    version_untold,
)
from airflow_provider_linkstats.client.errors import LinkstatsApiError, LinkstatsAuthError, LinkstatsRateLimitError
from airflow_provider_linkstats.client.generations import Generation, by_name
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    Plan,
    build_account,
    build_list,
    drive,
    parse_page,
    parse_record,
    raise_for_status,
)

# The domain phpShort makes at install (``short_domain``): every account may shorten on it, though
# ``GET /domains`` never lists it.
INSTALL_DOMAIN_ID = 1
# Seconds the account's domain facts are trusted for a create that relies on them (a create
# without domain_id, no default_domain_id extra); older ones are read again (one GET /account).
# No answer can check them: the create sends the domain, so its answer holds it whatever the
# account now prefers. The 44-45 time zone needs no such bound: every write's answer is checked
# against it, and a change is mended there and then (``client/updating.py``).
ACCOUNT_FRESH = 300.0
MAX_DOMAINS_READ = 100  # one page of GET /domains; past it the account has several anyway
_NOT_STORED = ("note", "domain_choices")  # in memory only: the service's free text
_ROOT = re.compile(r"https?://[^\s]{1,2040}")
_GENERATION = re.compile(r"[0-9a-z]{0,8}")
_ZONE = re.compile(r"[A-Za-z][A-Za-z0-9_+\-/]{0,63}")


@dataclass(frozen=True)
class ServiceProfile:
    """What discovery learned about one connection's service (no secret: safe to keep on disk)."""

    service: str  # "links" or "analytics"
    root: str  # the API root that answered, e.g. https://links.example.com/api/v1
    generation: str  # ``Generation.name``: "44", "46", "3", "31"; "": the API answered without telling
    timezone: str | None = None  # the account's zone (read with the account)
    default_domain_id: int | None = None  # links: the account's default domain
    account_read: bool = False  # whether the two above come from an account read
    # links, an account without a default domain: the only domain it can use (see the module's doc)
    sole_domain_id: int | None = None
    domains_read: bool = False  # whether sole_domain_id comes from a read of the account's domains
    learned_at: float = 0.0  # time.time() when the root and generation were found
    account_read_at: float = 0.0  # time.time() of the account read
    # The service's clock as this host measured it from the Date of its answers (``client/clock.py``),
    # when the profile was saved: offset (service minus worker, seconds), uncertainty, and when
    # (time.time()). A task process of the host starts from it instead of a read (``ensure_clock``).
    clock_offset: float | None = field(default=None, compare=False)
    clock_uncertainty: float | None = field(default=None, compare=False)
    clock_at: float = field(default=0.0, compare=False)
    # Not stored (``to_json``): the probe's answer for this task's log, and the domains to choose from.
    note: str = field(default="", compare=False)
    # None: not read by this process (the host cache does not keep names); (): the read failed.
    domain_choices: tuple[tuple[int, str], ...] | None = field(default=None, compare=False)

    def tells(self, account: bool, domains: bool = False) -> bool:
        """Whether this profile says all that is asked: the account's facts, a create's domain."""
        return (self.account_read or not account) and self.knows_domain(domains)

    def knows_domain(self, domains: bool) -> bool:
        """Whether the account's facts, read at most ``ACCOUNT_FRESH`` s ago, tell a create's domain."""
        if not domains:
            return True
        return self.account_read and self.fresh() and (self.default_domain_id is not None or self.domains_read)

    def fresh(self) -> bool:
        return 0 <= time.time() - self.account_read_at < ACCOUNT_FRESH

    def aged(self, domains: bool) -> ServiceProfile:
        """This profile to build on: for a create's domain, account facts too old are read again."""
        return replace(self, account_read=False) if domains and self.account_read and not self.fresh() else self

    @property
    def spoken(self) -> Generation:
        """The generation; an error saying to set api_version when the probe did not tell it."""
        if not self.generation:
            request = probe_request(probes(self.service)[0], self.root)
            raise version_untold(self.service, request, note=self.note)
        return by_name(self.service, self.generation)

    def to_json(self) -> dict[str, Any]:
        """What may be kept or handed to another process: no text the service wrote."""
        return {key: value for key, value in asdict(self).items() if key not in _NOT_STORED}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServiceProfile:
        """A profile from kept facts, each checked (type, size, finite times); ``ValueError`` says why not."""
        problem = facts_problem(data)
        if problem:
            raise ValueError(problem)
        stored = [key for key in cls.__dataclass_fields__ if key not in _NOT_STORED]
        return cls(**{key: data[key] for key in stored if key in data})


def facts_problem(data: Any) -> str | None:
    """Why kept facts cannot be a ``ServiceProfile``: a wrong type, a size or a time out of bounds."""
    if not isinstance(data, Mapping):
        return "not an object"
    for key in ("service", "root", "generation"):
        if key not in data:
            return f"no {key!r}"
    for key, (valid, allowed) in _FACT_CHECKS.items():
        if key in data and not valid(data[key]):
            return f"{key!r} is not {allowed}"
    return None


def known_zone(name: Any) -> bool:
    """Whether ``name`` is a time zone this worker knows (so no other text passes for one)."""
    if not isinstance(name, str) or _ZONE.fullmatch(name) is None:
        return False
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        return False
    return True


def with_clock(profile: ServiceProfile, clock: Any) -> ServiceProfile:
    """``profile`` carrying what ``clock`` (a ``ServiceClock``) measured, when it heard the service
    itself (an offset adopted from elsewhere is not passed on as a measurement)."""
    if clock is None or not clock.known or clock.adopted_from is not None:
        return profile
    return replace(
        profile, clock_offset=round(clock.offset, 3), clock_uncertainty=round(clock.uncertainty + 0.0005, 4),
        clock_at=time.time(),
    )  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _moment(value: Any) -> bool:
    return _number(value) and value >= 0


def _domain_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**31


def _null_or(valid: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or valid(value)


def _text_matching(pattern: re.Pattern[str]) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, str) and pattern.fullmatch(value) is not None


# Each kept fact's check and what it allows, in the order ``facts_problem`` reads them.
_FACT_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "service": (lambda v: v in ("links", "analytics"), "'links' or 'analytics'"),
    "root": (_text_matching(_ROOT), "an http(s) URL"),
    "generation": (_text_matching(_GENERATION), "a version name"),
    "timezone": (_null_or(known_zone), "null or a time zone name"),
    "default_domain_id": (_null_or(_domain_number), "null or a domain id"),
    "sole_domain_id": (_null_or(_domain_number), "null or a domain id"),
    "account_read": (lambda v: isinstance(v, bool), "true or false"),
    "domains_read": (lambda v: isinstance(v, bool), "true or false"),
    "learned_at": (_moment, "a finite time"),
    "account_read_at": (_moment, "a finite time"),
    "clock_offset": (_null_or(lambda v: _number(v) and abs(v) < 864000), "null or seconds (under 10 days)"),
    "clock_uncertainty": (_null_or(lambda v: _number(v) and 0 <= v < 3600), "null or seconds (under an hour)"),
    "clock_at": (_moment, "a finite time"),
}


def discover(
    service: str,
    roots: tuple[str, ...],
    generation: Generation | None = None,
    *,
    account: bool = False,
    known: ServiceProfile | None = None,
    domains: bool = False,
) -> Plan[ServiceProfile]:
    """The ``ServiceProfile`` of ``service`` behind one of ``roots`` (tried in order): no request when
    ``known`` says it all or one root's generation is given; else one probe per root tried, and one
    account read when ``account`` is asked and not yet known."""
    profile = known
    if profile is None:
        profile = yield from _locate(service, roots, generation)
        profile = replace(profile, learned_at=time.time())
    elif generation is not None and profile.generation != generation.name:
        profile = replace(profile, generation=generation.name)
    return (yield from _completed(profile, account=account, domains=domains))


def _completed(profile: ServiceProfile, *, account: bool, domains: bool) -> Plan[ServiceProfile]:
    """``profile`` with the account read when asked, else the domains a create can use when asked."""
    if account and not profile.account_read:
        return (yield from read_account(profile, domains=domains))
    if domains and profile.account_read and profile.default_domain_id is None and not profile.domains_read:
        sole, choices = yield from usable_domains(profile.root)
        return replace(profile, sole_domain_id=sole, domain_choices=choices, domains_read=bool(choices))
    return profile


def _locate(service: str, roots: tuple[str, ...], generation: Generation | None) -> Plan[ServiceProfile]:
    if len(roots) == 1 and generation is not None:
        return ServiceProfile(service, roots[0], generation.name)
    tried: list[str] = []
    conn_id = None
    for root in roots:
        try:
            if generation is None:
                return (yield from _identify_at(service, root))
            return (yield from _probe_pinned(service, root, generation))
        except NotTheApi as error:
            conn_id = conn_id or error.conn_id
            tried.append(f"{root} ({error})")
    raise no_api_answered(service, tried, conn_id)


def _identify_at(service: str, root: str) -> Plan[ServiceProfile]:
    try:
        found, note = yield from identify(service, root)
    except VersionUntold as untold:  # the API is here; only the version stays unknown
        return ServiceProfile(service, root, "", note=untold.note)
    return ServiceProfile(service, root, found.name, note=note)


def _probe_pinned(service: str, root: str, generation: Generation) -> Plan[ServiceProfile]:
    """The api_version extra's generation at ``root``, once the probe shows the API answers there."""
    statistic = probes(service)[0]
    request = probe_request(statistic, root)
    response = yield request
    status = read_probe(request, response)
    note = probe_note(response)
    if status is not None and generation.probe_answer(statistic) != status:
        note += f", which is not how {generation.label} (the api_version extra) answers"
    return ServiceProfile(service, root, generation.name, note=note)


def read_account(profile: ServiceProfile, *, domains: bool = False) -> Plan[ServiceProfile]:
    """``profile`` with the account's time zone and default domain (one GET /account); with
    ``domains``, for a links account without a default, the domain it can use (``usable_domains``)."""
    request = build_account(root=profile.root)
    response = yield request
    raise_for_status(request, response)
    account = parse_record(request, response)
    zone = account.get("timezone") or "UTC"
    default = _domain_id(account)
    sole, choices = None, None
    if domains and profile.service == "links" and default is None:
        sole, choices = yield from usable_domains(profile.root)
    return replace(
        profile,
        timezone=zone if known_zone(zone) else None,  # another text is not kept, nor used
        default_domain_id=default,
        sole_domain_id=sole,
        domain_choices=choices,
        domains_read=bool(choices),
        account_read=True,
        account_read_at=time.time(),
    )


def drive_usable_domains(
    root: str, send: Callable[[ApiRequest], ApiResponse]
) -> tuple[int | None, tuple[tuple[int, str], ...]]:
    """``usable_domains`` through a sync sender (``LinkstatsClient.probe``)."""
    return drive(usable_domains(root), send)


def usable_domains(root: str) -> Plan[tuple[int | None, tuple[tuple[int, str], ...]]]:
    """(the only domain the account can use or None, the domains to choose from: (id, name)), from one
    ``GET /domains`` (the account's own domains only); a failed read tells nothing: (None, ())."""
    request = replace(build_list(DOMAINS, {"per_page": MAX_DOMAINS_READ}), root=root)
    try:
        response = yield request
        raise_for_status(request, response)
        page = parse_page(request, response, MAX_DOMAINS_READ)
    except (LinkstatsAuthError, LinkstatsRateLimitError):
        raise
    except LinkstatsApiError:
        return None, ()
    own = [(item["id"], str(item.get("name") or "")[:253]) for item in page.items if _domain_number(item.get("id"))]
    install = (INSTALL_DOMAIN_ID, "the install's global domain, not listed by GET /domains")
    if not own:
        return INSTALL_DOMAIN_ID, (install,)
    return None, (install, *sorted(own))


def _domain_id(account: Mapping[str, Any]) -> int | None:
    value = account.get("default_domain")
    if isinstance(value, Mapping):  # some versions nest the domain
        value = value.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None
