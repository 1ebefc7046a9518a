"""The HTTP face of the emulator: the ten API endpoints, the short-link redirect, the admin routes.

Handlers are plain endpoints on the FastAPI app (``add_route``: Request in, Response out), so the
hot path does no dependency solving or model validation; bodies are parsed by ``forms`` with the
client's own decoder.
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException

from airflow_provider_linkstats.client.contract import API_PREFIX, RESOURCES, Resource
from airflow_provider_linkstats.emulator.admin import add_admin_routes
from airflow_provider_linkstats.emulator.errors import ApiError
from airflow_provider_linkstats.emulator.forms import clean_list_params, parse_form
from airflow_provider_linkstats.emulator.links import Visitor
from airflow_provider_linkstats.emulator.middleware import FaultsAndStats
from airflow_provider_linkstats.emulator.state import EmulatorState

SERVICES = ("links", "analytics")


def build_app(state: EmulatorState, api_keys: Iterable[str], services: Iterable[str] = SERVICES) -> Any:
    """An ASGI app serving ``services`` (both by default: one port for everything)."""
    services = tuple(services)
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)  # /docs would shadow an alias
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, _http_error)  # type: ignore[arg-type]
    auth = _BearerAuth(api_keys)
    for resource in RESOURCES.values():  # first: routes are matched in order, and these are the hot ones
        if resource.service in services:
            _add_resource_routes(app, resource, state, auth)
    add_admin_routes(app, state)
    if "links" in services:
        _add_redirect(app, state)  # last: it catches every other GET path
    return FaultsAndStats(app, state.faults, state.stats)


class _BearerAuth:
    def __init__(self, api_keys: Iterable[str]) -> None:
        self._keys = tuple(key.encode() for key in api_keys)
        if not self._keys or not all(self._keys):
            raise ValueError("the emulator needs at least one non-empty API key")

    def check(self, request: Request) -> None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        given = token.strip().encode()
        # Compare with every key (no early exit), and never say which part was wrong.
        valid = [hmac.compare_digest(given, key) for key in self._keys]
        if scheme.lower() != "bearer" or not any(valid):
            raise ApiError(401, "Unauthenticated.")


def _add_resource_routes(app: FastAPI, resource: Resource, state: EmulatorState, auth: _BearerAuth) -> None:
    store = state.store

    async def list_records(request: Request) -> JSONResponse:
        auth.check(request)
        params, page = clean_list_params(resource, request.query_params)
        items, total = store.page(resource, params, page)
        return JSONResponse(_envelope(request, items, total, page, params["per_page"]))

    async def create(request: Request) -> JSONResponse:
        auth.check(request)
        record = store.create(resource, parse_form(await request.body()))
        return JSONResponse({"data": record}, status_code=201)

    async def read(request: Request) -> JSONResponse:
        auth.check(request)
        return JSONResponse({"data": store.get(resource, request.path_params["record_id"])})

    async def update(request: Request) -> JSONResponse:
        auth.check(request)
        record = store.update(resource, request.path_params["record_id"], parse_form(await request.body()))
        return JSONResponse({"data": record})

    async def delete(request: Request) -> JSONResponse:
        auth.check(request)
        record_id = request.path_params["record_id"]
        store.delete(resource, record_id)
        return JSONResponse({"message": f"{resource.singular.capitalize()} {record_id} deleted."})

    one = resource.path + "/{record_id}"
    app.add_route(resource.path, list_records, methods=["GET"])
    app.add_route(resource.path, create, methods=["POST"])
    app.add_route(one, read, methods=["GET"])
    app.add_route(one, update, methods=["PUT"])
    app.add_route(one, delete, methods=["DELETE"])


def _add_redirect(app: FastAPI, state: EmulatorState) -> None:
    async def follow(request: Request) -> Any:
        if request.url.path.startswith(API_PREFIX):
            raise HTTPException(404)  # an unknown API route, not an alias
        visitor = Visitor.from_headers(request.headers)
        visit = state.store.visit(request.path_params["alias"], visitor, request.query_params.get("password"))
        if visit.location is not None:
            return RedirectResponse(visit.location, status_code=visit.status)
        return JSONResponse({"message": visit.message}, status_code=visit.status)

    app.add_route("/{alias:path}", follow, methods=["GET"])


def _envelope(request: Request, items: list, total: int, page: int, per_page: int) -> dict:
    """Laravel's paginated resource shape; page links keep the request's other parameters."""
    last = max(1, math.ceil(total / per_page))

    def page_url(number: int) -> str:
        return str(request.url.include_query_params(page=number))

    first_index = (page - 1) * per_page
    return {
        "data": items,
        "links": {
            "first": page_url(1),
            "last": page_url(last),
            "prev": page_url(page - 1) if page > 1 else None,
            "next": page_url(page + 1) if page < last else None,
        },
        "meta": {
            "current_page": page,
            "last_page": last,
            "per_page": per_page,
            "total": total,
            "from": first_index + 1 if items else None,
            "to": first_index + len(items) if items else None,
        },
    }


async def _api_error(request: Request, error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status)


async def _http_error(request: Request, error: HTTPException) -> JSONResponse:
    """Unknown routes and methods answer in the API's JSON error shape too."""
    return JSONResponse({"message": str(error.detail)}, status_code=error.status_code, headers=error.headers)
