"""Running the emulator for real: the CLI in a subprocess, one port or two, a state file, a time zone."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from airflow_provider_linkstats.emulator import Emulator
from tests.support.emulator_http import Api

KEY, OTHER_KEY = "cli-key-1", "cli-key-2"


@contextmanager
def cli(*args: str, command: list[str] | None = None) -> Iterator[dict[str, str]]:
    """Start the CLI on free ports, yield the URLs from its banner, and stop it with SIGTERM."""
    command = command or [sys.executable, "-m", "airflow_provider_linkstats.emulator"]
    process = subprocess.Popen([*command, "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        banner = process.stdout.readline()
        match = re.search(r"links (\S+), analytics (\S+) ", banner)
        assert match, f"no banner: {banner!r}"
        yield {"links": match.group(1), "analytics": match.group(2)}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0


def test_cli_serves_both_services_on_one_port_with_several_keys():
    with cli("--api-key", KEY, "--api-key", OTHER_KEY) as urls:
        assert urls["analytics"] == urls["links"] + "/analytics"  # same port, its own prefix
        first, second = Api(urls["links"], KEY), Api(urls["links"], OTHER_KEY)
        link = first.create("links", url="https://example.com", alias="cli")
        assert link["short_url"] == f"{urls['links']}/cli"
        assert second.get("/links").json()["data"] == []  # one account per key
        assert Api(urls["analytics"], OTHER_KEY).create("websites", domain="shop.example.com")["id"] == 1
        assert Api(urls["links"], OTHER_KEY).get("/websites").json()["meta"]["total"] == 1  # also at the root
        assert Api(urls["links"], "nope").get("/links").status_code == 401
        assert requests.get(f"{urls['links']}/cli", allow_redirects=False, timeout=10).status_code == 302


def test_console_script_with_one_port_per_service():
    script = shutil.which("linkstats-emulator", path=str(Path(sys.executable).parent))
    assert script, "the linkstats-emulator console script is installed with the package"
    with cli("--analytics-port", "0", "--api-key", KEY, command=[script]) as urls:
        assert urls["links"] != urls["analytics"]
        links, analytics = Api(urls["links"], KEY), Api(urls["analytics"], KEY)
        assert links.get("/links").status_code == 200
        assert links.get("/websites").status_code == 404
        assert analytics.get("/websites").status_code == 200
        assert analytics.get("/links").status_code == 404
        link = links.create("links", url="https://example.com", alias="two-ports")
        assert link["short_url"].startswith(urls["links"])
        assert requests.get(f"{urls['analytics']}/two-ports", allow_redirects=False, timeout=10).status_code == 404
        # one emulator behind both ports: the admin routes of either see the same state
        requests.post(f"{urls['analytics']}/__emulator__/clock", json={"advance": 3600}, timeout=10)
        clock = requests.get(f"{urls['links']}/__emulator__/clock", timeout=10).json()["now"]
        assert dt.datetime.fromisoformat(clock) > dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=59)


def test_cli_requires_a_key(monkeypatch):
    monkeypatch.delenv("LINKSTATS_EMULATOR_API_KEY", raising=False)
    result = subprocess.run(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--port", "0"], capture_output=True, text=True
    )
    assert result.returncode == 2 and "API key" in result.stderr


def test_cli_takes_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("LINKSTATS_EMULATOR_API_KEY", KEY)
    with cli() as urls:
        assert Api(urls["links"], KEY).get("/links").status_code == 200


def test_state_file_survives_a_restart(tmp_path):
    state = tmp_path / "state.json"
    with cli("--api-key", KEY, "--state-file", str(state)) as urls:
        api = Api(urls["links"], KEY)
        link = api.create("links", url="https://example.com", alias="keep", redirect_password="pw-123")
        api.create("websites", domain="shop.example.com")
        requests.get(f"{urls['links']}/keep", params={"password": "pw-123"}, allow_redirects=False, timeout=10)
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600  # it holds link passwords
    with cli("--api-key", KEY, "--state-file", str(state)) as urls:
        api = Api(urls["links"], KEY)
        again = api.get(f"/links/{link['id']}").json()["data"]
        assert (again["alias"], again["clicks"], again["created_at"]) == ("keep", 1, link["created_at"])
        assert api.create("links", url="https://example.com/2")["id"] == link["id"] + 1  # ids continue
        assert [w["domain"] for w in api.get("/websites").json()["data"]] == ["shop.example.com"]
        locked = requests.get(f"{urls['links']}/keep", allow_redirects=False, timeout=10)
        assert locked.status_code == 401  # the password was kept too


def test_in_process_state_file_and_reset(tmp_path):
    state = tmp_path / "state.json"
    with Emulator(api_keys=(KEY,), state_file=state) as emu:
        emu.store.add_link(url="https://example.com", alias="a")
    with Emulator(api_keys=(KEY,), state_file=state) as emu:
        assert [link["alias"] for link in emu.store.links()] == ["a"]
        emu.reset()
    with Emulator(api_keys=(KEY,), state_file=state) as emu:
        assert emu.store.links() == []


def test_unusable_state_file_is_a_clear_error(tmp_path):
    state = tmp_path / "state.json"
    state.write_text("{not json")
    with pytest.raises(ValueError, match="state file"):
        Emulator(api_keys=(KEY,), state_file=state)


def test_expiration_uses_the_emulator_time_zone():
    with Emulator(api_keys=(KEY,), timezone="Europe/Paris") as emu:
        # 12:00 in Paris (summer, UTC+2) is 10:00 UTC
        emu.clock.set(dt.datetime(2030, 7, 1, 9, 59, tzinfo=dt.timezone.utc), freeze=True)
        link = emu.store.add_link(url="https://example.com", expiration_date="2030-07-01", expiration_time="12:00")
        assert link["ends_at"] == "2030-07-01T10:00:00.000000Z"
        assert Api(emu.url, KEY).get("/links", status=2).json()["data"] == []
        emu.clock.advance(minutes=1, seconds=1)
        assert [x["id"] for x in Api(emu.url, KEY).get("/links", status=2).json()["data"]] == [link["id"]]


def test_in_process_emulator_on_two_ports():
    with Emulator(api_keys=(KEY,), analytics_port=0) as emu:
        assert emu.url != emu.analytics_url
        assert Api(emu.analytics_url, KEY).create("websites", domain="e.com")["id"] == 1
        assert Api(emu.url, KEY).get("/websites").status_code == 404
        assert emu.api_key == KEY and KEY not in repr(emu)


def test_stop_frees_the_port_and_start_twice_is_refused():
    emu = Emulator(api_keys=(KEY,)).start()
    url = emu.url
    with pytest.raises(RuntimeError):
        emu.start()
    emu.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/__emulator__/clock", timeout=2)


def test_state_file_keeps_traffic_for_the_statistics(tmp_path):
    state = tmp_path / "state.json"
    with Emulator(api_keys=(KEY,), state_file=state) as emu:
        link = emu.store.add_link(url="https://example.com", alias="kept")
        site = emu.store.add_website(domain="e.com")
        requests.get(f"{emu.url}/kept", headers={"X-Country": "FR"}, allow_redirects=False, timeout=10)
        requests.post(f"{emu.analytics_url}/api/event", data={"page": "https://e.com/a"},
                      headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"}, timeout=10)  # fmt: skip
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    with Emulator(api_keys=(KEY,), state_file=state) as emu:
        clicks = Api(emu.url, KEY).get(f"/stats/{link['id']}", name="country").json()["data"]
        pages = Api(emu.analytics_url, KEY).get(f"/stats/{site['id']}", name="page").json()["data"]
        assert (clicks, pages) == ([{"value": "FR", "count": "1"}], [{"value": "/a", "count": "1"}])
