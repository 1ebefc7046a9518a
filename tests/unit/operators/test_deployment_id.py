"""The deployment's identity (operators.ownership.deployment_id, issue 44 item 3): the option, else a
Variable made once in this deployment's metadata database and read back the same afterwards."""

from __future__ import annotations

from airflow_provider_linkstats.operators import ownership


def test_the_option_names_the_deployment(monkeypatch):
    monkeypatch.setenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", "production")
    assert ownership.deployment_id() == "production"


def test_without_the_option_a_variable_is_made_once_and_kept(airflow_db, monkeypatch):
    monkeypatch.delenv("AIRFLOW__LINKSTATS__DEPLOYMENT_ID", raising=False)
    monkeypatch.setattr(ownership, "_deployment", None)
    monkeypatch.setattr(ownership.time, "sleep", lambda seconds: None)
    first = ownership.deployment_id()
    assert first and len(first) == 32
    monkeypatch.setattr(ownership, "_deployment", None)  # another process of the deployment
    assert ownership.deployment_id() == first
