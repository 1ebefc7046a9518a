"""One home for each fact (issue 19 items 3 and 4): defaults live in client/settings.py, the default
connection id comes from the hook, and operator modules reach the hook through operators/base.py only."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_provider_linkstats.client import settings
from airflow_provider_linkstats.client.retry import RetryPolicy
from airflow_provider_linkstats.client.settings import ClientSettings
from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES, extra_fields
from tests.conftest import REPO

OPERATORS = sorted((REPO / "airflow_provider_linkstats" / "operators").glob("*.py"))
# base, lineage and ownership (a task instance's claim on a record, issue 44) serve every operator
# module (lineage moved here from the package root, issue 38)
SHARED = ("base", "lineage", "ownership")
OPERATOR_MODULES = [p for p in OPERATORS if p.stem not in ("__init__", "bulk", *SHARED)]


def imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            if node.module == "airflow_provider_linkstats.operators":  # from ...operators import base
                names.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", OPERATOR_MODULES, ids=lambda p: p.stem)
def test_operator_module_imports_no_sibling(path):
    siblings = [m for m in imported_modules(path) if m.startswith("airflow_provider_linkstats.operators.")]
    assert set(siblings) <= {f"airflow_provider_linkstats.operators.{name}" for name in SHARED}, siblings


@pytest.mark.parametrize("path", OPERATORS, ids=lambda p: p.stem)
def test_no_connection_id_or_default_written_in_an_operator_module(path):
    conn_ids = {entry[2] for entry in CONNECTION_TYPES.values()}
    tree = ast.parse(path.read_text())
    literals = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not any(conn_id in text for text in literals for conn_id in conn_ids)
    for node in ast.walk(tree):  # max_workers: int = 8 and the like, in any signature
        if isinstance(node, ast.arguments):
            named = zip(node.kwonlyargs, node.kw_defaults, strict=True)
            assert not [a.arg for a, d in named if a.arg == "max_workers" and isinstance(d, ast.Constant)]


def operator_classes():
    for path in OPERATOR_MODULES:
        module = importlib.import_module(f"airflow_provider_linkstats.operators.{path.stem}")
        for name, cls in vars(module).items():
            if name.startswith("Linkstats") and name.endswith("Operator") and cls.__module__ == module.__name__:
                yield cls


def test_every_operator_takes_its_default_connection_from_the_hook():
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook

    hooks = {"linkstats_links": LinkstatsLinksHook, "linkstats_analytics": LinkstatsAnalyticsHook}
    classes = list(operator_classes())
    assert len(classes) >= 20
    for cls in classes:
        default = inspect.signature(cls.__init__).parameters.get("linkstats_conn_id")
        assert default is None or default.default is None, cls  # no id of its own: the hook decides
        hook_class = hooks[cls.service_conn_type]
        hook = cls.hook.func(SimpleNamespace(linkstats_conn_id=None))  # what a task without an id gets
        assert type(hook) is hook_class and hook.linkstats_conn_id == hook_class.default_conn_name
        assert f"``{hook_class.default_conn_name}``" in cls.__doc__  # and the docs say which


def test_sensor_and_triggers_default_to_the_hooks_connection():
    """They read the id from hooks/connection.py (so a DAG parse loads no hook class); it is the hook's."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.sensors import links as sensor_module
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor
    from airflow_provider_linkstats.triggers import links as trigger_module

    assert sensor_module.DEFAULT_CONN_ID == trigger_module.DEFAULT_CONN_ID == LinkstatsLinksHook.default_conn_name
    sensor = LinkstatsLinkExpiredSensor(task_id="wait", link_id=1)
    assert sensor.linkstats_conn_id == LinkstatsLinksHook.default_conn_name
    assert sensor.hook.linkstats_conn_id == LinkstatsLinksHook.default_conn_name
    trigger = trigger_module.LinkstatsLinkExpiredTrigger(link_id=1)
    assert trigger.serialize()[1]["linkstats_conn_id"] == LinkstatsLinksHook.default_conn_name
    event_trigger = trigger_module.LinkstatsLinksExpiredEventTrigger()
    assert event_trigger.serialize()[1]["linkstats_conn_id"] == LinkstatsLinksHook.default_conn_name


def test_delete_operators_default_workers_from_settings():
    from airflow_provider_linkstats.operators.base import LinkstatsDeleteOperatorBase

    deletes = [cls for cls in operator_classes() if issubclass(cls, LinkstatsDeleteOperatorBase)]
    assert len(deletes) == 4
    for cls in deletes:
        assert inspect.signature(cls.__init__).parameters["max_workers"].default == settings.DEFAULT_MAX_WORKERS
        assert f"1-{settings.POOL_SIZE}, default {settings.DEFAULT_MAX_WORKERS}" in cls.__doc__


def test_connection_form_and_retry_policy_read_the_settings_defaults():
    form = extra_fields("linkstats_links")
    assert form["timeout"][2] == settings.DEFAULT_READ_TIMEOUT
    assert form["max_retries"][2] == settings.DEFAULT_MAX_RETRIES
    assert form["max_rate_limit_wait"][2] == settings.DEFAULT_MAX_RATE_LIMIT_WAIT
    assert f"at most {settings.DEFAULT_CONNECT_TIMEOUT:g}" in form["timeout"][3]
    assert RetryPolicy() == RetryPolicy.from_settings(ClientSettings(root="https://x/api/v1"))
