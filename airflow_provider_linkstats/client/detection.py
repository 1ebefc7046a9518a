"""Finding the API and telling a service's generation apart, with requests that change nothing.

Neither product sends a version header. A statistics read of record 0 answers 404 (no record 0)
from a generation that knows the statistic asked for and 422 (the name is invalid) from one that
does not: each ``Generation`` declares the statistic of its probe (``probe``), and its statistics
table says how it answers. Two generations that answer every probe alike cannot be told apart:
detection says so, and the ``api_version`` extra decides.

The same answer says whether a root is the API at all: the API's 404 is a JSON object whose
``status`` repeats the HTTP status, and only the API answers a GET with 422. A web server's HTML
page, or the JSON 404 the web app gives for a path outside the API (a typo in the base URL),
means "not here". ``identify`` is a plan, run with a sender that returns every answer.
"""

from __future__ import annotations

import json
from collections.abc import Generator

from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError, LinkstatsResponseError
from airflow_provider_linkstats.client.generations import Generation, generations
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status, request_url

API_FORMS = ("https://<host>/api/v1", "https://<host>/public/api/v1")


def probe_request(statistic: str, root: str = "") -> ApiRequest:
    params = (("name", statistic), ("from", "2024-01-01"), ("to", "2024-01-01"))
    return ApiRequest("GET", "/stats/0", params=params, root=root)


def probes(service: str) -> tuple[str, ...]:
    """The statistics the version probes ask, each once, in the order of the versions table."""
    return tuple(dict.fromkeys(g.probe for g in generations(service) if g.probe))


class NotTheApi(Exception):
    """The probe's answer was not the API's (an HTML page, a redirect, a JSON 404 from outside it)."""

    def __init__(self, status: int, what: str, conn_id: str | None = None) -> None:
        self.status = status
        self.what = what
        self.conn_id = conn_id
        super().__init__(f"HTTP {status}, {what}")


def read_probe(request: ApiRequest, response: ApiResponse) -> int | None:
    """404 or 422 (the API's answer that tells generations apart); None for a 2xx that tells nothing.
    ``NotTheApi`` when the answer is not the API's; the usual error for its other errors (401, 429...)."""
    payload = _json_object(response)
    if payload is None:
        raise NotTheApi(response.status, describe_answer(response), response.conn_id)
    if response.status == 422:  # the web app outside the API answers a GET with 404, never 422
        return 422
    if response.status == 404:
        if payload.get("status") != 404:  # the API repeats its status; the web app's own 404 does not
            message = payload.get("message")
            said = f" {json.dumps(message)[:120]}" if isinstance(message, str) else ""
            raise NotTheApi(response.status, f"JSON from outside the API{said}", response.conn_id)
        return response.status
    raise_for_status(request, response)
    return None


class VersionUntold(Exception):
    """The API answered the probe at this root with a success that tells no version."""

    def __init__(self, note: str) -> None:
        self.note = note
        super().__init__(note)


class Ambiguous(LinkstatsResponseError):
    """Two or more generations answered the probes alike: only ``api_version`` can tell them apart."""


def identify(service: str, root: str = "") -> Generator[ApiRequest, ApiResponse, tuple[Generation, str]]:
    """The connected generation of ``service`` at ``root`` and the probes' answer (for the log);
    ``NotTheApi`` when the first answer is not the API's."""
    candidates = generations(service)
    notes = []
    for statistic in probes(service):
        request = probe_request(statistic, root)
        response = yield request
        status = read_probe(request, response)
        if status is None:
            raise VersionUntold(probe_note(response))
        notes.append(probe_note(response))
        candidates = tuple(g for g in candidates if g.probe_answer(statistic) == status)
        if len(candidates) <= 1:
            break
    if not candidates:
        raise version_untold(service, request, response)
    if len(candidates) > 1:
        raise _ambiguous(candidates, notes, request, response, root)
    return candidates[0], "; ".join(notes)


def _ambiguous(
    candidates: tuple[Generation, ...], notes: list[str], request: ApiRequest, response: ApiResponse, root: str
) -> Ambiguous:
    names = " from ".join(g.label for g in candidates)
    return Ambiguous(
        f"cannot tell {names}: they answer the version probe alike ({'; '.join(notes)}); set the "
        f"connection's api_version extra to the service's version",
        status=response.status,
        method=request.method,
        path=request.path,
        url=request_url(root, request) if root else response.url,
        conn_id=response.conn_id,
    )


def version_untold(
    service: str, request: ApiRequest, response: ApiResponse | None = None, note: str = ""
) -> LinkstatsResponseError:
    said = f" (it answered {note})" if note else ""
    answered = (response.status, response.url, response.conn_id) if response is not None else (None, "", None)
    status, url, conn_id = answered
    return LinkstatsResponseError(
        f"set the connection's api_version extra to the service's version: no known version of the {service} "
        f"service answered the probe as expected (HTTP 422 or 404 in JSON){said}",
        status=status, method=request.method, path=request.path, url=url, conn_id=conn_id,
    )  # fmt: skip


def no_api_answered(service: str, tried: list[str], conn_id: str | None) -> LinkstatsNotFoundError:
    """No root answered as the API: the fix first, then the URLs tried, what each answered."""
    conn = f"connection {conn_id!r}" if conn_id else "the connection"
    error = LinkstatsNotFoundError(  # no "GET ... HTTP 404:" in front: the fix is the first words
        f"Check the Base URL of {conn}: no Linkstats {service} API answered there. Tried "
        + " and ".join(tried)
        + f". The API's address usually has one of the forms {' or '.join(API_FORMS)}",
    )
    error.status, error.method, error.path, error.conn_id = 404, "GET", "/stats/0", conn_id
    return error


def describe_answer(response: ApiResponse) -> str:
    kind = response.headers.get("content-type", "no content type").split(";")[0]
    return f"{kind}, {len(response.body)} bytes"


def probe_note(response: ApiResponse) -> str:
    """The probe's answer for the log: status and the service's message."""
    payload = _json_object(response)
    message = payload.get("message") if payload is not None else None
    return f"HTTP {response.status} {json.dumps(message)[:120]}" if message is not None else f"HTTP {response.status}"


def _json_object(response: ApiResponse) -> dict | None:
    try:
        payload = json.loads(response.body)
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None
