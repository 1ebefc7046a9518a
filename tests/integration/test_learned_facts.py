"""Learned facts that writes depend on are fresh or verified (issue 31 item 7), and the log says
where each came from (issue 32 item 3), with the learned-service cache on.

- The account's time zone (phpShort 44-45 reads expiration_date/expiration_time in it) changed
  after an earlier task learned it: the next create's answer shows an end hours off the one
  asked; the account is read again and the end mended with one update, there and then.
- Cache entries are checked on read: a mistyped fact, a deeply nested or non-finite entry is
  ignored (said in the log) and learned again; the probe's text is never stored.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pendulum
import pytest

from airflow_provider_linkstats.client.learned import EntryKey, LearnedStore
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, REPO, connection_json

CONN_ID = "linkstats_links_default"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    directory = tmp_path / "learned"
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(directory))
    monkeypatch.delenv("AIRFLOW__LINKSTATS__CACHE_TTL", raising=False)
    return directory


@pytest.fixture
def emu44(emulators, monkeypatch, cache_dir):
    """phpShort 44 in Paris; the connection names neither the zone nor a domain (both learned)."""
    emulator = emulators("44")
    emulator.reset()
    emulator.configure_account(timezone="Europe/Paris")
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT",
        connection_json(emulator.url, api_version="auto", default_domain_id=None),
    )
    yield emulator
    emulator.reset()


def logged(caplog, capsys) -> str:
    return capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)


def entry_path(cache_dir, url: str):
    return cache_dir / f"{EntryKey.of(CONN_ID, url + '/public/api/v1', API_KEY).name}.json"


def requests_of(emulator, start: int) -> list[tuple[str, str]]:
    return [(r["method"], r["path"].split("/api/v1")[-1]) for r in emulator.stats.requests()[start:]]


def test_a_changed_account_zone_is_mended_at_the_write(emu44, cache_dir, caplog, capsys):
    caplog.set_level(logging.INFO)
    end = pendulum.now("UTC").add(days=3).replace(second=0, microsecond=0)
    first = LinkstatsLinksHook().create_link("https://example.com/a", alias="zone-a", expires_at=end)
    assert pendulum.parse(first["expires_at"]) == end
    emu44.configure_account(timezone="America/New_York")  # changed in the account's settings

    start = len(emu44.stats.requests())
    second = LinkstatsLinksHook()  # the next task: root, version and zone from the host cache
    link = second.create_link("https://example.com/b", alias="zone-b", expires_at=end)
    # The answer held an end 6 hours off (Paris time read in New York): the account is read again
    # (with its domains: it has no default), and one update mends the end.
    assert requests_of(emu44, start) == [
        ("POST", "/links"),
        ("GET", "/account"),
        ("GET", "/domains"),
        ("PUT", f"/links/{link['id']}"),
    ]
    stored = {row["alias"]: row for row in emu44.store.links()}
    assert pendulum.parse(stored["zone-b"]["ends_at"]) == end and pendulum.parse(link["expires_at"]) == end
    text = logged(caplog, capsys)
    assert "the account's time zone is now America/New_York (it was Europe/Paris when learned)" in text
    assert "another version" not in text

    start = len(emu44.stats.requests())
    LinkstatsLinksHook().create_link("https://example.com/c", alias="zone-c", expires_at=end)
    assert requests_of(emu44, start) == [("POST", "/links")]  # the new zone was kept for the next tasks
    assert pendulum.parse({r["alias"]: r for r in emu44.store.links()}["zone-c"]["ends_at"]) == end


def test_the_log_says_where_each_fact_came_from(emu44, caplog, capsys):
    caplog.set_level(logging.INFO)
    LinkstatsLinksHook().create_link("https://example.com/a", alias="log-a")
    first = logged(caplog, capsys)
    assert "(version probe GET /stats/0 HTTP 422" in first and "sent by this task" in first
    assert (
        "the account's time zone Europe/Paris, no default domain (the only one it can use: 1), read by this task"
        in first
    )
    caplog.clear()
    start = len(emu44.stats.requests())
    LinkstatsLinksHook().create_link("https://example.com/b", alias="log-b")
    second = logged(caplog, capsys)
    assert requests_of(emu44, start) == [("POST", "/links")]
    assert "version probe" not in second  # no probe was sent by this task
    assert "s ago by an earlier task on this host (host cache; no request sent)" in second
    assert "the account's time zone Europe/Paris" in second and "read 0 s ago by an earlier task" in second


def test_the_probe_text_is_not_stored_nor_listed(emu44, cache_dir):
    LinkstatsLinksHook().create_link("https://example.com/a", alias="probe-a")
    saved = json.loads(entry_path(cache_dir, emu44.url).read_text())
    assert "note" not in saved["facts"] and "HTTP 4" not in json.dumps(saved)
    listed = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.client.learned", "--dir", str(cache_dir), "--list"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "generation=44" in listed and "timezone=Europe/Paris" in listed and "HTTP" not in listed


def rewrite(path, change) -> None:
    saved = json.loads(path.read_text())
    change(saved)
    path.write_text(json.dumps(saved))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda e: e["facts"].update(default_domain_id={"id": 4}), "'default_domain_id' is not null or a domain id"),
        (lambda e: e["facts"].update(timezone="Bearer " + API_KEY), "'timezone' is not null or a time zone name"),
        (lambda e: e["facts"].update(account_read_at=1e400), None),  # Infinity in the file
        (lambda e: e["facts"].update(generation=["44"]), "'generation' is not a version name"),
    ],
)
def test_a_mistyped_entry_is_ignored_said_and_learned_again(emu44, cache_dir, caplog, capsys, change, why):
    caplog.set_level(logging.INFO)
    emu44.configure_account(default_domain=emu44.store.add_domain(name="go.example.com")["id"])
    LinkstatsLinksHook().create_link("https://example.com/a", alias="typed-a")
    path = entry_path(cache_dir, emu44.url)
    rewrite(path, change)
    logged(caplog, capsys)
    start = len(emu44.stats.requests())
    link = LinkstatsLinksHook().create_link("https://example.com/b", alias="typed-b")
    assert link["domain"]["id"] == 2  # never {"id": 4}, never a text as a zone
    assert ("GET", "/account") in requests_of(emu44, start)  # learned again
    text = logged(caplog, capsys)
    assert "ignored" in text and API_KEY not in text
    if why:
        assert why in text
    assert json.loads(path.read_text())["facts"]["default_domain_id"] == 2  # the entry was mended


def test_a_deeply_nested_entry_is_ignored_without_recursion_error(emu44, cache_dir, caplog, capsys):
    caplog.set_level(logging.INFO)
    LinkstatsLinksHook().create_link("https://example.com/a", alias="deep-a")
    path = entry_path(cache_dir, emu44.url)
    saved = json.loads(path.read_text())
    path.write_text(json.dumps(saved)[:-1] + ', "deep": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert path.stat().st_size < 128 * 1024
    store = LearnedStore(cache_dir)
    assert store.recall(EntryKey.of(CONN_ID, emu44.url + "/public/api/v1", API_KEY), ()) is None
    link = LinkstatsLinksHook().create_link("https://example.com/b", alias="deep-b")
    assert link["id"]
    assert "ignored" in logged(caplog, capsys)


def test_an_entry_with_nan_times_is_not_fresh(tmp_path):
    store = LearnedStore(tmp_path / "c")
    key = EntryKey.of(CONN_ID, "http://127.0.0.1:9", API_KEY)
    store.remember(key, {"service": "links", "root": "http://127.0.0.1:9/api/v1", "generation": "44"})
    path = tmp_path / "c" / f"{key.name}.json"
    path.write_text(path.read_text().replace('"saved_at": ', '"saved_at": NaN, "was": '))
    assert store.recall(key, ("http://127.0.0.1:9/api/v1",)) is None


def test_a_deleted_default_domain_is_read_again_and_the_create_sent_once_more(emu44, caplog, capsys):
    caplog.set_level(logging.INFO)
    own = emu44.store.add_domain(name="go.example.com")["id"]
    emu44.configure_account(default_domain=own)
    assert LinkstatsLinksHook().create_link("https://example.com/a", alias="gone-a")["domain"]["id"] == own
    # In the account's settings: the domain is deleted (its default goes with it).
    from tests.support.emulator_http import Api

    assert Api(emu44.url).delete(f"/domains/{own}").status_code == 200
    emu44.configure_account(default_domain=None)
    start = len(emu44.stats.requests())
    link = LinkstatsLinksHook().create_link("https://example.com/b", alias="gone-b")  # the cache still says `own`
    assert link["domain"]["id"] == 1  # now the only domain the account can use
    assert requests_of(emu44, start) == [
        ("POST", "/links"),  # refused: no such domain (HTTP 404), nothing created
        ("GET", "/account"),
        ("GET", "/domains"),
        ("POST", "/links"),
    ]
    assert f"the service refused domain_id {own}; the account now gives 1" in logged(caplog, capsys)


def test_a_default_domain_older_than_five_minutes_is_read_again_before_a_create(emu44, cache_dir):
    first, second = (emu44.store.add_domain(name=f"{n}.example.com")["id"] for n in ("first", "second"))
    emu44.configure_account(default_domain=first)
    LinkstatsLinksHook().create_link("https://example.com/a", alias="old-a")
    emu44.configure_account(default_domain=second)  # changed in the account's settings
    path = entry_path(cache_dir, emu44.url)

    def age(seconds: float) -> None:
        rewrite(path, lambda e: e["facts"].update(account_read_at=e["facts"]["account_read_at"] - seconds))

    start = len(emu44.stats.requests())
    end = pendulum.now("UTC").add(days=1)
    # A create that names its domain relies only on the zone, which every answer checks: not read again.
    age(400)
    LinkstatsLinksHook().create_link("https://example.com/z", alias="old-z", domain_id=first, expires_at=end)
    assert requests_of(emu44, start) == [("POST", "/links")]
    # A create without domain_id relies on the default domain, which no answer can check: read again.
    start = len(emu44.stats.requests())
    link = LinkstatsLinksHook().create_link("https://example.com/b", alias="old-b")
    assert requests_of(emu44, start) == [("GET", "/account"), ("POST", "/links")]
    assert link["domain"]["id"] == second
    start = len(emu44.stats.requests())
    LinkstatsLinksHook().create_link("https://example.com/c", alias="old-c")  # fresh again: kept
    assert requests_of(emu44, start) == [("POST", "/links")]


def test_a_timezone_extra_the_account_contradicts_fails_naming_the_extra(emu44, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT",
        connection_json(emu44.url, api_version="44", default_domain_id=1, timezone="Asia/Tokyo"),
    )
    from airflow_provider_linkstats.client.errors import LinkstatsConfigError

    end = pendulum.now("UTC").add(days=2).replace(second=0, microsecond=0)
    with pytest.raises(LinkstatsConfigError) as caught:
        LinkstatsLinksHook().create_link("https://example.com/a", alias="extra-a", expires_at=end)
    text = str(caught.value)
    assert "timezone extra of connection 'linkstats_links_default' says Asia/Tokyo" in text
    assert "the account's time zone is Europe/Paris. Set the extra to Europe/Paris" in text
    assert "another version" not in text


def test_where_a_fact_came_from_is_said_once_per_task(emu44, caplog, capsys):
    """Issue 37: every hook of a task (and each recall of one) said 'found N s ago' again."""
    caplog.set_level(logging.INFO)
    LinkstatsLinksHook().create_link("https://example.com/a", alias="once-a")  # an earlier task learns
    caplog.clear()
    for alias in ("once-b", "once-c", "once-d"):  # this task: three hooks on the host cache
        LinkstatsLinksHook().create_link(f"https://example.com/{alias}", alias=alias)
    # Airflow 2.11 both prints a task's log and propagates it, 3.x one of the two: count each capture
    # alone (their sum counts every line twice on 2.11).
    captures = (capsys.readouterr().out, "\n".join(r.getMessage() for r in caplog.records))
    assert max(text.count("(host cache; no request sent)") for text in captures) == 1, captures
    read_ago = ("read 0 s ago by an earlier task", "read 1 s ago by an earlier task")
    assert max(sum(text.count(said) for said in read_ago) for text in captures) == 1, captures
