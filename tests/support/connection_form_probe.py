"""Print, as JSON, the connection form this Airflow version's UI gets for our connection types.

Run as ``python -m tests.support.connection_form_probe`` in a process of its own: Airflow 3.1+ puts stand-ins
for the FAB modules into ``sys.modules`` while it builds the form, which must not leak into a test run.

- Airflow 2.11 (FAB UI): ``ProvidersManager().connection_form_widgets`` and ``field_behaviours``.
- Airflow 3.x (React UI): ``HookMetaService.hook_meta_data()``, what ``/ui/connections/hook_meta``
  returns; ``source`` says whether our extras came from ``conn-fields`` in the provider info
  (read as data) or from the hooks' ``get_connection_form_widgets()``.
"""

from __future__ import annotations

import json

TYPES = ("linkstats_links", "linkstats_analytics", "http")


def form_airflow_2() -> dict:
    from airflow.providers_manager import ProvidersManager

    manager = ProvidersManager()
    result = {}
    for conn_type in TYPES:
        prefix = f"extra__{conn_type}__"
        fields = {}
        for key, info in manager.connection_form_widgets.items():
            if key.startswith(prefix):
                field = info.field  # a WTForms UnboundField
                fields[key[len(prefix) :]] = {
                    "label": str(field.args[0]),
                    "default": field.kwargs.get("default"),
                    "description": field.kwargs.get("description"),
                    "type": field.field_class.__name__,
                }
        behaviour = manager.field_behaviours.get(conn_type) or {}
        result[conn_type] = {
            "source": "hook-methods" if fields else "none",
            "extra_fields": fields,
            "relabeling": behaviour.get("relabeling", {}),
            "hidden": sorted(behaviour.get("hidden_fields", [])),
        }
    return result


def form_airflow_3() -> dict:
    from airflow.api_fastapi.core_api.services.ui.connections import HookMetaService
    from airflow.providers_manager import ProvidersManager

    # First, as in a fresh API server: 3.1 reuses a ProvidersManager that already loaded its hooks
    # without the FAB stand-ins, and then has no form fields for any hook.
    metadata = HookMetaService.hook_meta_data()
    # Extras declared as data (conn-fields, read by 3.2+) are dicts; the hooks' WTForms fields are not.
    declared = {
        key.split("__")[1]
        for key, info in ProvidersManager().connection_form_widgets.items()
        if isinstance(info.field, dict)
    }
    result = {}
    for meta in metadata:
        if meta.connection_type not in TYPES:
            continue
        standard = meta.standard_fields.model_dump() if meta.standard_fields else {}
        fields = {
            name: {
                "label": spec["schema"].get("title"),
                "default": spec.get("value"),
                "description": spec.get("description"),
                "type": spec["schema"]["type"][0],
            }
            for name, spec in (meta.extra_fields or {}).items()
        }
        result[meta.connection_type] = {
            "source": "conn-fields" if meta.connection_type in declared else ("hook-methods" if fields else "none"),
            "extra_fields": fields,
            "relabeling": {name: f["title"] for name, f in standard.items() if f and f.get("title")},
            "hidden": sorted(
                {"url_schema": "schema"}.get(name, name) for name, f in standard.items() if f and f.get("hidden")
            ),
        }
    return result


def main() -> None:
    import airflow

    form = form_airflow_2() if airflow.__version__.startswith("2.") else form_airflow_3()
    print("FORM " + json.dumps(form, default=str))


if __name__ == "__main__":
    main()
