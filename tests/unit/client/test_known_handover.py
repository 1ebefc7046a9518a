"""``KnownService.adopt``: a service profile handed over by a deferring sensor, kept only when it is
the connection's (its roots, its api_version extra); dropped and refused again once contradicted."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_linkstats.client import known as known_module
from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.generations import generation_for
from airflow_provider_linkstats.client.known import KnownService

ROOTS = ("https://links.example.com/public/api/v1", "https://links.example.com/api/v1")


def service(pinned: str | None = "49") -> tuple[KnownService, list]:
    found: list = []
    known = KnownService(
        LINKS,
        conn_id="links_prod",
        roots=ROOTS,
        pinned=generation_for("links", pinned) if pinned else None,
        store=lambda: pytest.fail("the store is never consulted to adopt"),
        entry=lambda: pytest.fail("the store is never consulted to adopt"),
        wait=1.0,
        log=logging.getLogger("test"),
        on_found=found.append,
    )
    return known, found


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(known_module, "_CONTRADICTED", set())


def test_a_profile_of_the_connections_roots_and_version_is_kept():
    known, found = service()
    profile = known.adopt({"service": "links", "root": ROOTS[1], "generation": "46"})
    assert profile is not None and known.profile == profile and found == [profile]
    assert (profile.root, profile.spoken.name) == (ROOTS[1], "46")
    unpinned, _ = service(None)
    assert unpinned.adopt({"service": "links", "root": ROOTS[0], "generation": "44"}).generation == "44"


@pytest.mark.parametrize(
    "handed",
    [
        {"service": "links", "root": "https://elsewhere.example.net/api/v1", "generation": "46"},  # not its root
        {"service": "links", "root": "https://links.example.com/api/v1/", "generation": "46"},  # not exactly one
        {"service": "links", "root": ROOTS[0], "generation": "44"},  # not the api_version extra's
        {"service": "analytics", "root": ROOTS[0], "generation": "31"},  # another service
        {"service": "links", "root": ROOTS[0], "generation": "99"},  # a version this provider does not know
        {"service": "links", "root": ROOTS[0], "generation": ""},  # the version untold
        {"root": ROOTS[0]},
        "https://links.example.com/api/v1",
    ],
)
def test_anything_else_is_ignored(handed, caplog):
    known, found = service()
    with caplog.at_level(logging.INFO):
        assert known.adopt(handed) is None
    assert known.profile is None and found == []
    assert "not using the service profile handed over" in caplog.text


def test_a_contradicted_profile_is_dropped_and_refused_when_handed_again():
    handed = {"service": "links", "root": ROOTS[0], "generation": "46"}
    known, _ = service()
    known.adopt(handed)
    known.contradicted("the service refused the key (HTTP 401)")
    assert known.profile is None and known.handed is None
    again, found = service()
    assert again.adopt(handed) is None and found == []
    other_root = {**handed, "root": ROOTS[1]}
    assert again.adopt(other_root) is not None  # only what was contradicted is refused
