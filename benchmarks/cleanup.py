"""The streaming cleanup at scale, at a real install's rate limit, and the example it replaced (issue 27).

    python -m benchmarks.cleanup [--sizes 10000,100000] [--live 1000] [--limited 500] [--old 20000]
                                 [--json rows.json]

Each run: a fresh emulator (phpShort 44, no rate limit) in its own process; ``N`` expired links
and ``--live`` live ones, all created 45 days ago (seeded through the emulator's admin API); the
cleanup task (``older_than_days=30``, ``max_share=1``) in a child process of its own, which
reports its wall time, its peak RSS (``ru_maxrss``) and its RSS before the task ran (Airflow and
the provider imported), and the bytes of its XCom (the return value as JSON). The emulator counts
the requests; the check: every expired link gone, every live one kept.

The requests are checked against the minimum, N deletes + ceil(N/100) pages: the confirming read
of each page before its deletes (issue 31) may cost ceil(N/100) more, so the target is +2%.
``--limited N`` runs the cleanup of N expired links at 60 requests a minute (the emulator's budget
per client address, as on real installs). There a page's 100 deletes take about 100 s, and no
delete may rest on a confirming read more than 15 s old (``evidence_max_age``, issue 43): the page
is read again about every 15 s, about 7 reads more per page of 100 (one confirming read per 14
deletes, at one request a second): the target is N + ceil(N/100) plus 8 x ceil(N/100) more at the
limit (it was +3% with one confirming read per page, when a delete might act on evidence 120 s
old). Both rows also give the longest time from a link's confirming read to its delete (the
cleanup's ``evidence_age_max``; at most 15 s).

``--old N`` also runs the example as it was (list every expired record into XCom, pick the old
ids, bulk delete them) in one child process: its XCom is the three task values as JSON.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import resource
import subprocess
import sys
import time

from benchmarks.common import (
    API_KEY,
    API_PREFIX,
    LINKS_CONN_ID,
    EmulatorProcess,
    Row,
    airflow_env,
    connection_env,
    verdict,
)

LIVE = 1000
XCOM_GOAL = 100 * 1024
EVIDENCE_MAX_AGE = 15.0  # the cleanup's default evidence_max_age (issue 43: was 120)
# At 60 requests a minute: a page of 100 deletes takes about 100 s, so it is read again about every
# 15 s of them: at most 8 confirming reads more per page than the one without a rate limit.
READS_AT_THE_LIMIT = 8
CHILD_TIMEOUT = 900


def rss_mb() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(kind: str) -> None:
    """Run the cleanup in this process (the task's process) and print one JSON line of figures."""
    from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator
    from airflow_provider_linkstats.operators.links import LinkstatsDeleteLinkOperator, LinkstatsListLinksOperator

    context = {"params": {}, "ds": "2026-11-25"}
    before = rss_mb()
    started, cpu = time.perf_counter(), cpu_seconds()
    if kind == "new":
        task = LinkstatsCleanupLinksOperator(
            task_id="delete_old", linkstats_conn_id=LINKS_CONN_ID, older_than_days=30, max_share=1
        )
        result = task.execute(context)
        xcom = len(json.dumps(result).encode())
        summary = {
            k: result[k] for k in ("matched", "deleted", "kept", "pages", "confirming_reads", "evidence_age_max")
        }
    else:  # the example before: list_expired -> pick_old -> delete_old, every value through XCom
        listed = LinkstatsListLinksOperator(
            task_id="list_expired", linkstats_conn_id=LINKS_CONN_ID, status=2, sort_by="id", sort="asc"
        ).execute(context)
        records_json = json.dumps(listed).encode()
        records = json.loads(records_json)  # pick_old reads them back from XCom
        cutoff = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=30)
        old = [r["id"] for r in records if dt.datetime.fromisoformat(r["created_at"].replace("Z", "+00:00")) < cutoff]
        ids_json = json.dumps(old).encode()
        deleted = LinkstatsDeleteLinkOperator(
            task_id="delete_old", linkstats_conn_id=LINKS_CONN_ID, link_ids=old, missing_ok=True
        ).execute(context)
        xcom = len(records_json) + len(ids_json) + len(json.dumps(deleted).encode())
        summary = {"matched": len(old), "deleted": len(deleted), "kept": len(records) - len(old), "pages": None}
        del listed, records, records_json
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu": cpu_seconds() - cpu,
                "xcom": xcom,
                "before_mb": before,
                "peak_mb": peak_mb(),
                **summary,
            }
        )
    )


