"""What changes with the Airflow version, stated for each version CI runs (2.11, 3.0, 3.1, 3.2, 3.3).

Each table has one row per minor version and every test reads the row of the Airflow it runs
under, so the same test runs (and asserts something) on every version: a version missing from a
table fails instead of being skipped.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import warnings

import airflow
import pytest

from airflow_provider_linkstats.hooks.connection import extra_fields
from tests.conftest import DAGS_FOLDER, REPO

MINOR = ".".join(airflow.__version__.split(".")[:2])


def row(table: dict[str, object]) -> object:
    assert MINOR in table, f"Airflow {airflow.__version__} is not in this table: say what happens there"
    return table[MINOR]


# -- start_from_trigger -------------------------------------------------------------------------------
# Is start_from_trigger kept, by the kind of inputs? Airflow 3.3 renders template fields in the
# triggerer before run(); older versions hand the trigger the raw strings, so the sensor drops the
# option there (with a warning) and defers from a worker instead. An XComArg is never known before
# a worker runs, on any version.
START_FROM_TRIGGER = {
    #       (literal, templated, XComArg, the triggerer renders templates)
    "2.11": (True, False, False, False),
    "3.0": (True, False, False, False),
    "3.1": (True, False, False, False),
    "3.2": (True, False, False, False),
    "3.3": (True, True, False, True),
}


def _sensor_dags():
    path = DAGS_FOLDER / "tests" / "version_features.py"
    spec = importlib.util.spec_from_file_location("linkstats_test_dag_version_features", path)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec.loader.exec_module(module)
    return module, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_start_from_trigger_by_version():
    from airflow.providers.common.compat.sdk import DAG, task
    from airflow.triggers.base import BaseTrigger

    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    literal, templated, xcomarg, renders = row(START_FROM_TRIGGER)
    assert hasattr(BaseTrigger, "render_template_fields") is renders
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with DAG("linkstats_sft_versions", schedule=None, start_date=dt.datetime(2024, 1, 1)):

            @task
            def create():
                return {"id": 1}

            kept = {
                "literal": LinkstatsLinkExpiredSensor(task_id="a", link_id=5, start_from_trigger=True),
                "templated": LinkstatsLinkExpiredSensor(
                    task_id="b", link_id="{{ dag_run.conf['link_id'] }}", start_from_trigger=True
                ),
                "xcomarg": LinkstatsLinkExpiredSensor(task_id="c", link_id=create(), start_from_trigger=True),
            }
    assert {name: op.start_from_trigger for name, op in kept.items()} == {
        "literal": literal,
        "templated": templated,
        "xcomarg": xcomarg,
    }
    for op in kept.values():  # kept or not, the task waits without holding a worker slot
        assert op.deferrable
        assert (op.start_trigger_args is not None) is op.start_from_trigger


def test_templated_start_from_trigger_dag_runs_on_every_version(emu, airflow_db):
    """The same DAG file works everywhere; only where the wait starts differs (see the table)."""
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    module, parse_warnings = _sensor_dags()
    _, templated, _, _ = row(START_FROM_TRIGGER)
    assert module.dag.get_task("wait").start_from_trigger is templated
    dropped = [w for w in parse_warnings if "start_from_trigger is ignored" in w]
    assert bool(dropped) is not templated

    run = module.dag.test(run_conf={"link_id": link["id"]})

    assert run.state == "success"
    assert {ti.task_id: ti.state for ti in run.get_task_instances()} == {"wait": "success", "check": "success"}


# -- the connection form --------------------------------------------------------------------------
# Where the UI's connection form comes from. 2.11 (FAB UI) and 3.1 call the hooks'
# get_connection_form_widgets()/get_ui_field_behaviour() (3.1 with stand-ins for WTForms when FAB is
# not installed); 3.2+ reads conn-fields and ui-field-behaviour from get_provider_info() as data.
# 3.0 builds WTForms fields only if FAB (WTForms, Flask-Babel, Flask-AppBuilder) is installed, which
# the test extra does not install: then no hook gets form fields there (the http provider's neither),
# and the generic form (Host, Password, Extra as JSON) is what users see.
TIMEOUT_TYPE = {"2.11": "StringField", "3.0": None, "3.1": "string", "3.2": "number", "3.3": "number"}
CONNECTION_FORM = {
    "2.11": "hook-methods",
    "3.0": "none",
    "3.1": "hook-methods",
    "3.2": "conn-fields",
    "3.3": "conn-fields",
}


@pytest.fixture(scope="module")
def connection_form():
    result = subprocess.run(
        [sys.executable, "-m", "tests.support.connection_form_probe"],
        cwd=REPO,
        env=os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("FORM ")]
    return json.loads(line[len("FORM ") :])


@pytest.mark.parametrize("conn_type", ["linkstats_links", "linkstats_analytics"])
def test_connection_form_by_version(connection_form, conn_type):
    form = connection_form[conn_type]
    assert form["source"] == row(CONNECTION_FORM)
    if form["source"] == "none":
        assert form["extra_fields"] == {} and form["relabeling"] == {}
        assert connection_form["http"]["extra_fields"] == {}  # Airflow's own limitation, not ours
        return
    assert form["relabeling"] == {"host": "Base URL", "password": "API key"}
    assert {"schema", "port", "login"} <= set(form["hidden"])
    assert form["extra_fields"] == {
        name: {
            "label": label,
            "default": default,
            "description": description,
            "type": form["extra_fields"][name]["type"],
        }
        for name, (label, _, default, description) in extra_fields(conn_type).items()
    }
    assert form["extra_fields"]["timeout"]["type"] == row(TIMEOUT_TYPE)


# -- asset watchers ----------------------------------------------------------------------------------
# AssetWatcher (event-driven scheduling) exists from Airflow 3.0, in airflow.sdk; common-compat's
# BaseEventTrigger is Airflow's there and falls back to plain BaseTrigger on 2.11. The expiry trigger
# is a one-shot BaseTrigger for the sensor, not an event trigger: an AssetWatcher refuses it.
ASSET_WATCHERS = {
    #       (AssetWatcher importable, compat BaseEventTrigger is Airflow's own)
    "2.11": (False, False),
    "3.0": (True, True),
    "3.1": (True, True),
    "3.2": (True, True),
    "3.3": (True, True),
}


def test_asset_watchers_by_version():
    import airflow.triggers.base as trigger_base
    from airflow.providers.common.compat.triggers import BaseEventTrigger

    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger, LinkstatsLinksExpiredEventTrigger

    has_watcher, real_event_trigger = row(ASSET_WATCHERS)
    # The watcher's base is common-compat's, though the module picks it without importing common-compat.
    assert BaseEventTrigger in LinkstatsLinksExpiredEventTrigger.__bases__
    assert hasattr(trigger_base, "BaseEventTrigger") is real_event_trigger
    if real_event_trigger:
        assert BaseEventTrigger is trigger_base.BaseEventTrigger
    else:
        assert BaseEventTrigger is trigger_base.BaseTrigger
    if real_event_trigger:
        assert not issubclass(LinkstatsLinkExpiredTrigger, BaseEventTrigger)
    trigger = LinkstatsLinkExpiredTrigger(linkstats_conn_id="linkstats_links_default", link_id=5)
    if has_watcher:
        from airflow.sdk import AssetWatcher

        with pytest.raises(ValueError, match="BaseEventTrigger"):
            AssetWatcher(name="link_5_expired", trigger=trigger)
    else:
        with pytest.raises(ImportError):
            from airflow.sdk import AssetWatcher  # noqa: F401
