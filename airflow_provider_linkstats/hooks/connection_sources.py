"""Where this process reads Airflow connections from, for the error of a connection not found.

On Airflow 3 a plain Python shell reads only environment variables and the secrets backends, not the
metadata database where ``airflow connections add`` and the UI store connections: the error names
the sources this process read, and gives the fix that works from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES

# Backends (by class name) that read the connections stored in the metadata database.
_STORED = {
    "MetastoreBackend": "the metadata database",
    "ExecutionAPISecretsBackend": "the Airflow API server (the metadata database)",
    "SupervisorCommsSecretsBackend": "the Airflow API server (the metadata database)",
}


@dataclass(frozen=True)
class Sources:
    names: tuple[str, ...]  # for the message, in lookup order
    reads_stored: bool  # the metadata database (CLI- and UI-made connections) is among them


def connection_sources(conn_id: str) -> Sources | None:
    """The connection sources this process reads, or None when Airflow does not say."""
    try:
        from airflow import __version__

        if __version__.startswith(("2.", "3.0.")):  # every process reads the metadata database
            from airflow.configuration import ensure_secrets_loaded

            backends = ensure_secrets_loaded()
        else:  # Airflow 3.1+: the chain depends on the context (task, server, anything else)
            from airflow.sdk.execution_time.supervisor import ensure_secrets_backend_loaded

            backends = ensure_secrets_backend_loaded()
    except Exception:
        return None
    names: list[str] = []
    for backend in backends:
        kind = type(backend).__name__
        if kind == "EnvironmentVariablesBackend":
            name = f"the environment variable AIRFLOW_CONN_{conn_id.upper()}"
        else:
            name = _STORED.get(kind, f"the secrets backend {kind}")
        if name not in names:
            names.append(name)
    return Sources(tuple(names), any(type(b).__name__ in _STORED for b in backends))


def not_defined_message(conn_id: str, conn_type: str, sources: Sources | None) -> str:
    """The first sentence is the fix that works from this process; then where the hook looked."""
    example = CONNECTION_TYPES[conn_type][3]  # the form's placeholder URL
    env = (
        f"AIRFLOW_CONN_{conn_id.upper()}="
        f'\'{{"conn_type": "{conn_type}", "host": "{example}", "password": "<API key>"}}\''
    )
    looked = f"looked up in {_joined(sources.names)}" if sources and sources.names else "not found"
    if sources is not None and not sources.reads_stored:
        return (
            f"The Airflow connection {conn_id!r} is not visible from this process: set the environment variable "
            f"{env} here, or test a stored connection with `airflow connections test {conn_id}` or from a task. "
            f"It was {looked}; outside a task Airflow 3 does not read the metadata database, where "
            f"`airflow connections add` and the UI store connections."
        )
    return (
        f"The Airflow connection {conn_id!r} is not defined: create it (type {conn_type}, Base URL, API key as "
        f"password), e.g. airflow connections add {conn_id} --conn-type {conn_type} --conn-host {example} "
        f"--conn-password <API key>; or set the environment variable {env}. It was {looked}."
    )


def _joined(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
