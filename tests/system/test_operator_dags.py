"""Operators inside real Airflow runs (dag.test()): mapping, XCom between tasks."""

from __future__ import annotations

import importlib.util

from tests.conftest import DAGS_FOLDER


def load_dag(name: str):
    path = DAGS_FOLDER / "tests" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"linkstats_test_dag_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dag


def test_dynamic_mapping_creates_and_deletes_in_dag_test(emu, airflow_db):
    emu.store.add_link(url="https://example.com/other", alias="unrelated")
    dag = load_dag("operator_mapping")
    run = dag.test()
    assert run.state == "success"
    assert [link["alias"] for link in emu.store.links()] == ["unrelated"]
    assert emu.stats.count(method="POST") == 3
    assert emu.stats.count(method="DELETE") == 3
    states = {(ti.task_id, ti.map_index): ti.state for ti in run.get_task_instances()}
    assert {key for key in states if key[0] == "delete"} == {("delete", 0), ("delete", 1), ("delete", 2)}
    assert set(states.values()) == {"success"}
