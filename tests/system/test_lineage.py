"""OpenLineage: the write operators report the records they touched as outputs.

The DAG runs with dag.test() in a child process, because OpenLineage reads its transport once
per process and stays disabled in the rest of the suite (no transport configured there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from urllib.parse import urlsplit

import pytest

from airflow_provider_linkstats.operators.lineage import namespace
from tests.conftest import API_KEY, DAGS_FOLDER, REPO

RUN_DAG = textwrap.dedent(
    """
    import importlib.util, sys
    from tests.support.airflow_backports import reuse_in_process_execution_api
    reuse_in_process_execution_api()
    spec = importlib.util.spec_from_file_location("linkstats_test_dag_lineage", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = module.dag.test()
    # Into a file of its own: the OpenLineage listener's thread logs to stdout meanwhile, and once
    # split a printed state line in two.
    open(sys.argv[2], "w").write(str(run.state))
    """
)


def run_with_file_transport(tmp_path, dag_file: str) -> tuple[str, list[dict]]:
    events_file = tmp_path / "openlineage.jsonl"
    env = os.environ.copy()
    env.pop("OPENLINEAGE_DISABLED", None)
    env.update(
        AIRFLOW__OPENLINEAGE__DISABLED="False",
        AIRFLOW__OPENLINEAGE__TRANSPORT=json.dumps({"type": "file", "log_file_path": str(events_file), "append": True}),
        # How long the listener may take to build and emit an event (its default is 10 s): a busy machine.
        AIRFLOW__OPENLINEAGE__EXECUTION_TIMEOUT="60",
    )
    state_file = tmp_path / "run-state"
    result = subprocess.run(
        [sys.executable, "-c", RUN_DAG, str(DAGS_FOLDER / "tests" / dag_file), str(state_file)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    (tmp_path / "dag-test.log").write_text(result.stdout + result.stderr)
    state = state_file.read_text() if state_file.exists() else "(none: the run did not finish)"
    assert state == "success", f"the run ended {state}; its output is in {tmp_path}/dag-test.log"
    text = events_file.read_text()
    return text, [json.loads(line) for line in text.splitlines() if line.strip()]


def test_write_operators_emit_their_records_as_outputs(emu, airflow_db, tmp_path):
    bulk = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"bulk-{i}")["id"] for i in range(3)]
    text, events = run_with_file_transport(tmp_path, "lineage_writes.py")
    parts = urlsplit(emu.url)
    expected_namespace = f"linkstats://{parts.hostname}:{parts.port}"

    complete = {}
    for event in events:
        if event.get("eventType") == "COMPLETE" and event["job"]["name"].startswith("linkstats_test_lineage_writes."):
            complete[event["job"]["name"].rpartition(".")[2]] = event
    outputs = {task: [(o["namespace"], o["name"]) for o in e["outputs"]] for task, e in complete.items()}

    link_ids = [link["id"] for link in emu.store.links()]
    assert link_ids == []  # everything the DAG created or seeded was deleted
    (create_link,) = outputs["create_link"]
    assert create_link[0] == expected_namespace and create_link[1].startswith("links/")
    assert outputs["update_link"] == [create_link]
    assert outputs["delete_link"] == [create_link]
    assert outputs["delete_bulk"] == [(expected_namespace, f"links/{i}") for i in sorted(bulk)]
    (create_site,) = outputs["create_website"]
    assert create_site[0] == expected_namespace and create_site[1].startswith("websites/")
    assert outputs["update_website"] == outputs["delete_website"] == [create_site]
    # Reading tasks report no outputs of ours.
    assert outputs.get("list_bulk", []) == [] and outputs.get("ids_of", []) == []
    assert API_KEY not in text


@pytest.mark.parametrize(
    ("base_url", "expected"),
    [
        ("https://links.example.com", "linkstats://links.example.com"),
        ("https://Links.Example.com:8443/public/api/v1", "linkstats://links.example.com:8443"),
        ("http://user:secret@127.0.0.1:9000/x?y=1", "linkstats://127.0.0.1:9000"),
        ("http://[::1]:8080", "linkstats://[::1]:8080"),
    ],
)
def test_namespace_is_host_and_port_only(base_url, expected):
    assert namespace(base_url) == expected


def test_openlineage_stays_optional():
    """Without the openlineage provider the operators import, and report no lineage."""
    script = textwrap.dedent(
        """
        import sys
        from airflow.providers.common.compat.sdk import BaseOperator  # Airflow's own imports first
        before = {m for m in sys.modules if "openlineage" in m}
        from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
        from airflow_provider_linkstats.operators.websites import LinkstatsDeleteWebsiteOperator
        added = {m for m in sys.modules if "openlineage" in m} - before
        assert not added, f"imported at module level: {added}"
        sys.modules["airflow.providers.openlineage"] = None  # as if not installed
        sys.modules["airflow.providers.openlineage.extractors"] = None
        op = LinkstatsCreateLinkOperator(task_id="c", url="https://example.com")
        op.touched_ids = (7,)
        print("LINEAGE", op.get_openlineage_facets_on_complete(None))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "LINEAGE None" in result.stdout
