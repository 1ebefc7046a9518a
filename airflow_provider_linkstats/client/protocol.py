"""Sans-I/O core: what to send and what an answer means.

Everything here is a pure function of its arguments. The sync transport (requests), the async
one (httpx, used by the trigger) and the emulator's tests all share it, so the sensor and its
trigger cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from typing import Any, TypeVar
from urllib.parse import urlencode

from airflow_provider_linkstats.client.contract import (
    API_PREFIX,
    API_VERSION_PATH,
    LINKS,
    MAX_PER_PAGE,
    RESOURCES,
    LinkStatus,
    Resource,
    StatsSpec,
)
from airflow_provider_linkstats.client.encoding import FormPairs, encode_form
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsResponseError,
    LinkstatsRouteMissError,
    LinkstatsServerError,
    LinkstatsValidationError,
    describe_field_errors,
)
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.ratelimit import parse_retry_after
from airflow_provider_linkstats.client.records import normalize
from airflow_provider_linkstats.client.validation import (
    Fields,
    secret_values,
    validate_fields,
    validate_id,
    validate_list_params,
)

MAX_ERROR_MESSAGE = 300  # characters of one server message kept in an exception
MAX_ERROR_TEXT = 1200  # characters of all of them together


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request, relative to the service's API root."""

    method: str
    path: str  # starts with "/", e.g. "/links/5"
    params: tuple[tuple[str, str], ...] = ()
    form: tuple[tuple[str, str], ...] = ()
    # Password values in ``form``: redacted from any error text the server sends back.
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # Another API root than the client's (discovery tries candidate roots with one client).
    root: str = ""
    # Extra request headers (the cleanup's confirming read asks caches for a fresh answer).
    headers: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def describe(self) -> str:
        """For logs and errors: method and path only, never the body (it may hold passwords)."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class ApiResponse:
    """What a transport hands back: status, headers (lower-case names) and raw body.

    ``url`` (the full URL tried) and ``conn_id`` (the Airflow connection) are for error texts, and
    ``redact_key`` (the transport's ``ApiKey.redact``) cuts the key out of them, whoever reads the answer.
    """

    status: int
    headers: Mapping[str, str]
    body: bytes = field(repr=False)  # a server may echo a secret in it
    url: str = ""
    conn_id: str | None = None
    redact_key: Callable[[str], str] | None = field(default=None, repr=False, compare=False)


@dataclass
class Page:
    items: list[dict[str, Any]]
    has_next: bool
    last_page: int | None = None  # what the answer's meta said, when it said it (it may not be true)
    total: int | None = None


# -- plans: request/answer exchanges as generators, and the one stepper that runs them ------------

T = TypeVar("T")
Plan = Generator["ApiRequest", "ApiResponse", T]


async def adrive(plan: Plan[T], call: Callable[[ApiRequest], Awaitable[ApiResponse]]) -> T:
    """Run ``plan``: it yields each ``ApiRequest``, receives its ``ApiResponse`` (or has the
    transport's ``LinkstatsApiError`` thrown in, for it to decide what the error means) and returns
    what it learnt. ``call`` sends a request (with retries) and returns its answer, or raises."""
    try:
        request = next(plan)
        while True:
            try:
                response = await call(request)
            except LinkstatsApiError as error:
                request = plan.throw(error)
            else:
                request = plan.send(response)
    except StopIteration as stop:
        return stop.value


def drive(plan: Plan[T], call: Callable[[ApiRequest], ApiResponse]) -> T:
    """``adrive`` with a synchronous ``call`` (a worker): the same requests, the same reading. The
    coroutine never suspends, so one step runs it to the end without an event loop."""

    async def acall(request: ApiRequest) -> ApiResponse:
        return call(request)

    running = adrive(plan, acall)
    try:
        running.send(None)
    except StopIteration as stop:
        return stop.value
    running.close()
    raise RuntimeError("drive: the call suspended; use adrive in an event loop")


def api_roots(base_url: str) -> tuple[str, ...]:
    """Where the API may be for a base URL: every install serves it at ``<web root>/api/v1``.

    A URL ending in ``/api/v1`` is used as given; one ending in ``/public`` gets ``/api/v1``;
    one ending in ``/api`` gets ``/v1`` (or is a site under /api: ``/public/api/v1``); for a bare
    site URL it is ``<site>/public/api/v1`` (an install whose web root is the project
    folder, as the docs show) or ``<site>/api/v1`` (web root at ``public/``): the hook probes them
    in that order, so a bare URL that worked before discovery existed still costs one probe.
    """
    root = base_url.rstrip("/")
    if root.endswith(API_VERSION_PATH):
        return (root,)
    if root.endswith("/public"):
        return (root + API_VERSION_PATH,)
    if root.endswith("/public/api"):
        return (root + "/v1",)
    if root.endswith("/api"):  # the API path without its version, or a site served under /api
        return (root + "/v1", root + API_PREFIX)
    return (root + API_PREFIX, root + API_VERSION_PATH)


# -- building requests ---------------------------------------------------------------------


def build_create(resource: Resource, fields: Mapping[str, Any], generation: Generation | None = None) -> ApiRequest:
    """A create: the vocabulary validated (unless ``fields`` is already a checked ``Fields``), then
    spelt as ``generation`` spells it. The main collections (links, websites) need a generation."""
    values = fields if isinstance(fields, Fields) else validate_fields(resource, "create", fields)
    secrets = tuple(secret_values(resource, values))
    wire = _spelt(resource, values, generation)
    return ApiRequest("POST", f"/{resource.name}", form=tuple(encode_form(wire)), secrets=secrets)


def build_update(
    resource: Resource, record_id: Any, fields: Mapping[str, Any], generation: Generation | None = None
) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    values = fields if isinstance(fields, Fields) else validate_fields(resource, "update", fields)
    return replace(build_create(resource, values, generation), method="PUT", path=f"/{resource.name}/{record_id}")


def _spelt(resource: Resource, values: Mapping[str, Any], generation: Generation | None) -> dict[str, Any]:
    if generation is not None:
        return generation.to_wire(resource, dict(values))
    if resource.name in ("links", "websites"):  # never guess: the older names are ignored by newer installs
        raise ValueError(f"build a {resource.singular} request with the connected service's generation")
    return dict(values)


def build_get(resource: Resource, record_id: Any) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    return ApiRequest("GET", f"/{resource.name}/{record_id}")


def build_delete(resource: Resource, record_id: Any) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    return ApiRequest("DELETE", f"/{resource.name}/{record_id}")


def build_list(resource: Resource, filters: Mapping[str, Any], page: int = 1) -> ApiRequest:
    return _paged(f"/{resource.name}", validate_list_params(resource, filters), page)


def _paged(path: str, query: Mapping[str, Any], page: int) -> ApiRequest:
    pairs: FormPairs = [(name, str(value)) for name, value in query.items()]
    if page > 1:
        pairs.append(("page", str(page)))
    return ApiRequest("GET", path, params=tuple(pairs))


def build_account(root: str = "") -> ApiRequest:
    return ApiRequest("GET", "/account", root=root)


def build_stats(spec: StatsSpec, record_id: Any, query: Mapping[str, Any], page: int = 1) -> ApiRequest:
    """One page of a link's or website's statistics; ``query`` comes from ``validate_stats_query``."""
    record_id = validate_id(record_id, f"{spec.subject}_id")
    return _paged(f"/stats/{record_id}", query, page)


def stats_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """``{"value": ..., "count": int}``: the service sums counts in SQL, so they may come as strings."""
    count = row.get("count")
    try:
        count = int(float(count)) if isinstance(count, str) else int(count)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        pass
    return {**row, "value": row.get("value"), "count": count}


def natural_key_lookup(resource: Resource, key_value: str, page: int = 1) -> ApiRequest:
    """The listing request that finds a record by its alias (links) or domain (websites)."""
    return build_list(
        resource,
        {"search": key_value, "search_by": resource.natural_key, "per_page": MAX_PER_PAGE},
        page,
    )


def expired_links_request(alias: str | None = None, page: int = 1) -> ApiRequest:
    """One page of expired links, narrowed to one alias when given (what the sensor polls)."""
    filters: dict[str, Any] = {"status": int(LinkStatus.EXPIRED), "per_page": MAX_PER_PAGE}
    if alias:
        filters.update(search=alias, search_by="alias")
    return build_list(LINKS, filters, page)


# -- interpreting responses ----------------------------------------------------------------


def raise_for_status(
    request: ApiRequest,
    response: ApiResponse,
    secrets: tuple[str, ...] = (),
    *,
    redact_key: Callable[[str], str] | None = None,
) -> None:
    """Map an error status to its exception, with what the server said in any of its shapes.

    Real installs send ``{"message": "..."}`` or, for 422, ``{"message": {"field": ["..."]}}``;
    other Laravel apps and proxies send ``{"errors": {...}}``, HTML pages or nothing. The text names
    each field with its messages, is capped, never holds the key (``redact_key``, the auth object's
    ``redact``) or a password, and says what to check for the answers a setting causes.
    """
    status = response.status
    if 200 <= status < 300:
        return
    payload = _try_json(response.body)
    message, field_errors = _cleaned_details(request, response, payload, secrets, redact_key)
    common: dict[str, Any] = {**_where(request, response), "status": status}
    if status == 422:
        raise LinkstatsValidationError(message, errors=field_errors, **common)
    message, hint = _error_text(message, field_errors, payload, response)
    if status in (401, 403) or _is_login_redirect(response):
        raise LinkstatsAuthError(message, hint=hint, **common)
    if status == 404:
        message, hint, error_type = _not_found(request, response, payload, message, hint)
        raise error_type(message, hint=hint, **common)
    retry_after = parse_retry_after(response.headers)
    if status == 429:
        raise LinkstatsRateLimitError(message, retry_after=retry_after, **common)
    if status >= 500:
        raise LinkstatsServerError(message, retry_after=retry_after, **common)
    raise LinkstatsApiError(message, hint=hint, **common)


def request_url(root: str, request: ApiRequest) -> str:
    """The full URL of a request (its own root, else ``root``; path and query); the key is in a header, never here."""
    query = f"?{urlencode(list(request.params))}" if request.params else ""
    return f"{(request.root or root).rstrip('/')}{request.path}{query}"


def _cleaned_details(request: ApiRequest, response: ApiResponse, payload: Any, secrets: tuple, redact_key: Any):
    """(message, field errors) of an error answer, without the key, a password or a Bearer credential."""
    secrets = (*secrets, *request.secrets)
    redact_key = redact_key or response.redact_key

    def clean(text: str) -> str:
        text = redact(text, secrets)
        return redact_key(text) if redact_key else text

    message, field_errors = _error_details(payload, response.status, response)
    return clean(message), {name: [clean(m) for m in messages] for name, messages in field_errors.items()}


def _error_text(message: str, field_errors: dict[str, list[str]], payload: Any, response: ApiResponse) -> tuple:
    """The message (another status than 422 keeps its field errors in the text, capped) and its hint."""
    if field_errors:
        message = f"{message} ({describe_field_errors(field_errors)})"
    message = message[:MAX_ERROR_TEXT]
    hint = _hint(response.status, payload, response)
    if response.status == 401 or _is_login_redirect(response):  # the fix first: which key, where to get another
        return f"{hint}; the service answered {message!r}", ""
    return message, hint


def _connection(response: ApiResponse) -> str:  # as a message names it
    return f"connection {response.conn_id!r}" if response.conn_id else "the connection"


def _where(request: ApiRequest, response: ApiResponse) -> dict[str, Any]:
    return {"method": request.method, "path": request.path, "url": response.url, "conn_id": response.conn_id}


def _hint(status: int, payload: Any, response: ApiResponse) -> str:
    """What to check, for the answers a connection setting causes rather than the request."""
    conn = _connection(response)
    if status == 401 or _is_login_redirect(response):
        return (
            f"the API key in the password of {conn} was refused: copy the current key from the account's API page "
            "(regenerating the key there revokes the old one)"
        )
    if status == 403:
        return (
            "The account's plan has no API access, or the key lacks permission for this: check the plan's "
            f"features in the service, or use another account's key in {conn}"
        )
    if status == 404 and not isinstance(payload, dict):
        return _not_the_api_hint(response)
    location = response.headers.get("location", "")
    if 300 <= status < 400 and location:  # http:// to https://, or a moved install: redirects are not followed
        return f"The service redirects to {location[:200]}: write that address as the Base URL of {conn}"
    return ""


# Laravel's answer when a route's model binding (or firstOrFail) finds no record, e.g. phpShort 46+'s
# link create for an unknown domain_id, before any validation.
_MODEL_NOT_FOUND = re.compile(r"No query results for model \[(?:[\w\\]*\\)?(\w+)\]")
# A 404 that is the framework's, not the API's "no such record": a path outside the API. Real installs
# answer {"message": ""} (Laravel's JSON rendering of a route miss); other builds word it "The route
# ... could not be found."; a bare ASGI/WSGI app says "Not Found".
_ROUTE_MISS = re.compile(r"^(|The route .* could not be found\.?|Not Found)$", re.IGNORECASE)


def _not_found(request: ApiRequest, response: ApiResponse, payload: Any, message: str, hint: str) -> tuple:
    """A 404's message, hint and exception type (a route miss or no such record): the field whose id
    named no record, or the Base URL of a route miss."""
    said = payload.get("message", payload.get("detail")) if isinstance(payload, dict) else None
    model = _MODEL_NOT_FOUND.search(message)
    if model:
        name, values = _referencing_field(request, model.group(1))
        if name:
            one = len(values) == 1
            shown, which = (values[0], "is not") if one else ("[" + ", ".join(values) + "]", "holds one that is not")
            noun = model.group(1).lower()
            return (
                f"{name}={shown} {which} a {noun} of this account (the service answered {message!r})",
                f"Check {name}: give the id of a {noun} this account can use",
                LinkstatsNotFoundError,
            )
    if isinstance(said, str) and _ROUTE_MISS.match(said.strip()):
        root = _api_root(request, response)
        conn = _connection(response)
        answered = f"{said.strip()!r}" if said.strip() else "an empty message"
        return (
            f"the service has no route {request.path} under {root} (a 404 with {answered}: a path outside its API)",
            f"Check the Base URL of {conn}: the API usually answers at <site>/api/v1 or <site>/public/api/v1",
            LinkstatsRouteMissError,
        )
    return message, hint, LinkstatsNotFoundError


def _referencing_field(request: ApiRequest, model: str) -> tuple[str, list[str]]:
    """The form field of ``request`` that refers to a ``model`` by id (``domain_id``, ``pixel_ids``), and its values."""
    noun = re.sub(r"(?<!^)(?=[A-Z])", "_", model).lower()  # Domain -> domain, LinkPixel -> link_pixel
    for name in (f"{noun}_id", f"{noun}_ids"):
        values = [value for key, value in request.form if key in (name, f"{name}[]")]
        if values:
            return name, values
    return "", []


def _api_root(request: ApiRequest, response: ApiResponse) -> str:
    """The API root a request went to: its full URL without the request's path and query."""
    url = response.url.split("?", 1)[0]
    return url[: -len(request.path)] if request.path and url.endswith(request.path) else (request.root or url)


def _not_the_api_hint(response: ApiResponse) -> str:
    """An HTML page where the API answers JSON: the Base URL points at the site, not at its API."""
    conn = _connection(response)
    return (
        f"This URL does not answer as the Linkstats API (a {_describe_body(response)}, not JSON): check "
        f"the Base URL of {conn}; the API usually answers at <site>/api/v1 or <site>/public/api/v1"
    )


def parse_record(request: ApiRequest, response: ApiResponse, generation: Generation | None = None) -> dict[str, Any]:
    """One record: ``{"data": {...}}`` or the bare object; an empty 2xx body gives ``{}``."""
    payload = _json_body(request, response, allow_empty=True)
    if payload is None:
        return {}
    resource = resource_of(request)
    if isinstance(payload, dict):
        if isinstance(payload.get("data"), dict):
            return normalize(resource, payload["data"], generation)
        if "data" not in payload:
            return normalize(resource, payload, generation)
    raise _shape_error(request, response, "a record object")


def parse_page(request: ApiRequest, response: ApiResponse, per_page: int, generation: Generation | None = None) -> Page:
    """One page of a listing in any shape the service may use.

    Accepted: the Laravel envelope (``data`` + ``meta`` and/or ``links``), ``data`` alone, or a
    bare list. Whether another page follows comes from ``meta`` (current/last page), then
    ``links.next``, and failing both from the page being full.
    """
    items, told, links = _page_parts(request, response)
    resource = resource_of(request)
    items = [normalize(resource, item, generation) for item in items]
    return Page(
        items=items,
        has_next=bool(items) and _has_next(told, links, len(items), per_page),
        last_page=_at_least(1, told.get("last_page")),
        total=_at_least(0, told.get("total")),
    )


def _page_parts(request: ApiRequest, response: ApiResponse) -> tuple[list[dict[str, Any]], dict[str, Any], Any]:
    """A listing's records, what its ``meta`` told (``{}`` when nothing) and its ``links``, in any shape."""
    payload = _json_body(request, response, allow_empty=False)
    if isinstance(payload, list):
        items, meta, links = payload, None, None
    elif isinstance(payload, dict) and isinstance(payload.get("data"), list):
        items, meta, links = payload["data"], payload.get("meta"), payload.get("links")
        if meta is None and "last_page" in payload:  # a bare Laravel paginator (the stats endpoints)
            meta = payload
    else:
        raise _shape_error(request, response, "a list or an object with a 'data' list")
    if not all(isinstance(item, dict) for item in items):
        raise _shape_error(request, response, "a list of record objects")
    return items, meta if isinstance(meta, dict) else {}, links


def _has_next(told: dict[str, Any], links: Any, count: int, per_page: int) -> bool:
    """Whether another page follows: from ``meta``'s current and last page, then ``links.next``, then a full page."""
    if _is_int(told.get("current_page")) and _is_int(told.get("last_page")):
        return told["current_page"] < told["last_page"]
    if isinstance(links, dict) and "next" in links:
        return bool(links["next"])
    return count >= per_page


def _at_least(minimum: int, value: Any) -> int | None:  # a whole number of at least ``minimum``, else None
    return value if _is_int(value) and value >= minimum else None


def resource_of(request: ApiRequest) -> Resource | None:
    """The resource a request is about, from its path (``/links/5`` -> links)."""
    return RESOURCES.get(request.path.strip("/").split("/", 1)[0])


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Remove secrets, and anything shaped like a Bearer credential, from text a server sent."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _BEARER.sub(r"\1***", text)


# -- helpers ---------------------------------------------------------------------------------

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _try_json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _json_body(request: ApiRequest, response: ApiResponse, *, allow_empty: bool) -> Any:
    if not response.body.strip():
        if allow_empty:
            return None
        raise LinkstatsResponseError(
            "empty body where a listing was expected", status=response.status, **_where(request, response)
        )
    try:
        return json.loads(response.body)
    except ValueError:
        raise LinkstatsResponseError(
            f"body is not valid JSON ({len(response.body)} bytes, content-type "
            f"{response.headers.get('content-type', 'unknown')!r})",
            status=response.status,
            hint=_not_the_api_hint(response) if _TITLE.search(response.body[:20000]) else "",
            **_where(request, response),
        ) from None


def _shape_error(request: ApiRequest, response: ApiResponse, expected: str) -> LinkstatsResponseError:
    return LinkstatsResponseError(
        f"unexpected JSON shape, expected {expected}",
        status=response.status,
        **_where(request, response),
    )


def _error_details(payload: Any, status: int, response: ApiResponse) -> tuple[str, dict[str, list[str]]]:
    """(message, field errors) from an error answer in whatever shape it came."""
    told = payload if isinstance(payload, dict) else {}
    field_errors = {**_field_errors(told.get("message")), **_field_errors(told.get("errors"))}
    for key in ("message", "error", "detail"):
        value = told.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:MAX_ERROR_MESSAGE], field_errors
    if field_errors:
        return "the service rejected " + ", ".join(field_errors), field_errors
    reason = _LOGIN_REDIRECT if _is_login_redirect(response) else _REASONS.get(status, "error")
    if not isinstance(payload, dict):
        reason = f"{reason} ({_describe_body(response)})"
    return reason, field_errors


def _field_errors(value: Any) -> dict[str, list[str]]:
    """``{"field": ["msg", ...]}`` (or a single message string per field), capped."""
    if not isinstance(value, dict):
        return {}
    clean: dict[str, list[str]] = {}
    for name, messages in value.items():
        if isinstance(messages, str):
            messages = [messages]
        if isinstance(messages, list):
            clean[str(name)] = [str(m)[:MAX_ERROR_MESSAGE] for m in messages if str(m).strip()]
    return clean


_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def _describe_body(response: ApiResponse) -> str:
    """An error body that is not JSON: what kind, and an HTML page's title."""
    body = response.body
    if not body.strip():
        return "empty body"
    title = _TITLE.search(body[:20000])
    if title:
        text = " ".join(title.group(1).decode("utf-8", "replace").split())[:120]
        return f"HTML page {text!r}, {len(body)} bytes"
    return f"non-JSON body of {len(body)} bytes"


def _is_login_redirect(response: ApiResponse) -> bool:
    """Without ``Accept: application/json`` real installs answer a bad key with 302 to /login."""
    location = response.headers.get("location", "")
    return 300 <= response.status < 400 and location.rstrip("/").endswith("/login")


_LOGIN_REDIRECT = "redirected to the login page (the API key was not accepted)"
# What an error answer without a message of its own is called: the standard phrase, but for three.
_STANDARD = (301, 307, 308, 400, 403, 404, 405, 409, 429, 500, 502, 503, 504)
_REASONS = {
    **{status: HTTPStatus(status).phrase.lower() for status in _STANDARD},
    302: "found (a redirect)",
    401: "unauthenticated",
    422: "unprocessable entity",  # Python 3.13 calls it "unprocessable content"
}
