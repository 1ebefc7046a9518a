"""A task that waited ``wait`` seconds for another's discovery says so, from a worker or the triggerer."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import os
import time

import pytest

from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore

ROOTS = ("http://127.0.0.1:9/api/v1",)
FACTS = {"service": "links", "root": ROOTS[0], "generation": "49"}
KEY = EntryKey.of("links", "http://127.0.0.1:9/", "lock-wait-test-key-3c2e")


def _recall_or_learn(store: LearnedStore, wait: float):
    return store.recall_or_learn(KEY, ROOTS, lambda previous: FACTS, wait=wait)


def _arecall_or_learn(store: LearnedStore, wait: float):
    async def learn(previous):
        return FACTS

    return asyncio.run(store.arecall_or_learn(KEY, ROOTS, learn, wait=wait))


@pytest.mark.parametrize("recall_or_learn", [_recall_or_learn, _arecall_or_learn], ids=["sync", "async"])
def test_a_waiter_that_gives_up_on_the_lock_says_it_discovers_too(tmp_path, caplog, recall_or_learn):
    store = LearnedStore(tmp_path / "learned")
    store.remember(EntryKey.of("warm", "http://127.0.0.1:9/", "other"), FACTS)  # makes the directory
    holder = os.open(store.directory / f"{KEY.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process, stuck in its discovery
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.client.learned"):
            assert recall_or_learn(store, 0.6) == (FACTS, False)
        assert 0.55 <= time.monotonic() - started < 5
    finally:
        os.close(holder)
    said = [r.getMessage() for r in caplog.records if "still discovering" in r.getMessage()]
    assert said == ["Linkstats connection 'links': another task is still discovering after 1 s; discovering here too"]


@pytest.mark.parametrize("recall_or_learn", [_recall_or_learn, _arecall_or_learn], ids=["sync", "async"])
def test_a_waiter_that_gets_the_lock_says_nothing(tmp_path, caplog, recall_or_learn):
    store = LearnedStore(tmp_path / "learned")
    with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.client.learned"):
        assert recall_or_learn(store, 0.2) == (FACTS, False)
        assert recall_or_learn(store, 0.2) == (FACTS, True)
    assert not [r for r in caplog.records if "still discovering" in r.getMessage()]
