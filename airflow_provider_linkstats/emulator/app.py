"""The HTTP face of the emulator: both services' API routes, the short-link redirect, admin.

Every API route is served under ``/api/v1`` and ``/public/api/v1``. A request passes what a
real install puts in front of its controllers, in the same order: the per-IP throttle
(``middleware.ClientRateLimit``), authentication (401, or a 302 to /login for a client that does
not ask for JSON), phpShort's plan check (403), then phpShort's per-user throttle.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from airflow_provider_linkstats.emulator import formdata, paths, spec, traffic
from airflow_provider_linkstats.emulator.admin import add_admin_routes
from airflow_provider_linkstats.emulator.errors import ApiError, forbidden, not_found
from airflow_provider_linkstats.emulator.links import Visitor
from airflow_provider_linkstats.emulator.listing import read_query
from airflow_provider_linkstats.emulator.middleware import ClientRateLimit, FaultsAndStats, ServerDate, wants_json
from airflow_provider_linkstats.emulator.state import EmulatorState

SERVICES = ("links", "analytics")
# The CRUD resources of each service (apiResource routes: index, store, show, update, destroy).
RESOURCES = {"links": ("links", "domains", "spaces", "pixels"), "analytics": ("websites",)}

Handler = Callable[[Request], Awaitable[Response]]


class LoginRedirect(Exception):
    """A bad key from a client that did not ask for JSON: Laravel redirects it to the login page."""


def build_app(state: EmulatorState, services: Iterable[str] = SERVICES, *, shared: bool = True) -> Any:
    """An ASGI app serving ``services``. On a shared port the analytics service is also mounted
    under /analytics, where its /account and /stats cannot clash with the links service's."""
    services = tuple(services)
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)  # /docs would shadow an alias
    app.add_exception_handler(ApiError, _api_error)  # type: ignore[arg-type]
    app.add_exception_handler(LoginRedirect, _login_redirect)  # type: ignore[arg-type]
    api = _Api(state)
    mounts: list[tuple[str, str]] = []  # (path prefix, service)
    if "links" in services:
        mounts.append(("", "links"))
    if "analytics" in services:
        mounts.append((spec.ANALYTICS_MOUNT if shared and "links" in services else "", "analytics"))
        if shared and "links" in services:
            mounts.append(("", "websites-only"))  # websites need no prefix: no clash
    for mount, service in mounts:
        for root in spec.API_ROOTS:
            api.add_service_routes(app, mount + root, service)
        if service != "links":
            api.add_tracking(app, mount + spec.TRACKING_PATH)
    add_admin_routes(app, state)
    for mount, service in mounts:
        for root in spec.API_ROOTS:
            api.add_fallback(app, mount + root, service)
    if "links" in services:
        _add_redirect(app, state)  # GET /{alias}: every single-segment path is the short-link route
    app.add_route("/{rest:path}", _route_miss, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
    faulty = FaultsAndStats(ClientRateLimit(app, state.limiter), state.faults, state.stats, state.store, state.clock)
    return ServerDate(faulty, state.clock)


class _Api:
    def __init__(self, state: EmulatorState) -> None:
        self.state = state
        self.store = state.store

    # -- the gate in front of every controller -------------------------------------------------

    def authenticate(self, request: Request, service: str) -> dict:
        user = self.store.user_for_key(_token(request))
        if user is None:
            if wants_json(request.scope):
                raise ApiError(401, {"message": spec.UNAUTHENTICATED})
            raise LoginRedirect()
        # phpShort's api.guard; phpAnalytics wires its own from 3.5 (31 here; 3.x means 3.3's code).
        if service == "links" or spec.ANALYTICS[self.store.analytics_version].api_guard:
            if not user["plan"]["features"]["api"]:
                raise forbidden()
        if service == "links":
            verdict = self.state.limiter.hit(("links", "key", user["id"]), self.state.limiter.limits.per_key)
            if verdict is not None and not verdict.allowed:
                raise ApiError(429, {"message": spec.TOO_MANY}, verdict.headers())
        return user

    # -- routes ---------------------------------------------------------------------------------

    def add_service_routes(self, app: FastAPI, root: str, service: str) -> None:
        tables = RESOURCES["analytics"] if service == "websites-only" else RESOURCES[service]
        gate = "analytics" if service == "websites-only" else service
        for table in tables:
            self._add_crud(app, root, table, gate)
        if service != "websites-only":
            self._add_account_and_stats(app, root, service)

    def _add_account_and_stats(self, app: FastAPI, root: str, service: str) -> None:
        store = self.store
        table = "links" if service == "links" else "websites"

        async def account(request: Request) -> Response:
            user = self.authenticate(request, service)
            return JSONResponse({"data": store.account(user, service), "status": 200})

        async def stats(request: Request) -> Response:
            user = self.authenticate(request, service)
            record_id = request.path_params["record_id"]
            version = store.links_version if service == "links" else store.analytics_version
            # The form request runs before the controller: a bad name is a 422 even for record 0.
            # The account's zone as it is now: a change of zone moves phpShort 46+'s buckets at once.
            query = traffic.StatsQuery(
                formdata.decode(request.url.query), version, service, user["timezone"], store.clock.now()
            )
            store.read(table, user, record_id)  # 404 for another account's or a missing record
            if service == "links":
                clicks = query.in_period(store.clicks_of(user, record_id))
                if query.name == "click":  # v49: a plain list, bucketed by the span of from/to
                    return JSONResponse({"data": query.click_series(clicks), "status": 200})
                counts = traffic.link_rows(query.name, clicks, version)
            else:
                rows = query.in_period(store.events_of(user, record_id))
                counts = traffic.website_rows(query.name, rows)
            return JSONResponse(query.answer(counts, _path_url(request)))

        app.add_route(f"{root}/account", account, methods=["GET"])
        app.add_route(root + "/stats/{record_id}", stats, methods=["GET"])

    def add_tracking(self, app: FastAPI, path: str) -> None:
        """The tracking script's beacon: no API key, the page URL names the website."""
        store = self.store

        async def event(request: Request) -> Response:
            # Always HTTP 200 with a bare number as an HTML body: "404" for a page of no tracked
            # website, "403" for an excluded visitor, "200" when recorded.
            data = await _form(request)
            page = data.get("page")
            host = (urlsplit(page).hostname or "") if isinstance(page, str) else ""
            website = store.website_for_page(host) if host else None
            if website is None:
                return HTMLResponse("404")
            client = (request.client.host if request.client else "") or ""
            answer, recorded = traffic.event_from_request(data, request.headers, client, website, store.clock.now())
            if recorded is not None:
                store.record_event(recorded)
            return HTMLResponse(answer)

        app.add_route(path, event, methods=["POST"])

    def _add_crud(self, app: FastAPI, root: str, table: str, service: str) -> None:
        store = self.store

        async def index(request: Request) -> Response:
            user = self.authenticate(request, service)
            query = formdata.decode(request.url.query)
            body = store.listing(table, user, read_query(store.listing_rules(table), query), query, _path_url(request))
            return JSONResponse(body)

        async def create(request: Request) -> Response:
            user = self.authenticate(request, service)
            record, _ = store.create(table, user, await _form(request))
            return JSONResponse({"data": record, "status": 200}, status_code=201)

        async def show(request: Request) -> Response:
            user = self.authenticate(request, service)
            return JSONResponse({"data": store.read(table, user, request.path_params["record_id"]), "status": 200})

        async def update(request: Request) -> Response:
            user = self.authenticate(request, service)
            try:
                record = store.update(table, user, request.path_params["record_id"], await _form(request))
            except ApiError as error:
                if error.status == 404 and "status" not in error.body() and not wants_json(request.scope):
                    return HTMLResponse("<!DOCTYPE html><title>Not Found</title>", status_code=404)
                raise
            return JSONResponse({"data": record, "status": 200})

        async def destroy(request: Request) -> Response:
            user = self.authenticate(request, service)
            return JSONResponse(store.delete(table, user, request.path_params["record_id"]))

        path = f"{root}/{table}"
        one = path + "/{record_id}"
        app.add_route(path, index, methods=["GET"])
        app.add_route(path, create, methods=["POST"])
        app.add_route(one, show, methods=["GET"])
        app.add_route(one, update, methods=["PUT", "PATCH"])
        app.add_route(one, destroy, methods=["DELETE"])

    def add_fallback(self, app: FastAPI, root: str, service: str) -> None:
        """Route::fallback inside the API group: authenticated, then "Resource not found."."""
        gate = "analytics" if service == "websites-only" else service

        async def fallback(request: Request) -> Response:
            self.authenticate(request, gate)
            raise not_found()

        methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        app.add_route(root, fallback, methods=methods)
        app.add_route(root + "/{rest:path}", fallback, methods=methods)


def _add_redirect(app: FastAPI, state: EmulatorState) -> None:
    async def follow(request: Request) -> Response:
        visitor = Visitor.from_headers(request.headers)
        host = request.headers.get("host", "")
        query = request.query_params
        consent = query.get("sensitive") == "1"  # v49's sensitive-content page, accepted
        visit = state.store.visit(request.path_params["alias"], host, visitor, query.get("password"), consent)
        if visit.location is not None:
            return RedirectResponse(visit.location, status_code=visit.status)
        return JSONResponse({"message": visit.message}, status_code=visit.status)

    app.add_route("/{alias}", follow, methods=["GET"])


async def _route_miss(request: Request) -> Response:
    """A path no route matches (a typo in the base URL, /pubilc/api/v1/...): Laravel's stock
    exception handler answers JSON to a client asking for it, its HTML 404 page to a browser."""
    if wants_json(request.scope):
        return JSONResponse({"message": spec.ROUTE_MISS}, status_code=404)
    return HTMLResponse("<!DOCTYPE html><title>Not Found</title>", status_code=404)


def _token(request: Request) -> str:
    """Laravel's token guard: ?api_token=, then the bearer token, then a Basic password."""
    query = request.query_params.get("api_token")
    if query:
        return query
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return ""


async def _form(request: Request) -> formdata.PhpArray:
    return formdata.decode_body(await request.body(), request.headers.get("content-type", ""))


def _path_url(request: Request) -> str:
    return f"{request.url.scheme}://{request.url.netloc}{request.url.path}"


async def _api_error(request: Request, error: ApiError) -> Response:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


async def _login_redirect(request: Request, error: LoginRedirect) -> Response:
    login = f"{request.url.scheme}://{request.url.netloc}/login"
    body = f'<!DOCTYPE html><meta http-equiv="refresh" content="0;url={login}"><title>Redirecting to {login}</title>'
    return HTMLResponse(body, status_code=302, headers={"Location": login})


__all__ = ["SERVICES", "build_app", "paths"]
