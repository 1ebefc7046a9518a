"""The learned-service store (client/learned.py): private files, shared by processes, never trusted blindly."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from airflow_provider_linkstats.client import learned
from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore, resolve

REPO = Path(__file__).resolve().parents[3]
KEY = "learned-test-key-8d1f"
BASE = "http://127.0.0.1:9/"
ROOTS = ("http://127.0.0.1:9/public/api/v1", "http://127.0.0.1:9/api/v1")
FACTS = {"service": "links", "root": ROOTS[1], "generation": "49", "timezone": "Europe/Paris", "default_domain_id": 3}
OTHER_UID = 65534  # nobody


@pytest.fixture
def store(tmp_path):
    return LearnedStore(tmp_path / "learned")


def key(conn_id: str = "links", base: str = BASE, api_key: str = KEY) -> EntryKey:
    return EntryKey.of(conn_id, base, api_key)


def entry_file(store: LearnedStore, entry: EntryKey) -> Path:
    return store.directory / f"{entry.name}.json"


def test_what_is_remembered_is_recalled_from_private_files_without_the_key(store):
    assert store.recall(key(), ROOTS) is None  # nothing yet, and no directory made by a read
    assert not store.directory.exists()
    assert store.remember(key(), FACTS)
    assert store.recall(key(), ROOTS) == FACTS
    assert stat.S_IMODE(store.directory.stat().st_mode) == 0o700
    files = list(store.directory.iterdir())
    assert [f.suffix for f in files] == [".json"]
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    text = files[0].read_text()
    assert KEY not in text and KEY not in files[0].name
    assert json.loads(text)["key_fingerprint"] == learned.fingerprint(KEY)


def test_two_connections_keys_or_base_urls_never_share_an_entry(store):
    store.remember(key(), FACTS)
    assert store.recall(key(conn_id="other"), ROOTS) is None
    assert store.recall(key(api_key=KEY + "x"), ROOTS) is None
    assert store.recall(key(base="http://127.0.0.1:9/public"), ROOTS) is None
    assert store.recall(key(), ROOTS) == FACTS


def test_an_expired_entry_is_not_used(tmp_path):
    writer = LearnedStore(tmp_path / "d", ttl=3600)
    writer.remember(key(), FACTS)
    path = entry_file(writer, key())
    record = json.loads(path.read_text())
    record["saved_at"] = time.time() - 3601
    path.write_text(json.dumps(record))
    assert writer.recall(key(), ROOTS) is None
    record["saved_at"] = time.time() - 3500
    path.write_text(json.dumps(record))
    assert writer.recall(key(), ROOTS) == FACTS
    assert LearnedStore(tmp_path / "d", ttl=60).recall(key(), ROOTS) is None  # the reader's ttl decides
    record["saved_at"] = time.time() + 3600  # a clock far ahead, or a forged time: not believed
    path.write_text(json.dumps(record))
    assert writer.recall(key(), ROOTS) is None


def test_forget_drops_the_entry(store, caplog):
    store.remember(key(), FACTS)
    store.remember(key(conn_id="other"), FACTS)
    with caplog.at_level(logging.INFO, logger=learned.__name__):
        assert store.forget(key(), "the root answered 404")
    assert store.recall(key(), ROOTS) is None
    assert store.recall(key(conn_id="other"), ROOTS) == FACTS  # only that one
    assert not store.forget(key(), "again")
    assert "the root answered 404" in caplog.text


def test_a_root_the_base_url_does_not_yield_is_never_used_and_the_entry_is_dropped(store, caplog):
    store.remember(key(), {**FACTS, "root": "https://attacker.example/api/v1"})
    with caplog.at_level(logging.INFO, logger=learned.__name__):
        assert store.recall(key(), ROOTS) is None
    assert "attacker.example" in caplog.text and "not one the base URL" in caplog.text
    assert not entry_file(store, key()).exists()


def test_an_entry_owned_by_another_user_is_ignored(store, caplog):
    store.remember(key(), FACTS)
    os.chown(entry_file(store, key()), OTHER_UID, OTHER_UID)
    with caplog.at_level(logging.WARNING, logger=learned.__name__):
        assert store.recall(key(), ROOTS) is None
    assert f"owned by uid {OTHER_UID}" in caplog.text
    # Saving replaces it with one of ours (rename in our own directory).
    store.remember(key(), FACTS)
    assert entry_file(store, key()).stat().st_uid == os.geteuid()
    assert store.recall(key(), ROOTS) == FACTS


def test_a_directory_owned_by_another_user_or_writable_by_others_is_not_used(tmp_path, caplog):
    planted = tmp_path / "planted"
    LearnedStore(planted).remember(key(), FACTS)
    os.chown(planted, OTHER_UID, OTHER_UID)
    with caplog.at_level(logging.WARNING, logger=learned.__name__):
        assert LearnedStore(planted).recall(key(), ROOTS) is None
        assert not LearnedStore(planted).remember(key(), FACTS)
    assert "not using" in caplog.text and f"owned by uid {OTHER_UID}" in caplog.text
    os.chown(planted, os.geteuid(), os.getegid())
    os.chmod(planted, 0o777)
    assert LearnedStore(planted).recall(key(), ROOTS) is None
    os.chmod(planted, 0o700)
    assert LearnedStore(planted).recall(key(), ROOTS) == FACTS


def test_group_writable_files_and_symbolic_links_are_ignored(store, tmp_path):
    store.remember(key(), FACTS)
    path = entry_file(store, key())
    os.chmod(path, 0o620)
    assert store.recall(key(), ROOTS) is None
    os.chmod(path, 0o600)
    assert store.recall(key(), ROOTS) == FACTS
    elsewhere = tmp_path / "elsewhere.json"
    path.rename(elsewhere)
    path.symlink_to(elsewhere)
    assert store.recall(key(), ROOTS) is None  # O_NOFOLLOW: a link is not followed, even to our own file


def test_entries_of_another_format_or_that_are_not_json_are_ignored(store):
    store.remember(key(), FACTS)
    path = entry_file(store, key())
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "format": 99}))
    assert store.recall(key(), ROOTS) is None
    path.write_text("{not json")
    assert store.recall(key(), ROOTS) is None
    path.write_text(json.dumps({**record, "key_fingerprint": learned.fingerprint("another key")}))
    assert store.recall(key(), ROOTS) is None


def test_a_disabled_store_keeps_nothing(tmp_path):
    off = LearnedStore(None)
    assert not off.enabled
    assert not off.remember(key(), FACTS)
    assert off.recall(key(), ROOTS) is None
    calls = []
    assert off.recall_or_learn(key(), ROOTS, lambda previous: calls.append(1) or FACTS, wait=1) == (FACTS, False)
    assert off.recall_or_learn(key(), ROOTS, lambda previous: calls.append(1) or FACTS, wait=1) == (FACTS, False)
    assert calls == [1, 1]


def test_recall_or_learn_learns_once_then_recalls(store):
    calls = []
    assert store.recall_or_learn(key(), ROOTS, lambda previous: calls.append(1) or FACTS, wait=5) == (FACTS, False)
    assert store.recall_or_learn(key(), ROOTS, lambda previous: calls.append(1) or FACTS, wait=5) == (FACTS, True)
    assert calls == [1]


def test_facts_that_are_not_enough_are_handed_to_learn(store):
    store.remember(key(), {"root": ROOTS[0], "generation": "49"})
    handed = []

    def learn(previous):
        handed.append(previous)
        return {**previous, "timezone": "UTC", "account_read": True}

    wanted = {"root": ROOTS[0], "generation": "49", "timezone": "UTC", "account_read": True}
    enough = lambda facts: facts.get("account_read", False)  # noqa: E731
    assert store.recall_or_learn(key(), ROOTS, learn, wait=5, enough=enough) == (wanted, False)
    assert handed == [{"root": ROOTS[0], "generation": "49"}]
    assert store.recall_or_learn(key(), ROOTS, learn, wait=5, enough=enough) == (wanted, True)
    assert len(handed) == 1


def test_a_failed_discovery_saves_nothing(store):
    def fail(previous):
        raise RuntimeError("HTTP 429")

    with pytest.raises(RuntimeError):
        store.recall_or_learn(key(), ROOTS, fail, wait=5)
    assert store.recall(key(), ROOTS) is None
    assert store.recall_or_learn(key(), ROOTS, lambda previous: FACTS, wait=5) == (FACTS, False)


_WORKER = textwrap.dedent(
    """
    import json, sys, time
    from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore

    directory, marker, log = sys.argv[1:4]
    store = LearnedStore(directory)
    start = time.time()
    while not __import__("os").path.exists(marker):  # all start together
        time.sleep(0.005)

    def learn(previous):
        with open(log, "a") as out:
            out.write("learned\\n")
        time.sleep(0.5)  # a discovery's round trips
        return {"root": "http://127.0.0.1:9/api/v1", "generation": "49"}

    facts, recalled = store.recall_or_learn(EntryKey.of("links", "http://127.0.0.1:9/", "k"),
                                            ("http://127.0.0.1:9/public/api/v1", "http://127.0.0.1:9/api/v1"),
                                            learn, wait=30)
    print(json.dumps({"facts": facts, "recalled": recalled}))
    """
)


def test_processes_started_together_discover_once_and_share_it(tmp_path):
    directory, marker, log = tmp_path / "learned", tmp_path / "go", tmp_path / "learn.log"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", _WORKER, str(directory), str(marker), str(log)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    time.sleep(0.5)  # let every worker import and reach the start line
    marker.touch()
    results = [json.loads(worker.communicate(timeout=60)[0]) for worker in workers]
    assert log.read_text() == "learned\n"  # one discovery for the four
    assert sorted(r["recalled"] for r in results) == [False, True, True, True]
    assert all(r["facts"] == {"root": "http://127.0.0.1:9/api/v1", "generation": "49"} for r in results)


def test_a_waiter_discovers_by_itself_after_wait(store):
    import fcntl

    store.remember(key(conn_id="warm"), FACTS)  # makes the directory
    holder = os.open(store.directory / f"{key().name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another process, stuck in its discovery
    try:
        started = time.monotonic()
        assert store.recall_or_learn(key(), ROOTS, lambda previous: FACTS, wait=0.3) == (FACTS, False)
        assert 0.25 <= time.monotonic() - started < 5
    finally:
        os.close(holder)


def test_coroutines_of_one_triggerer_discover_once(store):
    calls = []

    async def learn(previous):
        calls.append(1)
        await asyncio.sleep(0.3)
        return FACTS

    async def main():
        return await asyncio.gather(*(store.arecall_or_learn(key(), ROOTS, learn, wait=10) for _ in range(5)))

    results = asyncio.run(main())
    assert calls == [1]
    assert sorted(recalled for _, recalled in results) == [False, True, True, True, True]


def test_resolve_reads_the_setting(tmp_path, monkeypatch):
    monkeypatch.delenv(learned.SETTING_ENV, raising=False)
    monkeypatch.delenv(learned.TTL_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert resolve().directory == tmp_path / "xdg" / "airflow-provider-linkstats"
    assert resolve().ttl == 3600
    for off in ("", "off", " OFF "):
        assert not resolve(off).enabled
    assert not resolve(str(tmp_path), ttl=0).enabled
    assert resolve(str(tmp_path / "here"), ttl="60").directory == tmp_path / "here"
    monkeypatch.setenv(learned.SETTING_ENV, "off")
    assert not resolve().enabled
    monkeypatch.setenv(learned.SETTING_ENV, str(tmp_path / "env"))
    monkeypatch.setenv(learned.TTL_ENV, "120")
    assert (resolve().directory, resolve().ttl) == (tmp_path / "env", 120)
    with pytest.raises(ValueError, match=r"cache_dir 'relative/dir': allowed is an absolute path"):
        resolve("relative/dir")
    with pytest.raises(ValueError, match=r"cache_ttl 'soon': allowed is a number of seconds"):
        resolve(str(tmp_path), ttl="soon")


def test_the_command_line_lists_and_clears(store):
    store.remember(key(), FACTS)
    store.remember(key(conn_id="analytics"), {"service": "analytics", "root": ROOTS[0], "generation": "31"})

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "airflow_provider_linkstats.client.learned", "--dir", str(store.directory), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    listed = run("--list")
    assert "2 entries" in listed
    assert f"links {BASE}: root={ROOTS[1]}, generation=49, timezone=Europe/Paris, default_domain_id=3 (" in listed
    assert "analytics" in listed and KEY not in listed
    assert "Deleted 2 entries" in run("--clear")
    assert store.recall(key(), ROOTS) is None
    assert "0 entries" in run("--list")


@pytest.mark.parametrize(
    ("status", "body", "contradicts"),
    [
        (401, b'{"message": "Unauthenticated."}', True),
        (404, b"<html><title>404 Not Found</title></html>", True),
        (404, b"", True),
        (404, b'{"message": "Resource not found.", "status": 404}', False),  # the API: no such record
        (422, b"<html></html>", False),
        (429, b'{"message": "Too Many Attempts."}', False),
        (200, b"{}", False),
    ],
)
def test_which_answers_contradict_what_was_learned(status, body, contradicts):
    assert (learned.contradiction(status, body) is not None) is contradicts
