"""The limits the shared windows hold (client/shared_limits.py): what the service announces, read
as Laravel's two throttles show it; the generation's limits only until then (issue 42)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_linkstats.client.shared_limits import WindowLimits


def phpshort(**kwargs: bool) -> WindowLimits:
    return WindowLimits(60, 120, **kwargs)


def test_the_generations_limits_are_the_starting_values():
    limits = phpshort()
    assert (limits.address, limits.key) == (60, 120)
    assert limits.announced(60, 59, 200)  # a real install says what the generation says
    assert (limits.address, limits.key, limits.address_from) == (60, 120, "announced")


def test_an_announced_address_limit_sizes_the_window_and_the_key_keeps_its_ratio():
    limits = phpshort()
    assert limits.announced(720, 719, 200)  # the e2e emulator: 720 a minute
    assert (limits.address, limits.key, limits.key_from) == (720, 1440, "scaled")
    assert limits.announced(240, 200, 200)  # lowered mid-run
    assert (limits.address, limits.key) == (240, 480)
    assert limits.announced(120, 0, 429)  # lowered again, told by the address's 429
    assert (limits.address, limits.key) == (120, 240)


def test_the_per_key_limiter_showing_on_a_200_is_not_the_addresss():
    """Laravel shows the limiter with less left: the key's 120, once other addresses used it."""
    limits = phpshort()
    assert not limits.announced(120, 10, 200)
    assert (limits.address, limits.key) == (60, 120)


def test_a_429_of_the_key_gives_the_per_key_limit():
    limits = phpshort()
    assert limits.announced(60, 50, 200)  # the address's limit confirmed (written back once)
    assert not limits.announced(60, 49, 200)
    assert limits.announced(100, 0, 429)  # the key's limiter, its own limit above the address's
    assert (limits.address, limits.key, limits.key_from) == (60, 100, "learned")
    # Remaining above 0: the key's limiter spoke behind the address's headers; its limit is at most
    # what the deployment had counted in the key's window, and one refusal at most halves it.
    assert limits.key_refused(81)
    assert limits.key == 80
    assert limits.key_refused(3)
    assert limits.key == 40
    assert not limits.key_refused(500)  # counted more than the limit: nothing new
    assert limits.announced(100, 99, 200)  # a larger address limit: the learned key is kept above it
    assert (limits.address, limits.key) == (100, 100)


def test_the_connection_extra_wins():
    limits = WindowLimits(60, 50, key_configured=True)
    assert limits.announced(720, 719, 200)
    assert (limits.address, limits.key) == (720, 50)
    assert not limits.key_refused(10)
    limits.adopt(json.dumps({"address": 240, "address_from": "announced", "key": 480, "key_from": "scaled"}))
    assert (limits.address, limits.key) == (240, 50)


def test_another_hosts_limits_are_adopted():
    mine, theirs = phpshort(), phpshort()
    theirs.announced(720, 700, 200)
    assert mine.adopt(theirs.encode().encode())
    assert (mine.address, mine.key, mine.address_from) == (720, 1440, "announced")
    assert not mine.adopt(theirs.encode())  # nothing new


@pytest.mark.parametrize(
    "raw",
    [
        b"{not json",
        b"[" * 5000,
        json.dumps({"address": "720", "address_from": "announced", "key": 1440, "key_from": "scaled"}),
        json.dumps({"address": 10**9, "address_from": "announced", "key": 1440, "key_from": "scaled"}),
        json.dumps({"address": 0, "address_from": "announced", "key": 1440, "key_from": "scaled"}),
        json.dumps({"address": True, "address_from": "announced", "key": 1440, "key_from": "scaled"}),
        json.dumps({"address": 720, "address_from": "announced", "key": -1, "key_from": "scaled"}),
        json.dumps({"address": 720, "address_from": "announced", "key": 1440, "key_from": "anything"}),
        json.dumps({"address": 720, "address_from": "announced", "key": 1440, "key_from": "scaled", "url": "x"}),
        json.dumps({"address": 720, "address_from": "generation", "key": 1440, "key_from": "scaled"}),
        json.dumps({"address": 720, "address_from": "announced", "key": 1440, "key_from": "scaled", "x": "y" * 300}),
        12345,
    ],
)
def test_a_garbled_or_planted_entry_changes_nothing(raw):
    limits = phpshort()
    assert not limits.adopt(raw)
    assert (limits.address, limits.key, limits.address_from) == (60, 120, "generation")


def test_a_service_without_a_per_key_limit_keeps_none():
    limits = WindowLimits(60, None)
    assert limits.announced(300, 299, 200)
    assert (limits.address, limits.key) == (300, None)
    assert not limits.key_refused(50)
