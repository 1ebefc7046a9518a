"""What the analytics service's answers to website writes mean, said in terms of what to do
(``write_errors``: a plan that allows no more websites, a plan without the API, phpAnalytics 31's
500 for a missing website), and a domain the service stored other than as given
(``say_stored_domain``: phpAnalytics 31 removes every "www.", and later look-ups must use it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from airflow_provider_linkstats.client.errors import (
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsServerError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.generations import Generation
from airflow_provider_linkstats.client.validation import normalize_domain

log = logging.getLogger(__name__)


@contextlib.contextmanager
def write_errors(conn_id: str | None, record_id: Any = None, get: Callable[[], Any] | None = None) -> Iterator[None]:
    """A website write's refusals said as what to do; for an update (``record_id`` and ``get``), a
    500 confirmed by ``get()`` to be a missing website is a ``LinkstatsNotFoundError``."""
    try:
        yield
    except LinkstatsValidationError as error:
        if any("too many websites" in m.lower() for m in error.errors.get("domain", [])):
            raise error.reworded(
                f"{error.message}: the account's plan allows no more websites; delete unused websites or "
                f"upgrade the plan of the account behind connection {conn_id!r}"
            ) from error
        raise
    except LinkstatsServerError as error:
        if error.status != 500 or get is None:
            raise
        try:
            get()
        except LinkstatsNotFoundError as missing:
            raise error.reworded(
                f"no website {record_id} (the update answered HTTP 500, a GET confirmed it is missing)",
                LinkstatsNotFoundError,
                status=404,
                retry_after=None,
            ) from missing
        raise
    except LinkstatsAuthError as error:
        if error.status != 403:
            raise
        raise error.reworded(
            f"{error.message}: the account's plan has no API access (phpAnalytics 3.5+ checks the plan's api "
            f"feature); upgrade the plan, or use the key of an account whose plan includes the API "
            f"(connection {conn_id!r})"
        ) from error


def stored_key(domain: str, generation: Generation) -> str:
    """A website's domain as ``generation`` stores it: the key to look it up by."""
    return generation.stored_domain(normalize_domain(domain))


def say_stored_domain(
    fields: Mapping[str, Any], record: Any, generation: Callable[[], Generation]
) -> Any:
    """``record``, after logging when the service stored the website's domain other than as given."""
    given, stored = fields.get("domain"), record.get("domain") if isinstance(record, dict) else None
    if isinstance(given, str) and isinstance(stored, str):
        if normalize_domain(given) != stored:
            spoken = generation()
            stripped = spoken.stored_domain(normalize_domain(given)) == stored
            why = f' ({spoken.label} removes every "www.")' if stripped else ""
            log.warning(
                "Website %s: the service stored the domain %r as %r%s; use %r to find it or to create it again",
                record.get("id"),
                given,
                stored,
                why,
                stored,
            )
    return record
