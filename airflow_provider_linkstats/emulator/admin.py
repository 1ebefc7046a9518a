"""Control over HTTP, for a demo or a test in another process: clock, faults, statistics, reset.

Under ``/__emulator__``, outside the API prefix, with no API key: the emulator is a local tool
(bind it to 127.0.0.1) and these routes are what a script uses to drive it. Each mirrors the
Python method of the same name and takes its keyword arguments as a JSON object:

- ``/clock``, ``/faults/...``, ``/reset``: time, injected failures, a clean slate;
- ``/stats``: requests by endpoint (method and route template) and status;
- ``/rate_limit``: ``{"limit": 20, "window": 2}`` (per client IP; ``key_limit`` and
  ``analytics_limit`` default to twice it and to it), ``{"limit": null}`` turns limits off;
- ``/accounts``: the accounts (one per API key); ``POST /accounts/{id}`` changes one, e.g.
  ``{"api_access": false}`` (every API call then answers 403), ``{"timezone": "Europe/Paris"}`` or
  ``{"features": {"link_stats": false}}``;
- ``/versions``: the generations served, ``{"links": "49", "analytics": "31"}``; a POST of the same
  shape switches them and drops every record (the generations' link rows differ);
- ``POST /links``: many links at once, alike but for their alias, for tests at scale:
  ``{"count": 100000, "alias_prefix": "old-", "fields": {"expiration_clicks": 1, "clicks": 1}}``
  (``fields`` as ``Store.add_link`` takes them; ``user_id`` 1 unless given); answers
  ``{"count", "first_id", "last_id"}``. Their ``created_at`` is the clock's now;
- ``POST /links/reset_counters``: links' ``clicks`` counters back to 0, as phpShort's v46 upgrade
  did: ``{"link_ids": [3, 4], "statistics": false}`` (default every link; ``statistics: true`` drops
  their recorded clicks too); answers ``{"count"}``;
- ``POST /traffic``: clicks and pageviews at chosen instants, without a redirect or a beacon each:
  ``{"clicks": [{"link_id": 3, "at": "2030-01-01T23:59:00-05:00", "count": 40, "country": "US",
  "referrer": "news.example"}], "pageviews": [{"website_id": 1, "at": "...", "count": 5, "page":
  "/?utm_campaign=spring", "referrer": "https://search.example/"}]}`` (``Store.record_traffic``:
  all or none); answers ``{"clicks": n, "pageviews": m}``.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from airflow_provider_linkstats.emulator.errors import ApiError, ValidationFailed
from airflow_provider_linkstats.emulator.state import EmulatorState

ADMIN_PREFIX = "/__emulator__"


def add_admin_routes(app: FastAPI, state: EmulatorState) -> None:
    clock, faults, stats, limiter, store = state.clock, state.faults, state.stats, state.limiter, state.store

    def clock_view() -> JSONResponse:
        return JSONResponse({"now": clock.now().isoformat(), "frozen": clock.frozen})

    async def get_clock(request: Request) -> JSONResponse:
        return clock_view()

    async def post_clock(request: Request) -> JSONResponse:
        """{"now": ISO-8601 with offset, "freeze": bool} | {"advance": seconds} | {"reset": true}"""
        body = await _json(request)
        if body.get("reset"):
            clock.reset()
        elif "advance" in body:
            _call(clock.advance, seconds=body["advance"])
        elif "now" in body:
            _call(clock.set, _datetime(body["now"]), freeze=bool(body.get("freeze", False)))
        else:
            raise _bad('Send {"now": ...}, {"advance": seconds} or {"reset": true}.')
        return clock_view()

    async def get_faults(request: Request) -> JSONResponse:
        return JSONResponse(faults.describe())

    async def fail_next(request: Request) -> JSONResponse:
        _call(faults.fail_next, **await _json(request))
        return JSONResponse(faults.describe())

    async def drop_next(request: Request) -> JSONResponse:
        _call(faults.drop_next, **await _json(request))
        return JSONResponse(faults.describe())

    async def after_page(request: Request) -> JSONResponse:
        _call(faults.after_page, **await _json(request))
        return JSONResponse(faults.describe())

    async def latency(request: Request) -> JSONResponse:
        _call(faults.set_latency, **await _json(request))
        return JSONResponse(faults.describe())

    async def clear_faults(request: Request) -> JSONResponse:
        faults.clear()
        return JSONResponse(faults.describe())

    async def get_stats(request: Request) -> JSONResponse:
        """?method=&path_prefix=&status= narrow ``count``; ``endpoints`` counts by route and status;
        ``requests`` lists every API request."""
        query = request.query_params
        status = query.get("status")
        return JSONResponse(
            {
                "count": stats.count(query.get("method"), query.get("path_prefix"), int(status) if status else None),
                "endpoints": stats.endpoints(),
                "connections": stats.connections(),
                "requests": stats.requests(),
            }
        )

    async def reset_stats(request: Request) -> JSONResponse:
        stats.reset()
        return JSONResponse({"message": "Statistics reset."})

    async def get_rate_limit(request: Request) -> JSONResponse:
        return JSONResponse(limiter.limits.describe())

    async def post_rate_limit(request: Request) -> JSONResponse:
        return JSONResponse(_call(limiter.configure, **await _json(request)).describe())

    async def get_accounts(request: Request) -> JSONResponse:
        return JSONResponse({"data": store.users()})

    async def post_account(request: Request) -> JSONResponse:
        user_id = request.path_params["user_id"]
        return JSONResponse({"data": _call(store.configure_account, user_id, **await _json(request))})

    async def get_versions(request: Request) -> JSONResponse:
        return JSONResponse(store.versions())

    async def post_versions(request: Request) -> JSONResponse:
        return JSONResponse(_call(store.set_versions, **await _json(request)))

    async def seed_links(request: Request) -> JSONResponse:
        body = await _json(request)
        fields = body.pop("fields", None) or {}
        if not isinstance(fields, dict):
            raise _bad("fields must be a JSON object of link fields.")
        return JSONResponse(_call(store.seed_links, **body, **fields))

    async def reset_counters(request: Request) -> JSONResponse:
        body = await _json(request)
        if set(body) - {"link_ids", "statistics"} or not isinstance(body.get("statistics", False), bool):
            raise _bad('Send {"link_ids": [3, 4] (default: every link), "statistics": false}.')
        return JSONResponse(_call(store.reset_counters, body.get("link_ids"), body.get("statistics", False)))

    async def record_traffic(request: Request) -> JSONResponse:
        body = await _json(request)
        unknown = set(body) - {"clicks", "pageviews"}
        if unknown or not all(isinstance(body.get(k, []), list) for k in ("clicks", "pageviews")):
            raise _bad('Send {"clicks": [{"link_id", "at", "count", ...}], "pageviews": [{"website_id", "at", ...}]}.')
        if not all(isinstance(item, dict) for k in ("clicks", "pageviews") for item in body.get(k, [])):
            raise _bad("Each click and pageview must be a JSON object of its arguments.")
        return JSONResponse(_call(store.record_traffic, body.get("clicks", []), body.get("pageviews", [])))

    async def reset(request: Request) -> JSONResponse:
        state.reset()
        return JSONResponse({"message": "Emulator reset: store, clock, faults and statistics."})

    routes = [
        ("/clock", get_clock, "GET"),
        ("/clock", post_clock, "POST"),
        ("/faults", get_faults, "GET"),
        ("/faults", clear_faults, "DELETE"),
        ("/faults/fail_next", fail_next, "POST"),
        ("/faults/drop_next", drop_next, "POST"),
        ("/faults/latency", latency, "POST"),
        ("/faults/after_page", after_page, "POST"),
        ("/stats", get_stats, "GET"),
        ("/stats", reset_stats, "DELETE"),
        ("/reset", reset, "POST"),
        ("/rate_limit", get_rate_limit, "GET"),
        ("/rate_limit", post_rate_limit, "POST"),
        ("/accounts", get_accounts, "GET"),
        ("/accounts/{user_id}", post_account, "POST"),
        ("/versions", get_versions, "GET"),
        ("/versions", post_versions, "POST"),
        ("/links", seed_links, "POST"),
        ("/links/reset_counters", reset_counters, "POST"),
        ("/traffic", record_traffic, "POST"),
    ]
    for path, endpoint, method in routes:
        app.add_route(ADMIN_PREFIX + path, endpoint, methods=[method])


async def _json(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise _bad("The body must be a JSON object.", 400) from None
    if not isinstance(body, dict):
        raise _bad("The body must be a JSON object.", 400)
    return body


def _call(control: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Run a control method; a bad argument is the caller's 422, not the emulator's 500."""
    try:
        return control(*args, **kwargs)
    except ValidationFailed as error:  # a seeded record the API would refuse: its field errors, as JSON
        raise ApiError(422, {"message": str(error), "errors": error.errors}) from None
    except (TypeError, ValueError) as error:
        raise _bad(str(error)) from None


def _datetime(value: Any) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise _bad(f"now must be an ISO-8601 date-time with an offset, got {value!r}") from None
    if moment.utcoffset() is None:
        raise _bad(f"now must carry a UTC offset, got {value!r}")
    return moment


def _bad(message: str, status: int = 422) -> ApiError:
    return ApiError(status, {"message": message})
