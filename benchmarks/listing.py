"""Listing every link: pages sent (counted by the server) and wall time, next to a bare Session loop."""

from __future__ import annotations

import math
import time

from benchmarks.common import API_KEY, API_PREFIX, LINKS_CONN_ID, EmulatorProcess, Row, verdict

PER_PAGE = 100


def bare_listing(url: str) -> list[dict]:
    """The loop a user writes with requests: per_page=100, ``page`` until a short page."""
    import requests

    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"})
    items: list[dict] = []
    page = 1
    while True:
        params = {"per_page": PER_PAGE, "page": page}
        response = session.get(f"{url}{API_PREFIX}/links", params=params, timeout=(10, 30))
        response.raise_for_status()
        data = response.json()["data"]
        items += data
        if len(data) < PER_PAGE:
            return items
        page += 1


def run(emu: EmulatorProcess, expected: int, *, repeats: int = 3) -> list[Row]:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    hook = LinkstatsLinksHook(LINKS_CONN_ID)
    hook.list_links(max_items=1)  # connection open before timing
    pages = math.ceil(expected / PER_PAGE)
    best_hook = best_bare = math.inf
    sent = None
    for _ in range(repeats):
        emu.reset_stats()
        start = time.perf_counter()
        links = hook.list_links()
        best_hook = min(best_hook, time.perf_counter() - start)
        count = emu.count("GET", "/links")
        assert len(links) == expected, f"listed {len(links)} links, expected {expected}"
        sent = count if sent is None else max(sent, count)
        start = time.perf_counter()
        bare = bare_listing(emu.url)
        best_bare = min(best_bare, time.perf_counter() - start)
        assert len(bare) == expected
    return [
        Row(
            "3. listing",
            f"LinkstatsLinksHook.list_links(), {expected:,} links: requests (server-side)",
            f"{sent}",
            "",
            f"= ceil({expected:,}/{PER_PAGE}) = {pages}",
            verdict(sent == pages),
        ),
        Row(
            "3. listing",
            f"LinkstatsLinksHook.list_links(), {expected:,} links: wall, best of {repeats}",
            f"{best_hook:.2f} s",
            f"{best_hook / best_bare:.2f}x bare loop",
            "",
            "",
        ),
        Row(
            "3. listing",
            f"bare requests.Session page loop (per_page={PER_PAGE}), best of {repeats}",
            f"{best_bare:.2f} s",
            "1.00x",
            "",
            "",
        ),
    ]
