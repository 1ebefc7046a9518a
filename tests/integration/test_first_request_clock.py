"""The service's clock is known before the first write of a fresh process (issue 37, item 1).

A new task process has heard nothing from the service yet. Before, its first create took the
worker's clock for the service's: with the service ten minutes behind, a phpShort 49 link's window
started ten minutes in the service's future (the link answered 404 for ten minutes), and an end
three minutes ahead by the service's clock was refused before any request, quoting the worker's
"now". Now the client makes the service's clock known first (from the host's learned facts, or one
cheap read) and the link redirects at once and ends on time by the service's clock.

Each create runs in a fresh Python process (forked as Airflow forks a task:
tests/support/fresh_process.py), with the learned-facts cache off unless the test turns it on;
the emulator's clock is ten minutes behind or ahead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import textwrap
import urllib.error
import urllib.request

import pytest

from tests.conftest import connection_json
from tests.support.fresh_process import run_python

API = "/public/api/v1"
SKEWS = {"behind": dt.timedelta(minutes=-10), "ahead": dt.timedelta(minutes=10)}
FMT = "%Y-%m-%dT%H:%M:%S%z"

CREATE = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    hook = LinkstatsLinksHook()
    out = []
    for alias, expires_at in json.loads(sys.argv[1]):
        try:
            out.append(hook.create_link("https://example.com/" + alias, alias=alias, expires_at=expires_at))
        except Exception as error:
            out.append({"error": str(error)})
    hook.close()
    print(json.dumps(out))
    """
)


def create_in_a_fresh_process(emu, links: list[tuple[str, str]], *, cache_dir: str = "off") -> list[dict]:
    env = {
        **os.environ,
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(emu.url, api_version="49"),
        "AIRFLOW__LINKSTATS__CACHE_DIR": cache_dir,
    }
    done = run_python(["-c", CREATE, json.dumps(links)], env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def visit(emu, alias: str) -> int:
    """The short link's answer to a visitor: 301/302 while it redirects, 404 when it does not."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        return opener.open(f"{emu.url}/{alias}", timeout=10).status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.fixture(params=sorted(SKEWS))
def skewed(emulators, request):
    emu = emulators("49")
    emu.reset()
    emu.clock.set(dt.datetime.now(dt.timezone.utc) + SKEWS[request.param])
    yield emu
    emu.reset()


def test_the_first_create_of_a_fresh_process_redirects_at_once_and_ends_on_time(skewed):
    emu = skewed
    service_now = emu.clock.now().replace(microsecond=0)
    explicit = service_now + dt.timedelta(minutes=3)
    [lifetime, fixed] = create_in_a_fresh_process(
        emu, [("first-pt5m", "PT5M"), ("first-fixed", explicit.isoformat())]
    )
    assert "error" not in fixed, fixed["error"]  # before: refused by the worker's clock (service behind)
    assert "error" not in lifetime, lifetime["error"]
    for record in (lifetime, fixed):
        assert visit(emu, record["alias"]) in (301, 302), record  # before (behind): 404 for ten minutes
        start = dt.datetime.fromisoformat(record["active_period_start_at"].replace("Z", "+00:00"))
        assert start <= emu.clock.now(), (start, emu.clock.now())
    ends = dt.datetime.fromisoformat(lifetime["active_period_end_at"].replace("Z", "+00:00"))
    created = dt.datetime.fromisoformat(lifetime["created_at"].replace("Z", "+00:00"))  # the service's clock
    expected = created + dt.timedelta(minutes=5)
    assert abs((ends - expected).total_seconds()) <= 3, (ends, expected)  # before: 10 min off
    assert dt.datetime.fromisoformat(fixed["active_period_end_at"].replace("Z", "+00:00")) == explicit
    # The process paid one request for the clock (the api_version and default_domain_id extras are
    # set: nothing else was read before the first create).
    assert emu.stats.count(method="GET", path_prefix="/account") == 1
    assert emu.stats.count(method="POST") == 2
    # It ends on time by the service's clock: redirects until the end, not after it.
    emu.clock.set(ends - dt.timedelta(seconds=5))
    assert visit(emu, "first-pt5m") in (301, 302)
    emu.clock.set(ends + dt.timedelta(seconds=2))
    assert visit(emu, "first-pt5m") == 404


@pytest.mark.parametrize("version", ["auto", "49"])
def test_a_fresh_process_takes_the_clock_from_the_hosts_learned_facts(skewed, tmp_path, version):
    """A first process learns the service (and its clock) and saves it in the host's cache; the
    next process starts from that clock: no read of its own before its first create. With the
    version detected the clock rides on the discovery; with it pinned (no discovery at all) the
    first process's one clock read is kept too."""
    emu = skewed
    cache = str(tmp_path / "learned")
    env_conn = connection_json(emu.url, api_version=version)

    def run(alias: str) -> dict:
        env = {**os.environ, "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": env_conn, "AIRFLOW__LINKSTATS__CACHE_DIR": cache}
        script = CREATE
        done = run_python(["-c", script, json.dumps([(alias, "PT5M")])], env=env, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])[0]

    first = run("cache-first")
    before = emu.stats.count()
    second = run("cache-second")
    assert "error" not in first and "error" not in second, (first, second)
    assert emu.stats.count() - before == 1  # the create alone: the clock came from the learned facts
    assert visit(emu, "cache-second") in (301, 302)
    ends = dt.datetime.fromisoformat(second["active_period_end_at"].replace("Z", "+00:00"))
    created = dt.datetime.fromisoformat(second["created_at"].replace("Z", "+00:00"))
    assert abs((ends - (created + dt.timedelta(minutes=5))).total_seconds()) <= 3
