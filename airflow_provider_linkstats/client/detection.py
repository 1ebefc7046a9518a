"""Finding the API and telling a service's generation apart, with one request that changes nothing.

Neither product sends a version header. A statistics read of record 0 with a statistic name that
only the newer generation knows answers 422 (the name is invalid) on the older one and 404 (no
record 0) on the newer one: ``name=click`` on phpShort (44-45 / 46+), ``name=visitors_hour`` on
phpAnalytics (3.0-3.6 / 3.7+). Both answers are JSON, which is also how the probe tells whether an
API root is the API at all: a web server's HTML 404 page (or anything not a JSON object) means
"not here", so finding the base URL and the version cost the same one request.

``detect`` is a plan (a generator yielding one ``ApiRequest``) run by ``drive`` or ``adrive``;
``locate`` is the hook's base-URL discovery, the same probe at each candidate root in turn.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass

from airflow_provider_linkstats.client.dialect import DIALECTS, Dialect
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsNotFoundError,
    LinkstatsResponseError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status

PROBE_NAME = {"links": "click", "analytics": "visitors_hour"}


def probe_request(service: str) -> ApiRequest:
    params = (("name", PROBE_NAME[service]), ("from", "2024-01-01"), ("to", "2024-01-01"))
    return ApiRequest("GET", "/stats/0", params=params)


class NotTheApi(Exception):
    """The probe's answer was not the API's (an HTML page, a redirect, a non-JSON body)."""

    def __init__(self, status: int, what: str) -> None:
        self.status = status
        self.what = what
        super().__init__(f"HTTP {status}, {what}")


def read_probe(service: str, request: ApiRequest, response: ApiResponse) -> Dialect | None:
    """The generation behind one raw probe answer; None when the API answered without telling it.

    Raises ``NotTheApi`` when the answer is not from the API (try the other root), and the usual
    error for a JSON error answer (401, 403, 429, 5xx: the API is here but refused).
    """
    old, new = DIALECTS[service]
    if not _is_json_object(response):
        raise NotTheApi(response.status, describe_answer(response))
    if response.status == 422:
        return old
    if response.status == 404:
        return new
    raise_for_status(request, response)
    return None


def version_untold(service: str, status: int | None) -> LinkstatsResponseError:
    request = probe_request(service)
    return LinkstatsResponseError(
        f"no version of the {service} service (expected HTTP 422 or 404 in JSON to the statistics probe)",
        status=status,
        method=request.method,
        path=request.path,
    )


@dataclass(frozen=True)
class Located:
    root: str  # the API root that answered
    dialect: Dialect | None  # None: the API answered without telling its version
    note: str  # the probe's answer, for the log
    status: int  # the probe's HTTP status


class NoApiAnswered(Exception):
    """Neither root answered as the API; ``tried`` lists each with what it answered."""

    def __init__(self, tried: list[str]) -> None:
        self.tried = tried
        super().__init__(" and ".join(tried))


def locate(service: str, roots: tuple[str, ...]) -> Generator[tuple[str, ApiRequest], ApiResponse, Located]:
    """Which of ``roots`` serves the API, and its generation, from one probe per root tried.

    Yields (root, request) and receives the raw answer. A JSON error answer (401, 403, 429, 5xx)
    raises its usual error: the API is at that root but refused.
    """
    request = probe_request(service)
    tried: list[str] = []
    for root in roots:
        response = yield root, request
        try:
            dialect = read_probe(service, request, response)
        except NotTheApi as error:
            tried.append(f"{root} ({error})")
            continue
        return Located(root, dialect, probe_note(response), response.status)
    raise NoApiAnswered(tried)


def detect(service: str) -> Generator[ApiRequest, ApiResponse, Dialect]:
    """The connected generation of ``service`` ("links" or "analytics"), from one GET.

    Works with a driver that hands back raw answers and with one whose ``call`` raises for an
    error status (the 422 and the 404 then arrive as exceptions).
    """
    old, new = DIALECTS[service]
    request = probe_request(service)
    try:
        response = yield request
    except LinkstatsValidationError:
        return old
    except LinkstatsNotFoundError as error:
        if "HTML" in error.message or "non-JSON" in error.message:
            raise _no_api(service, error) from error
        return new
    try:
        dialect = read_probe(service, request, response)
    except NotTheApi as error:
        raise _no_api(service, LinkstatsResponseError(str(error), status=error.status)) from None
    if dialect is None:
        raise version_untold(service, response.status)
    return dialect


def _no_api(service: str, error: LinkstatsApiError) -> LinkstatsResponseError:
    return LinkstatsResponseError(
        f"the {service} API did not answer the version probe as an API would ({error.message}); check that "
        f"the base URL ends in /api/v1, or set the connection's api_version extra",
        status=error.status,
        method="GET",
        path="/stats/0",
    )


def describe_answer(response: ApiResponse) -> str:
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    return f"{kind}, {len(response.body)} bytes"


def probe_note(response: ApiResponse) -> str:
    """The probe's answer for the log: status and the service's message."""
    try:
        payload = json.loads(response.body)
    except ValueError:
        return f"HTTP {response.status}"
    message = payload.get("message") if isinstance(payload, dict) else None
    return f"HTTP {response.status} {json.dumps(message)[:120]}"


def _is_json_object(response: ApiResponse) -> bool:
    try:
        return isinstance(json.loads(response.body), dict)
    except ValueError:
        return False