def run_one(kind: str, expired: int, live: int, env: dict[str, str], limit: int | None = None) -> dict:
    """Seed a fresh emulator, run the task in a child process, count and check at the server.

    ``limit``: requests a minute the emulator allows each client address (None: no limit)."""
    with EmulatorProcess() as emu:
        seed_started = time.perf_counter()
        emu.admin("POST", "/clock", {"now": (dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=45)).isoformat()})
        emu.admin(
            "POST",
            "/links",
            {
                "count": expired,
                "alias_prefix": "old-",
                "fields": {"url": "https://example.com/old", "expiration_clicks": 1, "clicks": 1},
            },
        )
        emu.admin(
            "POST", "/links", {"count": live, "alias_prefix": "live-", "fields": {"url": "https://example.com/live"}}
        )
        emu.admin("POST", "/clock", {"reset": True})
        seeded = time.perf_counter() - seed_started
        if limit is not None:
            emu.admin("POST", "/rate_limit", {"limit": limit, "window": 60})
        emu.reset_stats()
        cpu_before = emu.cpu_seconds()
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.cleanup", "--child", kind],
            env={**os.environ, **env, **connection_env(emu.url), **pinned_connection(emu.url)},
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT,
        )
        if done.returncode != 0:
            raise RuntimeError(f"the {kind} cleanup failed: {done.stderr[-3000:]}")
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        figures["emulator_cpu"] = emu.cpu_seconds() - cpu_before
        figures["pages_sent"] = emu.count("GET", "/links")
        figures["deletes_sent"] = emu.count("DELETE")
        figures["requests"] = emu.count()
        figures["throttled"] = int(emu.admin("GET", "/stats?status=429")["count"])
        if limit is not None:
            emu.admin("POST", "/rate_limit", {"limit": None})
        _, left_old = emu.request("GET", "/public/api/v1/links?search=old-&search_by=alias&per_page=10")
        _, left_live = emu.request("GET", "/public/api/v1/links?search=live-&search_by=alias&per_page=10")
        figures["old_left"] = left_old["meta"]["total"]
        figures["live_left"] = left_live["meta"]["total"]
        figures["seeded_in"] = seeded
        return figures


def pinned_connection(url: str) -> dict[str, str]:
    """The bench connection with the API root and version given: no probe requests among the counted ones."""
    conn = {
        "conn_type": "linkstats_links",
        "host": url + API_PREFIX,
        "password": API_KEY,
        "extra": {"api_version": "44"},
    }
    return {f"AIRFLOW_CONN_{LINKS_CONN_ID.upper()}": json.dumps(conn)}


def request_rows(f: dict, n: int, share: float, label: str, *, limited: bool = False) -> list[Row]:
    """The requests against the minimum (N deletes + ceil(N/100) pages) and the evidence's age.

    ``limited``: at 60 requests a minute the pages are read again for fresh evidence: the target
    allows ``READS_AT_THE_LIMIT`` more per page (and ``share`` for the rest)."""
    ideal = n + math.ceil(n / 100)
    allowed = ideal * (1 + share) + (READS_AT_THE_LIMIT * math.ceil(n / 100) if limited else 0)
    target = f"<= +{share:.0%}" + (f" + {READS_AT_THE_LIMIT} x ceil(N/100) (evidence <= 15 s)" if limited else "")
    extra = f["requests"] - f["deletes_sent"] - f["pages_sent"]  # the count of all links, for max_share
    return [
        Row(
            "6. cleanup",
            f"  requests{label} (server-side): {f['deletes_sent']:,} DELETE + {f['pages_sent']:,} listing GET "
            f"(of which {f['confirming_reads']:,} confirming reads, 1 the count of all links for max_share)"
            + (f" + {extra} other" if extra else ""),
            f"{f['requests']:,}",
            f"{f['requests'] / ideal:.4f}x N + ceil(N/100) = {ideal:,}",
            target,
            verdict(f["requests"] <= allowed and f["deletes_sent"] == n and not f.get("throttled")),
        ),
        Row(
            "6. cleanup",
            f"  longest from a link's confirming read to its delete{label}",
            f"{f['evidence_age_max']:.1f} s",
            "",
            f"<= {EVIDENCE_MAX_AGE:g} s (evidence_max_age)",
            verdict(f["evidence_age_max"] <= EVIDENCE_MAX_AGE),
        ),
    ]


