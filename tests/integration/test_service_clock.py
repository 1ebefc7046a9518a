"""The service's clock decides (issue 31): the emulator's Date header follows its own clock, and the
client reads "now" from it for durations and the past-expiry check."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_linkstats.client import LINKS, LinkstatsInputError
from airflow_provider_linkstats.client.api import LinkstatsClient
from airflow_provider_linkstats.client.records import link_timing
from airflow_provider_linkstats.client.settings import ClientSettings
from tests.conftest import API_KEY

URL = "https://example.com/skew"
SKEW = dt.timedelta(minutes=-10)  # the service's clock is ten minutes behind the worker's


@pytest.fixture
def skewed(emulators, request):
    emulator = emulators(request.param)
    emulator.reset()
    emulator.clock.set(dt.datetime.now(dt.timezone.utc) + SKEW)
    client = LinkstatsClient(ClientSettings(root=emulator.url + "/api/v1", timezone="UTC"), API_KEY)
    yield emulator, client
    client.close()
    emulator.reset()


@pytest.mark.parametrize("skewed", ["44", "49"], indirect=True)
def test_the_client_learns_the_service_clock_from_its_answers(skewed):
    emulator, client = skewed
    assert not client.clock.known
    client.account()
    assert client.clock.known
    assert abs(client.clock.offset - SKEW.total_seconds()) < 2.0
    assert abs((client.clock.now() - emulator.clock.now()).total_seconds()) < 2.0


@pytest.mark.parametrize("skewed", ["44", "49"], indirect=True)
def test_a_duration_counts_from_the_service_clock(skewed):
    """Before: PT2H was added to the worker's clock, so the link lived 2 h 10 min by the service's."""
    emulator, client = skewed
    client.account()  # the service has told its time
    created = client.create(LINKS, {"url": URL, "alias": "skew-duration", "domain_id": 1, "expires_at": "PT2H"})
    ends = link_timing(client.get(LINKS, created["id"])).ends_at
    expected = emulator.clock.now() + dt.timedelta(hours=2)
    # phpShort 44 rounds up to the minute; either way within a minute of the service's two hours.
    assert abs((ends - expected).total_seconds()) <= 62, (ends, expected)


@pytest.mark.parametrize("skewed", ["49"], indirect=True)
def test_a_past_expiry_is_judged_by_the_service_clock(skewed):
    """Five minutes before the worker's now is still five minutes ahead by the service's clock: the
    link is created (it was refused by the worker's clock); an end that passed by the service's
    clock too is refused before the create."""
    emulator, client = skewed
    client.account()
    worker_now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    alive = worker_now - dt.timedelta(minutes=5)
    created = client.create(LINKS, {"url": URL, "alias": "skew-alive", "domain_id": 1, "expires_at": alive})
    assert link_timing(client.get(LINKS, created["id"])).ends_at == alive
    before = emulator.stats.count(method="POST")
    with pytest.raises(LinkstatsInputError) as caught:
        client.create(
            LINKS,
            {"url": URL, "alias": "skew-dead", "domain_id": 1, "expires_at": worker_now - dt.timedelta(minutes=11)},
        )
    assert "'expires_at'" in str(caught.value) and "has passed" in str(caught.value)
    assert emulator.stats.count(method="POST") == before
