"""Every hook method as one row, for the reliability tests that run a fault against all of them."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.contract import Resource
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import connection_json
from tests.support.leakcheck import LINK_PASSWORD, PRIVACY_PASSWORD, WEBSITE_PASSWORD

LINK = {"url": "https://example.com/a", "alias": "spring"}
SITE = {"domain": "shop.example.com"}

TIMEOUT = 0.5  # the hooks' read timeout in these tests
RETRIES = 2
RETRY_WAIT = 0.01
RETRY_WAIT_MAX = 2.0  # the cap on any wait, Retry-After included
HOOK_SETTINGS = {"timeout": TIMEOUT, "max_retries": RETRIES, "retry_wait": RETRY_WAIT, "retry_wait_max": RETRY_WAIT_MAX}


@dataclass(frozen=True)
class Method:
    """One hook method; the record it reads, changes or deletes is id 1, seeded by the test."""

    name: str
    hook_class: type
    http: str  # the HTTP method the call sends first
    call: Callable[[Any], Any]

    @property
    def resource(self) -> Resource:
        return self.hook_class.resource

    @property
    def creates(self) -> bool:
        return self.http == "POST"


METHODS = [
    Method(
        "create_link",
        LinkstatsLinksHook,
        "POST",
        lambda h: h.create_link(
            LINK["url"], alias=LINK["alias"], password=LINK_PASSWORD, privacy=2, privacy_password=PRIVACY_PASSWORD
        ),
    ),
    Method("get_link", LinkstatsLinksHook, "GET", lambda h: h.get_link(1)),
    Method("update_link", LinkstatsLinksHook, "PUT", lambda h: h.update_link(1, url="https://example.com/b")),
    Method("delete_link", LinkstatsLinksHook, "DELETE", lambda h: h.delete_link(1)),
    Method("list_links", LinkstatsLinksHook, "GET", lambda h: h.list_links(status=1)),
    Method("iter_links", LinkstatsLinksHook, "GET", lambda h: list(h.iter_links(search="spr", search_by="alias"))),
    Method(
        "create_website",
        LinkstatsAnalyticsHook,
        "POST",
        lambda h: h.create_website(SITE["domain"], privacy=2, password=WEBSITE_PASSWORD),
    ),
    Method("get_website", LinkstatsAnalyticsHook, "GET", lambda h: h.get_website(1)),
    Method("update_website", LinkstatsAnalyticsHook, "PUT", lambda h: h.update_website(1, email=1)),
    Method("delete_website", LinkstatsAnalyticsHook, "DELETE", lambda h: h.delete_website(1)),
    Method("list_websites", LinkstatsAnalyticsHook, "GET", lambda h: h.list_websites(sort="asc")),
    Method("iter_websites", LinkstatsAnalyticsHook, "GET", lambda h: list(h.iter_websites(search="shop"))),
]
METHOD_IDS = [m.name for m in METHODS]


def make_hook(method: Method, url: str, conn_id: str | None = None, **overrides: Any):
    """A hook on ``url``: its connection is read from the environment here, once, then cached,
    so hooks on different servers can run side by side."""
    conn_id = conn_id or method.hook_class.default_conn_name
    variable = f"AIRFLOW_CONN_{conn_id.upper()}"
    previous = os.environ.get(variable)
    os.environ[variable] = connection_json(url, method.hook_class.conn_type)
    try:
        hook = method.hook_class(conn_id, **{**HOOK_SETTINGS, **overrides})
        hook.client  # noqa: B018 - resolves the connection while the variable is set
    finally:
        if previous is None:
            del os.environ[variable]
        else:
            os.environ[variable] = previous
    return hook
