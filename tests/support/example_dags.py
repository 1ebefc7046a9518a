"""The example DAGs as the tests load them, and the visitors that click their links."""

from __future__ import annotations

import importlib.util
import threading

import requests

from tests.conftest import DAGS_FOLDER

EXAMPLES = DAGS_FOLDER / "examples"  # the examples as the dags folder sees them
VISITORS = [
    ("US", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)", "en-US"),
    ("FR", "Mozilla/5.0 (Linux; Android 14; Pixel 8)", "fr-FR"),
    ("DE", "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "de-DE"),
]


def load_module(dag_id: str):
    spec = importlib.util.spec_from_file_location(f"example_{dag_id}", EXAMPLES / f"{dag_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_alone(dag_id: str, monkeypatch, tmp_path):
    """The example's module from a dags folder that holds only its file (the test's own folder).

    On Airflow 3.3 every ``dag.test()`` parses the whole dags folder and writes each DAG's
    serialization to the metadata database (apache/airflow#64884, for a DAG's siblings): with the
    suite's 30-odd DAGs that is most of a run's time. A test that runs one example DAG many times
    points the dags folder at that example alone; the DAG, its file and its runs are the same.
    """
    folder = tmp_path / "dags"
    (folder / "examples").mkdir(parents=True)
    (folder / "examples" / f"{dag_id}.py").symlink_to(EXAMPLES / f"{dag_id}.py")
    from airflow import settings

    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(folder))
    monkeypatch.setattr(settings, "DAGS_FOLDER", str(folder))  # read once, at Airflow's import
    spec = importlib.util.spec_from_file_location(f"example_{dag_id}", folder / "examples" / f"{dag_id}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(dag_id: str):
    return load_module(dag_id).dag


def click_limit(link: dict) -> int | None:
    return link.get("expiration_clicks") or link.get("clicks_limit")


def click_until_expired(emu, campaign: str, stop: threading.Event) -> None:
    """Simulated visitors: click click-limited links through the redirect; expire the dated one by clock."""
    headers_cycle = 0
    while not stop.is_set():
        campaign_links = [link for link in emu.store.links() if link["alias"].startswith(campaign)]
        active = [link for link in campaign_links if emu.store.link_status(link["id"]) == 1]
        for link in active:
            if click_limit(link):
                country, agent, language = VISITORS[headers_cycle % len(VISITORS)]
                headers_cycle += 1
                requests.get(
                    f"{emu.url}/{link['alias']}",
                    headers={"X-Country": country, "User-Agent": agent, "Accept-Language": language},
                    allow_redirects=False,
                    timeout=5,
                )
        if active and not any(click_limit(link) for link in active):
            emu.clock.advance(seconds=3 * 3600)
        stop.wait(0.1)
