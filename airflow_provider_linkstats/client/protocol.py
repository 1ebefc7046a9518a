"""Sans-I/O core: what to send and what an answer means.

Everything here is a pure function of its arguments. The sync transport (requests), the async
one (httpx, used by the trigger) and the emulator's tests all share it, so the sensor and its
trigger cannot drift apart.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider_linkstats.client.contract import API_PREFIX, LINKS, MAX_PER_PAGE, RESOURCES, LinkStatus, Resource
from airflow_provider_linkstats.client.encoding import FormPairs, encode_form
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsRateLimitError,
    LinkstatsResponseError,
    LinkstatsServerError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.validation import (
    secret_values,
    validate_fields,
    validate_id,
    validate_list_params,
)

MAX_ERROR_MESSAGE = 300  # characters of a server's message kept in an exception


@dataclass(frozen=True)
class ApiRequest:
    """One HTTP request, relative to the service's API root."""

    method: str
    path: str  # starts with "/", e.g. "/links/5"
    params: tuple[tuple[str, str], ...] = ()
    form: tuple[tuple[str, str], ...] = ()
    # Password values in ``form``: redacted from any error text the server sends back.
    secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @property
    def idempotent(self) -> bool:
        """Whether sending it twice has the effect of sending it once (so a lost answer may be retried)."""
        return self.method != "POST"

    def describe(self) -> str:
        """For logs and errors: method and path only, never the body (it may hold passwords)."""
        return f"{self.method} {self.path}"


@dataclass(frozen=True)
class ApiResponse:
    """What a transport hands back: status, headers (lower-case names) and raw body."""

    status: int
    headers: Mapping[str, str]
    body: bytes


@dataclass
class Page:
    items: list[dict[str, Any]]
    has_next: bool
    total: int | None = None


def api_root(base_url: str) -> str:
    """The base URL with ``/public/api/v1`` appended unless it already ends with it."""
    root = base_url.rstrip("/")
    return root if root.endswith(API_PREFIX) else root + API_PREFIX


# -- building requests ---------------------------------------------------------------------


def build_create(resource: Resource, fields: Mapping[str, Any]) -> ApiRequest:
    values = validate_fields(resource, "create", fields)
    secrets = tuple(secret_values(resource, values))
    return ApiRequest("POST", f"/{resource.name}", form=tuple(encode_form(values)), secrets=secrets)


def build_update(resource: Resource, record_id: Any, fields: Mapping[str, Any]) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    values = validate_fields(resource, "update", fields)
    secrets = tuple(secret_values(resource, values))
    return ApiRequest("PUT", f"/{resource.name}/{record_id}", form=tuple(encode_form(values)), secrets=secrets)


def build_get(resource: Resource, record_id: Any) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    return ApiRequest("GET", f"/{resource.name}/{record_id}")


def build_delete(resource: Resource, record_id: Any) -> ApiRequest:
    record_id = validate_id(record_id, f"{resource.singular}_id")
    return ApiRequest("DELETE", f"/{resource.name}/{record_id}")


def build_list(resource: Resource, filters: Mapping[str, Any], page: int = 1) -> ApiRequest:
    params = validate_list_params(resource, filters)
    pairs: FormPairs = [(name, str(value)) for name, value in params.items()]
    if page > 1:
        pairs.append(("page", str(page)))
    return ApiRequest("GET", f"/{resource.name}", params=tuple(pairs))


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


def raise_for_status(request: ApiRequest, response: ApiResponse, secrets: tuple[str, ...] = ()) -> None:
    """Map an error status to its exception, with the server's message when the body is JSON."""
    status = response.status
    if 200 <= status < 300:
        return
    secrets = (*secrets, *request.secrets)
    payload = _try_json(response.body)
    message = _error_message(payload, status, response.body)
    message = redact(message, secrets)
    common: dict[str, Any] = {"status": status, "method": request.method, "path": request.path}
    if status in (401, 403):
        raise LinkstatsAuthError(message, **common)
    if status == 404:
        raise LinkstatsNotFoundError(message, **common)
    if status == 422:
        errors = payload.get("errors") if isinstance(payload, dict) else None
        clean = _field_errors(errors, secrets)
        raise LinkstatsValidationError(message, errors=clean, **common)
    if status == 429:
        raise LinkstatsRateLimitError(message, retry_after=parse_retry_after(response.headers), **common)
    if status >= 500:
        error = LinkstatsServerError(message, **common)
        error.retry_after = parse_retry_after(response.headers)  # type: ignore[attr-defined]
        raise error
    raise LinkstatsApiError(message, **common)