def rows_for(
    sizes: list[int], live: int, old_size: int | None, env: dict[str, str], say, limited: int | None = None
) -> list[Row]:
    rows: list[Row] = []
    peaks: dict[int, float] = {}
    for n in sizes:
        say(f"cleanup of {n:,} expired links with {live:,} live ones")
        f = run_one("new", n, live, env)
        ok = f["old_left"] == 0 and f["live_left"] == live and f["deleted"] == n
        rows.append(
            Row(
                "6. cleanup",
                f"LinkstatsCleanupLinksOperator, {n:,} expired + {live:,} live links: wall "
                f"(CPU: task {f['cpu']:.0f} s, emulator {f['emulator_cpu']:.0f} s)",
                f"{f['seconds']:.1f} s",
                f"{n / f['seconds']:.0f} deletes/s",
            )
        )
        rows += request_rows(f, n, 0.02, "")
        rows.append(
            Row(
                "6. cleanup",
                "  every expired link deleted, every live one kept",
                f"{f['old_left']} expired left, {f['live_left']:,}/{live:,} live kept",
                "",
                "all deleted, all kept",
                verdict(ok),
            )
        )
        rows.append(
            Row(
                "6. cleanup",
                "  XCom of the task (its return value as JSON)",
                f"{f['xcom']:,} bytes",
                "",
                "< 100 KB",
                verdict(f["xcom"] < XCOM_GOAL),
            )
        )
        rows.append(
            Row(
                "6. cleanup",
                "  peak RSS of the task's process (after imports)",
                f"{f['peak_mb']:.0f} MB ({f['before_mb']:.0f} MB)",
                f"+{f['peak_mb'] - f['before_mb']:.0f} MB",
            )
        )
        peaks[n] = f["peak_mb"]
    if len(peaks) >= 2:
        small, large = min(peaks), max(peaks)
        growth = peaks[large] - peaks[small]
        rows.append(
            Row(
                "6. cleanup",
                f"  peak RSS at {large:,} vs {small:,} links",
                f"{peaks[large]:.0f} MB vs {peaks[small]:.0f} MB",
                f"{peaks[large] / peaks[small]:.2f}x for {large // small}x the links",
                "independent of N (< 10 MB apart)",
                verdict(growth < 10),
            )
        )
    if limited:
        say(f"cleanup of {limited:,} expired links at 60 requests a minute (about {limited / 60 + 1:.0f} min)")
        f = run_one("new", limited, live, env, limit=60)
        ok = f["old_left"] == 0 and f["live_left"] == live and f["deleted"] == limited
        rows.append(
            Row(
                "6. cleanup",
                f"LinkstatsCleanupLinksOperator at 60 requests a minute, {limited:,} expired + {live:,} live: wall",
                f"{f['seconds']:.1f} s",
                f"{f['requests'] / f['seconds'] * 60:.1f} requests a minute, {f['throttled']} answered 429",
                "",
                verdict(ok),
            )
        )
        rows += request_rows(f, limited, 0.03, " at the limit", limited=True)
    if old_size:
        say(f"the example as it was and as it is, {old_size:,} expired links")
        before = run_one("old", old_size, live, env)
        after = run_one("new", old_size, live, env)
        rows.append(
            Row(
                "6. cleanup",
                f"example before (list -> pick -> delete) vs now, {old_size:,} expired: XCom",
                f"{before['xcom'] / 1e6:.1f} MB vs {after['xcom']:,} bytes",
                f"{before['xcom'] / after['xcom']:,.0f}x less",
            )
        )
        rows.append(
            Row(
                "6. cleanup",
                f"example before vs now, {old_size:,} expired: peak RSS of the task process",
                f"{before['peak_mb']:.0f} MB vs {after['peak_mb']:.0f} MB",
                f"+{before['peak_mb'] - before['before_mb']:.0f} MB vs +{after['peak_mb'] - after['before_mb']:.0f} MB "
                "over imports",
            )
        )
        rows.append(
            Row(
                "6. cleanup",
                f"example before vs now, {old_size:,} expired: requests, wall",
                f"{before['requests']:,} vs {after['requests']:,}",
                f"{before['seconds']:.1f} s vs {after['seconds']:.1f} s",
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cleanup", description=__doc__.split("\n")[0])
    parser.add_argument("--child", choices=("new", "old"), help=argparse.SUPPRESS)
    parser.add_argument("--sizes", default="10000,100000", help="expired links per run, comma-separated")
    parser.add_argument("--live", type=int, default=LIVE)
    parser.add_argument("--old", type=int, default=20000, help="the old example's size (0: skip)")
    parser.add_argument("--limited", type=int, default=500, help="expired links at 60 requests a minute (0: skip)")
    parser.add_argument("--only-limited", action="store_true", help="run the rate-limited cleanup alone")
    parser.add_argument("--json", help="write the rows here as JSON")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    env = airflow_env()
    os.makedirs(env["AIRFLOW__CORE__DAGS_FOLDER"], exist_ok=True)
    started = time.perf_counter()

    def say(message: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f} s] {message}", file=sys.stderr, flush=True)

    sizes = [] if args.only_limited else [int(size) for size in args.sizes.split(",") if size]
    old = None if args.only_limited else args.old or None
    rows = rows_for(sizes, args.live, old, env, say, limited=args.limited or None)
    for row in rows:
        print(" | ".join((row.what, row.figure, row.ratio, row.target, row.verdict)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump([row.__dict__ for row in rows], handle)
    say("done")
    return 0 if all(row.verdict != "MISSED" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
