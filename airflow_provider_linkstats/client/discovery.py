"""What a client learns about a connection's service, once: where the API answers, which
generation it is, and the account's time zone and default domain.

``discover`` is one plan run by ``drive`` (sync) or ``adrive`` (async) with a sender that hands
back every answer whatever its status: it probes each candidate root until one answers as the
API (``detection``), which also tells the generation unless it is given, then reads the account
when asked. What it returns, a ``ServiceProfile``, is small and JSON-able: it holds no secret, so
it can be kept across processes.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

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
from airflow_provider_linkstats.client.generations import Generation, by_name
from airflow_provider_linkstats.client.protocol import (
    ApiRequest,
    ApiResponse,
    build_account,
    parse_record,
    raise_for_status,
)


@dataclass(frozen=True)
class ServiceProfile:
    """What discovery learned about one connection's service (no secret: safe to keep on disk)."""

    service: str  # "links" or "analytics"
    root: str  # the API root that answered, e.g. https://links.example.com/api/v1
    generation: str  # ``Generation.name``: "44", "46", "3", "31"; "": the API answered without telling
    timezone: str | None = None  # the account's zone (read with the account)
    default_domain_id: int | None = None  # links: the account's default domain
    account_read: bool = False  # whether the two above come from an account read
    note: str = ""  # the probe's answer, for the log ("" when no probe was needed)

    @property
    def spoken(self) -> Generation:
        """The generation; an error saying to set api_version when the probe did not tell it."""
        if not self.generation:
            request = probe_request(probes(self.service)[0], self.root)
            raise version_untold(self.service, request, note=self.note)
        return by_name(self.service, self.generation)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServiceProfile:
        return cls(**{key: data[key] for key in cls.__dataclass_fields__ if key in data})


Plan = Generator[ApiRequest, ApiResponse, ServiceProfile]


def discover(
    service: str,
    roots: tuple[str, ...],
    generation: Generation | None = None,
    *,
    account: bool = False,
    known: ServiceProfile | None = None,
) -> Plan:
    """The ``ServiceProfile`` of ``service`` behind one of ``roots`` (tried in order).

    Costs nothing when ``known`` already says it all, or when there is one root and the
    generation is given (and the account is not asked for); one probe per root tried otherwise,
    plus one account read when ``account`` is asked and not yet known.
    """
    profile = known
    if profile is None:
        profile = yield from _locate(service, roots, generation)
    elif generation is not None and profile.generation != generation.name:
        profile = replace(profile, generation=generation.name)
    if account and not profile.account_read:
        profile = yield from read_account(profile)
    return profile


def _locate(service: str, roots: tuple[str, ...], generation: Generation | None) -> Plan:
    if len(roots) == 1 and generation is not None:
        return ServiceProfile(service, roots[0], generation.name)
    tried: list[str] = []
    conn_id = None
    for root in roots:
        try:
            if generation is None:
                try:
                    found, note = yield from identify(service, root)
                except VersionUntold as untold:  # the API is here; only the version stays unknown
                    return ServiceProfile(service, root, "", note=untold.note)
                return ServiceProfile(service, root, found.name, note=note)
            statistic = probes(service)[0]
            request = probe_request(statistic, root)
            response = yield request
            status = read_probe(request, response)
            note = probe_note(response)
            if status is not None and generation.probe_answer(statistic) != status:
                note += f", which is not how {generation.label} (the api_version extra) answers"
            return ServiceProfile(service, root, generation.name, note=note)
        except NotTheApi as error:
            conn_id = conn_id or error.conn_id
            tried.append(f"{root} ({error})")
    raise no_api_answered(service, tried, conn_id)


def read_account(profile: ServiceProfile) -> Plan:
    """``profile`` with the account's time zone and default domain (one GET /account)."""
    request = build_account(root=profile.root)
    response = yield request
    raise_for_status(request, response)
    account = parse_record(request, response)
    zone = str(account.get("timezone") or "UTC")
    return replace(profile, timezone=zone, default_domain_id=_domain_id(account), account_read=True)


def _domain_id(account: Mapping[str, Any]) -> int | None:
    value = account.get("default_domain")
    if isinstance(value, Mapping):  # some versions nest the domain
        value = value.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None