def parse_record(request: ApiRequest, response: ApiResponse) -> dict[str, Any]:
    """One record: ``{"data": {...}}`` or the bare object; an empty 2xx body gives ``{}``."""
    payload = _json_body(request, response, allow_empty=True)
    if payload is None:
        return {}
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        return _without_secrets(payload["data"])
    if isinstance(payload, dict) and "data" not in payload:
        return _without_secrets(payload)
    raise _shape_error(request, response, "a record object")


def parse_page(request: ApiRequest, response: ApiResponse, per_page: int) -> Page:
    """One page of a listing in any shape the service may use.

    Accepted: the Laravel envelope (``data`` + ``meta`` and/or ``links``), ``data`` alone, or a
    bare list. Whether another page follows comes from ``meta`` (current/last page), then
    ``links.next``, and failing both from the page being full.
    """
    payload = _json_body(request, response, allow_empty=False)
    if isinstance(payload, list):
        items, meta, links = payload, None, None
    elif isinstance(payload, dict) and isinstance(payload.get("data"), list):
        items, meta, links = payload["data"], payload.get("meta"), payload.get("links")
    else:
        raise _shape_error(request, response, "a list or an object with a 'data' list")
    if not all(isinstance(item, dict) for item in items):
        raise _shape_error(request, response, "a list of record objects")
    items = [_without_secrets(item) for item in items]
    total = None
    if isinstance(meta, dict) and _is_int(meta.get("current_page")) and _is_int(meta.get("last_page")):
        has_next = meta["current_page"] < meta["last_page"]
        total = meta.get("total") if _is_int(meta.get("total")) else None
    elif isinstance(links, dict) and "next" in links:
        has_next = bool(links["next"])
    else:
        has_next = len(items) >= per_page
    return Page(items=items, has_next=has_next and bool(items), total=total)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header given in seconds or as an HTTP date."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def pages_needed(count: int) -> int:
    return max(1, math.ceil(count / MAX_PER_PAGE))


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """Remove secrets, and anything shaped like a Bearer credential, from text a server sent."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _BEARER.sub(r"\1***", text)


# -- helpers ---------------------------------------------------------------------------------

# Passwords are write-only; should a service echo one in a record, it must not reach XCom.
_SECRET_FIELDS = frozenset(spec.name for r in RESOURCES.values() for spec in r.fields if spec.secret)


def _without_secrets(record: dict[str, Any]) -> dict[str, Any]:
    if _SECRET_FIELDS.isdisjoint(record):
        return record
    return {name: value for name, value in record.items() if name not in _SECRET_FIELDS}


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
            "empty body where a listing was expected", status=response.status, method=request.method, path=request.path
        )
    try:
        return json.loads(response.body)
    except ValueError:
        raise LinkstatsResponseError(
            f"body is not valid JSON ({len(response.body)} bytes, content-type "
            f"{response.headers.get('content-type', 'unknown')!r})",
            status=response.status,
            method=request.method,
            path=request.path,
        ) from None


def _shape_error(request: ApiRequest, response: ApiResponse, expected: str) -> LinkstatsResponseError:
    return LinkstatsResponseError(
        f"unexpected JSON shape, expected {expected}",
        status=response.status,
        method=request.method,
        path=request.path,
    )


def _error_message(payload: Any, status: int, body: bytes) -> str:
    if isinstance(payload, dict):
        for key in ("message", "error", "detail"):
            value = payload.get(key)
            if isinstance(value, str) and value:
                return value[:MAX_ERROR_MESSAGE]
    kind = "empty body" if not body.strip() else f"non-JSON body of {len(body)} bytes"
    return f"{_REASONS.get(status, 'error')} ({kind})"


def _field_errors(errors: Any, secrets: tuple[str, ...]) -> dict[str, list[str]]:
    if not isinstance(errors, dict):
        return {}
    clean: dict[str, list[str]] = {}
    for name, messages in errors.items():
        if isinstance(messages, str):
            messages = [messages]
        if isinstance(messages, list):
            clean[str(name)] = [redact(str(m), secrets)[:MAX_ERROR_MESSAGE] for m in messages]
    return clean


_REASONS = {
    400: "bad request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not found",
    405: "method not allowed",
    409: "conflict",
    422: "unprocessable entity",
    429: "too many requests",
    500: "internal server error",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
}
