"""Per-call overhead: sequential link reads through our hook, a bare reused Session and HttpHook.run.

Every way ends with the record as a dict (status checked, JSON parsed), so they do the same
work. The reads run in blocks of 100, the ways interleaved block by block in a rotating order,
and the whole set is repeated; each block's best repeat counts, which keeps a noisy neighbour
(this is a 2-core machine) from deciding the ratio.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import API_KEY, API_PREFIX, HTTP_CONN_ID, LINKS_CONN_ID, EmulatorProcess, Row, verdict

TARGET_RATIO = 1.15
WARM_UP = 50


def readers(url: str) -> dict[str, Callable[[int], Any]]:
    import requests
    from airflow.providers.http.hooks.http import HttpHook

    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    root = url + API_PREFIX
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}

    bare = requests.Session()  # what anyone writes: defaults, reused
    bare.headers.update(headers)

    def bare_read(link_id: int) -> Any:
        response = bare.get(f"{root}/links/{link_id}", timeout=(10, 30))
        response.raise_for_status()
        return response.json()["data"]

    tuned = requests.Session()  # the floor with the same setting our transport uses
    tuned.headers.update(headers)
    tuned.trust_env = False

    def tuned_read(link_id: int) -> Any:
        response = tuned.get(f"{root}/links/{link_id}", timeout=(10, 30))
        response.raise_for_status()
        return response.json()["data"]

    hook = LinkstatsLinksHook(LINKS_CONN_ID)

    def hook_read(link_id: int) -> Any:
        return hook.get_link(link_id)

    http_hook = HttpHook(method="GET", http_conn_id=HTTP_CONN_ID)

    def http_hook_read(link_id: int) -> Any:
        return http_hook.run(f"links/{link_id}").json()["data"]

    return {
        "bare": bare_read,
        "tuned": tuned_read,
        "hook": hook_read,
        "http_hook": http_hook_read,
    }


LABELS = {
    "bare": "requests.Session, reused (floor)",
    "tuned": "requests.Session, reused, trust_env=False",
    "hook": "LinkstatsLinksHook.get_link",
    "http_hook": "HttpHook.run (HTTP provider)",
}

SHORT = {"bare": "bare Session", "tuned": "trust_env=False Session", "hook": "our hook", "http_hook": "HttpHook"}


def run(
    emu: EmulatorProcess, link_ids: list[int], *, calls: int = 2000, repeats: int = 3, blocks: int = 20
) -> list[Row]:
    ways = readers(emu.url)
    connections = {}
    for name, read in ways.items():  # warm up (caches filled), counting the TCP connections used
        emu.reset_stats()
        for link_id in link_ids[:WARM_UP]:
            read(link_id)
        connections[name] = emu.connections()
    per_block = calls // blocks
    # times[name][block]: that block's time in each repeat. A block's best repeat counts, so a burst
    # of load from elsewhere that hits one way in one block is dropped instead of decided by chance.
    times: dict[str, list[list[float]]] = {name: [[] for _ in range(blocks)] for name in ways}
    order = list(ways)
    for repeat in range(repeats):
        for block in range(blocks):
            ids = [link_ids[(block * per_block + i) % len(link_ids)] for i in range(per_block)]
            shift = (block + repeat) % len(order)
            for name in order[shift:] + order[:shift]:
                read = ways[name]
                start = time.perf_counter()
                for link_id in ids:
                    read(link_id)
                times[name][block].append(time.perf_counter() - start)
    best = {name: sum(min(block) for block in per_way) for name, per_way in times.items()}
    done = per_block * blocks
    floor = best["bare"] / done
    rows = []
    for name in ways:
        per_call = best[name] / done
        ratio = per_call / floor
        target = verdict_text = ""
        if name == "hook":
            target, verdict_text = f"<= {TARGET_RATIO:.2f}x", verdict(ratio <= TARGET_RATIO)
        rows.append(
            Row(
                "1. per call",
                f"{LABELS[name]}: {done:,} GETs ({blocks} blocks, each best of {repeats})",
                f"{per_call * 1e6:,.0f} µs/call",
                f"{ratio:.2f}x floor",
                target,
                verdict_text,
            )
        )
    rows.append(
        Row(
            "1. per call",
            f"TCP connections opened for {WARM_UP} reads (server-side): "
            + ", ".join(f"{SHORT[name]} {count}" for name, count in connections.items()),
            "",
            "",
            "",
            "",
        )
    )
    hook_vs_tuned = best["hook"] / best["tuned"]
    rows.append(
        Row("1. per call", "LinkstatsLinksHook vs the trust_env=False floor", "", f"{hook_vs_tuned:.2f}x", "", "")
    )
    rows.append(
        Row(
            "1. per call",
            "HttpHook.run vs LinkstatsLinksHook",
            "",
            f"{best['http_hook'] / best['hook']:.2f}x slower",
            "",
            "",
        )
    )
    return rows
