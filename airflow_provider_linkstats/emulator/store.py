"""The install's data in memory, behind one lock, optionally mirrored to a JSON file.

One account (user) per API key, each seeing only its own records, plus the install's global
domain (id 1, ``user_id`` 0) that every account may shorten on. As on a real install, an account
starts without a default domain (``default_domain`` null, unless the store is told one), and its
``GET /domains`` lists its own domains only, never the global one. Writes go through
``validation`` (the services' form rules), whether they come over HTTP or from ``add_link``.

The install runs one generation of each product (``links_version`` "44" or "49",
``analytics_version`` "3" or "31"); link rows hold that generation's columns.

``Store`` is composed of one part per resource, as the API contract is:

- ``store_base``: the tables, the lock, the generic create/read/update/delete, the state file;
- ``store_account``: API keys and accounts (``GET /account``, ``configure_account``);
- ``store_links``: links and the domains, spaces and pixels they point at (``add_link``, ``seed_links``);
- ``store_websites``: websites (``add_website``, the website a beacon's page belongs to);
- ``store_statistics``: the clicks and pageviews the statistics count (``visit``, ``record_traffic``);
- ``store_listings``: GET of a collection, and its cache of ids.
"""

from __future__ import annotations

from airflow_provider_linkstats.emulator.store_account import AccountStore
from airflow_provider_linkstats.emulator.store_links import LinksStore
from airflow_provider_linkstats.emulator.store_links import _link_form as _link_form  # tests read the form from here
from airflow_provider_linkstats.emulator.store_listings import ListingsStore
from airflow_provider_linkstats.emulator.store_statistics import StatisticsStore
from airflow_provider_linkstats.emulator.store_websites import WebsitesStore


class Store(AccountStore, LinksStore, WebsitesStore, StatisticsStore, ListingsStore):
    """The install's data: every resource's part over one set of tables (see the module's docstring)."""
