"""Bulk delete under 20 ms of server latency: one by one, and through the operator's thread pool.

The ideal for the bulk path is N x latency / concurrency: the pool keeps ``max_workers``
requests in flight and nothing else costs anything. The emulator must overlap delayed requests
for that to be reachable, so that is checked first.
"""

from __future__ import annotations

import http.client
import math
import threading
import time

from benchmarks.common import API_KEY, API_PREFIX, LINKS_CONN_ID, EmulatorProcess, Row, verdict

LATENCY = 0.020
WORKERS = 8


def concurrency_check(emu: EmulatorProcess, link_id: int, *, concurrent: int = WORKERS, tries: int = 3) -> float:
    """Wall time of ``concurrent`` delayed GETs sent at once (best of ``tries``)."""
    conns = [http.client.HTTPConnection(emu.host, emu.port, timeout=30) for _ in range(concurrent)]
    headers = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}
    path = f"{API_PREFIX}/links/{link_id}"

    def one(conn: http.client.HTTPConnection, barrier: threading.Barrier) -> None:
        barrier.wait()
        conn.request("GET", path, headers=headers)
        conn.getresponse().read()

    for conn in conns:  # open the connections before timing
        conn.request("GET", path, headers=headers)
        conn.getresponse().read()
    best = math.inf
    for _ in range(tries):
        barrier = threading.Barrier(concurrent + 1)
        threads = [threading.Thread(target=one, args=(conn, barrier)) for conn in conns]
        for thread in threads:
            thread.start()
        barrier.wait()
        start = time.perf_counter()
        for thread in threads:
            thread.join()
        best = min(best, time.perf_counter() - start)
    for conn in conns:
        conn.close()
    return best


def run(emu: EmulatorProcess, bulk_ids: list[int], sequential_ids: list[int]) -> list[Row]:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator

    rows: list[Row] = []
    n = len(bulk_ids)
    emu.set_latency(LATENCY)
    try:
        wall = concurrency_check(emu, sequential_ids[-1])
        overlapped = wall < 2 * LATENCY
        rows.append(
            Row(
                "2. bulk",
                f"emulator: {WORKERS} concurrent GETs with {LATENCY * 1000:.0f} ms latency",
                f"{wall * 1000:.1f} ms wall",
                f"{wall / LATENCY:.2f}x one request",
                f"< 2x (serial would be {WORKERS}x)",
                verdict(overlapped),
            )
        )

        hook = LinkstatsLinksHook(LINKS_CONN_ID)
        hook.get_link(sequential_ids[-1])  # connection open before timing, as in the bulk path
        emu.reset_stats()
        start = time.perf_counter()
        for link_id in sequential_ids[:-1]:
            hook.delete_link(link_id)
        sequential = time.perf_counter() - start
        sample = len(sequential_ids) - 1
        per_delete = sequential / sample
        extrapolated = sample != n
        seq_total = per_delete * n
        deletes = emu.count("DELETE")
        assert deletes == sample, f"server saw {deletes} DELETEs, expected {sample}"
        what = f"sequential hook.delete_link, {n:,} deletes"
        if extrapolated:
            what += f" (EXTRAPOLATED from {sample:,} measured; --full measures all)"
        rows.append(Row("2. bulk", what, f"{seq_total:,.1f} s", f"{per_delete * 1000:.1f} ms/delete", "", ""))

        operator = LinkstatsDeleteLinkOperator(
            task_id="bench_bulk_delete", link_ids=bulk_ids, max_workers=WORKERS, linkstats_conn_id=LINKS_CONN_ID
        )
        emu.reset_stats()
        server_cpu, client_cpu = emu.cpu_seconds(), time.process_time()
        start = time.perf_counter()
        deleted = operator.execute(context={})
        bulk = time.perf_counter() - start
        server_cpu, client_cpu = emu.cpu_seconds() - server_cpu, time.process_time() - client_cpu
        deletes = emu.count("DELETE")
        assert isinstance(deleted, list) and len(deleted) == n and deletes == n, f"server saw {deletes} DELETEs"
        ideal = n * LATENCY / WORKERS
        rows.append(
            Row(
                "2. bulk",
                f"LinkstatsDeleteLinkOperator(max_workers={WORKERS}), {n:,} deletes "
                f"(CPU: client {client_cpu:.1f} s, emulator {server_cpu:.1f} s)",
                f"{bulk:,.2f} s",
                f"{bulk / ideal:.2f}x ideal ({ideal:.1f} s = N x {LATENCY * 1000:.0f} ms / {WORKERS})",
                "",
                "",
            )
        )
        rows.append(Row("2. bulk", "bulk speed-up over sequential", "", f"{seq_total / bulk:.1f}x", "", ""))
    finally:
        emu.set_latency(0)
    return rows
