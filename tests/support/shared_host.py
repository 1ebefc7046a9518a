"""One "host" of a many-host deployment, run as a process of its own by the shared-store tests:

    python -m tests.support.shared_host COUNT [PREFIX]

(the tests fork it, as that command, from tests/support/host_launcher.py)

creates COUNT links through ``LinkstatsLinksHook`` (the connection and the settings come from the
environment: its own cache directory, [linkstats] shared_state_conn_id, its own forwarding proxy),
then prints one JSON line: links made, 429s its limiter saw, requests sent, Redis round trips and
the seconds it took. ``hostname`` is Airflow's ``[core] hostname_callable`` for these processes
(``LINKSTATS_TEST_HOST``): three processes on one machine are three hosts.
"""

from __future__ import annotations

import json
import os
import sys
import time


def hostname() -> str:
    return os.environ.get("LINKSTATS_TEST_HOST", "host")


def main(argv: list[str]) -> int:
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    count, prefix = int(argv[0]), argv[1] if len(argv) > 1 else hostname()
    window = float(os.environ.get("LINKSTATS_TEST_WINDOW") or 0) or None
    hook = LinkstatsLinksHook(rate_limit_window=window)
    barrier = os.environ.get("LINKSTATS_TEST_BARRIER")
    if barrier:  # every host imported and ready: they start creating together
        hook.client  # noqa: B018 - the client is built (and the shared store reached) before the start
        open(os.path.join(barrier, f"ready-{hostname()}"), "w").close()
        while not os.path.exists(os.path.join(barrier, "go")):
            time.sleep(0.01)
    started = time.monotonic()
    made = [hook.create_link(f"https://example.com/{prefix}/{n}")["id"] for n in range(count)]
    limiter = hook.client.limiter
    shared = limiter.shared
    print(json.dumps({
        "made": len(made), "throttled": limiter.throttled, "sent": limiter.sent,
        "round_trips": shared.round_trips if shared else 0, "faults": shared.health.faults if shared else 0,
        "seconds": time.monotonic() - started, "ended": time.time(),
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
