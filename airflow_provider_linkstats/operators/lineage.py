"""OpenLineage for the write operators: every record a task created, changed or deleted is an output,
``links/<id>`` or ``websites/<id>`` in the namespace ``linkstats://<host>`` (never the API key).

The openlineage provider is optional (imported on use). Its listener calls
``get_openlineage_facets_on_complete`` in the process that ran ``execute()``, where the ids are.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

NAMESPACE_SCHEME = "linkstats"


def namespace(base_url: str) -> str:
    """``linkstats://host[:port]`` for a base URL; no scheme, user, path or query of it."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address keeps its brackets, so a port stays readable
        host = f"[{host}]"
    return f"{NAMESPACE_SCHEME}://{host}" + (f":{parts.port}" if parts.port else "")


def openlineage_classes() -> tuple[Any, Any] | None:
    """(OperatorLineage, Dataset) from the openlineage provider, or None if it is not installed."""
    try:
        from airflow.providers.openlineage.extractors import OperatorLineage
    except ImportError:
        return None
    try:  # common-compat re-exports the client's classes across client versions
        from airflow.providers.common.compat.openlineage.facet import Dataset
    except ImportError:
        from openlineage.client.event_v2 import Dataset
    return OperatorLineage, Dataset


class LinkstatsLineageMixin:
    """For create, update and delete operators: set ``touched_ids`` in ``execute()``."""

    touched_ids: tuple[Any, ...] = ()  # the record ids this task wrote (set per instance when it runs)
    resource: Any
    hook: Any

    def lineage_outputs(self) -> list[tuple[str, str]]:
        """(namespace, name) of each output; a subclass with other outputs says which."""
        if not self.touched_ids:
            return []
        space = namespace(self.hook.settings.root)
        return [(space, f"{self.resource.name}/{i}") for i in self.touched_ids]

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        classes = openlineage_classes()
        outputs = self.lineage_outputs() if classes is not None else []
        if not outputs:
            return None
        operator_lineage, dataset = classes
        return operator_lineage(outputs=[dataset(namespace=space, name=name) for space, name in outputs])
