"""Create first, reconcile on conflict: what "already taken" looks like, and what to do about it.

Links (alias) and websites (domain) have a natural key the service itself keeps unique: a create
with a taken one is refused with a 422 whose field errors name that field. That refusal is the
cheap signal, so a create with ``if_exists`` is sent first and the record is looked up only when
the service says the key is taken (or when the create's answer was lost, which ``LinkstatsClient
.create`` reconciles itself). The refusal is recognised by the FIELD it names, never by its text:
installs answer in their own language.

Spaces, pixels and domains have names the service does not keep unique (two spaces may share a
name), so for them the look-up still comes first: a create would make a twin.

Nothing here does I/O.
"""

from __future__ import annotations

from typing import Any

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.errors import LinkstatsValidationError

IF_EXISTS_CHOICES = ("fail", "skip", "update")

# Resources whose natural key the service refuses twice (a 422 naming the field): create first.
SERVICE_UNIQUE = frozenset({LINKS.name, WEBSITES.name})

CREATED, SKIPPED, UPDATED = "created", "skipped", "updated"


def creates_first(resource: Resource) -> bool:
    """Whether a create with ``if_exists`` is sent before any look-up (the service refuses a taken key)."""
    return resource.name in SERVICE_UNIQUE


def is_taken(error: BaseException, resource: Resource) -> bool:
    """A 422 whose field errors name the resource's natural key (``alias``, ``domain``), in any language."""
    if not isinstance(error, LinkstatsValidationError) or not creates_first(resource):
        return False
    return resource.natural_key in error.errors


def updatable(resource: Resource, fields: dict[str, Any]) -> dict[str, Any]:
    """The create's fields an update may send (the domain of a link or website cannot change)."""
    names = {spec.name for spec in resource.fields_for("update")}
    return {name: value for name, value in fields.items() if name in names}
