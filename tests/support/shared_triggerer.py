"""One triggerer of a many-host deployment, run as a process of its own by the shared-store tests:

    python -m tests.support.shared_triggerer LINKS_JSON

runs one ``LinkstatsLinkExpiredTrigger`` for each link of LINKS_JSON (a list of ``[id, alias,
end]``) in one event loop, as a triggerer does, until every one fires; then prints one JSON line:
the events' statuses, and the 429s and Redis faults its shared poller's limiter saw.
"""

from __future__ import annotations

import asyncio
import json
import sys


async def _waits(links: list[list]) -> dict:
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger
    from airflow_provider_linkstats.triggers.poller import pollers

    triggers = [
        LinkstatsLinkExpiredTrigger(
            link_id=link_id, alias=alias, poke_interval=1.0, verified=True, known={str(link_id): [end, False]}
        )
        for link_id, alias, end in links
    ]
    limiters = []

    async def first_event(trigger) -> str:
        async for event in trigger.run():
            return event.payload["status"]
        return "none"

    async def watch_limiters() -> None:
        while True:
            limiters.extend(p.limiter for p in pollers().values() if p.limiter and p.limiter not in limiters)
            await asyncio.sleep(0.2)

    watcher = asyncio.create_task(watch_limiters())
    statuses = await asyncio.wait_for(asyncio.gather(*(first_event(t) for t in triggers)), 300)
    watcher.cancel()
    shared = [limiter.shared for limiter in limiters if limiter.shared is not None]
    return {
        "statuses": statuses,
        "throttled": sum(limiter.throttled for limiter in limiters),
        "shared": len(shared),
        "faults": sum(budget.health.faults for budget in shared),
    }


def _scaled_window() -> None:
    """The hooks the triggers make get the tests' scaled window (``LINKSTATS_TEST_WINDOW``), as the
    worker's hook is given it: every process of the deployment counts the same windows."""
    import os
    from functools import partialmethod

    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    window = float(os.environ.get("LINKSTATS_TEST_WINDOW") or 0) or None
    LinkstatsLinksHook.__init__ = partialmethod(LinkstatsLinksHook.__init__, rate_limit_window=window)


def main(argv: list[str]) -> int:
    _scaled_window()
    with open(argv[0]) as handle:
        links = json.load(handle)
    print(json.dumps(asyncio.run(_waits(links))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
