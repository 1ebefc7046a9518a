"""Telling a service's generation apart with one request that changes nothing.

Neither product sends a version header. A statistics read of record 0 with a statistic name that
only the newer generation knows answers 422 (the name is invalid) on the older one and 404 (no
record 0) on the newer one: ``name=click`` on phpShort (44-45 / 46+), ``name=visitors_hour`` on
phpAnalytics (3.0-3.6 / 3.7+). The plan is a generator, run by ``drive`` or ``adrive``.
"""

from __future__ import annotations

import json
from collections.abc import Generator

from airflow_provider_linkstats.client.dialect import DIALECTS, Dialect
from airflow_provider_linkstats.client.errors import LinkstatsResponseError
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status

PROBE_NAME = {"links": "click", "analytics": "visitors_hour"}


def probe_request(service: str) -> ApiRequest:
    params = (("name", PROBE_NAME[service]), ("from", "2024-01-01"), ("to", "2024-01-01"))
    return ApiRequest("GET", "/stats/0", params=params)


def detect(service: str) -> Generator[ApiRequest, ApiResponse, Dialect]:
    """The connected generation of ``service`` ("links" or "analytics"), from one GET."""
    old, new = DIALECTS[service]
    request = probe_request(service)
    response = yield request
    if response.status == 422 and _is_json(response):
        return old
    if response.status == 404 and _is_json(response):
        return new
    raise_for_status(request, response)  # 401, 403, 429, 5xx: the usual error, with what to check
    raise LinkstatsResponseError(
        f"could not tell which version of the {service} service answers (expected HTTP 422 or 404 in JSON "
        f"to a statistics probe); set the connection's api_version extra",
        status=response.status,
        method=request.method,
        path=request.path,
    )


def _is_json(response: ApiResponse) -> bool:
    try:
        return isinstance(json.loads(response.body), dict)
    except ValueError:
        return False
