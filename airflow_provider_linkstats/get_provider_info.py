"""Entry point ``apache_airflow_provider``: what Airflow's ProvidersManager reads about us."""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats import __version__
from airflow_provider_linkstats.hooks.connection import provider_connection_types

PACKAGE = "airflow_provider_linkstats"
INTEGRATIONS = {
    "links": "Linkstats Links",
    "analytics": "Linkstats Analytics",
}
DOC_URL = "https://pypi.org/project/airflow-provider-linkstats/"


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-linkstats",
        "name": "Linkstats",
        "description": "Manage short links and tracked websites, and wait for links to expire.",
        "versions": [__version__],
        "integrations": [
            {"integration-name": name, "external-doc-url": DOC_URL, "tags": ["service"]}
            for name in INTEGRATIONS.values()
        ],
        "hooks": [
            {"integration-name": name, "python-modules": [f"{PACKAGE}.hooks.linkstats"]}
            for name in INTEGRATIONS.values()
        ],
        "operators": [
            {
                "integration-name": "Linkstats Links",
                "python-modules": [
                    f"{PACKAGE}.operators.links",
                    f"{PACKAGE}.operators.spaces",
                    f"{PACKAGE}.operators.pixels",
                    f"{PACKAGE}.operators.stats",
                    f"{PACKAGE}.operators.launch",
                    f"{PACKAGE}.operators.cleanup",
                    f"{PACKAGE}.operators.warehouse",
                ],
            },
            {
                "integration-name": "Linkstats Analytics",
                "python-modules": [f"{PACKAGE}.operators.websites", f"{PACKAGE}.operators.warehouse"],
            },
        ],
        "sensors": [{"integration-name": "Linkstats Links", "python-modules": [f"{PACKAGE}.sensors.links"]}],
        "triggers": [{"integration-name": "Linkstats Links", "python-modules": [f"{PACKAGE}.triggers.links"]}],
        "extra-links": [f"{PACKAGE}.operators.links.LinkstatsShortUrlLink"],
        "connection-types": provider_connection_types(),
    }
