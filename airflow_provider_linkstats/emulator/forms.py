"""Request input checked against the contract, every bad field collected into one 422.

The rules are the client's own (``client.validation.validate_value`` over the contract's field
specs); this module only adds what a server decides: which fields are required, what an empty
value means, and how errors are worded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl

from airflow_provider_linkstats.client.contract import Resource
from airflow_provider_linkstats.client.encoding import coerce_form_values, decode_form
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.validation import validate_id, validate_value
from airflow_provider_linkstats.emulator.errors import ValidationFailed

# Accepted spellings of a field, per resource and operation: the contract's create example sends
# ``domain`` where its field table says ``domain_id``.
FIELD_ALIASES = {("links", "create"): {"domain": "domain_id"}}

CLEARED = None  # on update, an empty form value clears an optional field (Laravel turns "" into null)


def parse_form(body: bytes) -> dict[str, Any]:
    """A form-encoded body as nested values (bracket notation decoded, not yet typed)."""
    return decode_form(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def clean_fields(resource: Resource, operation: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The accepted fields of ``raw``, typed; ``None`` marks a field to clear. Raises ValidationFailed.

    Fields the operation does not accept are ignored, as a Laravel controller ignores them.
    """
    raw = dict(raw)
    for alias, name in FIELD_ALIASES.get((resource.name, operation), {}).items():
        if alias in raw:
            value = raw.pop(alias)
            raw.setdefault(name, value)
    raw = coerce_form_values(resource, raw)
    # On update a record cannot lose its url/domain or alias, so "" there is checked, and fails.
    must_have = {resource.natural_key} | {f.name for f in resource.fields if f.required_on_create}
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for spec in resource.fields_for(operation):
        value = raw.get(spec.name)
        if value is None or (value == "" and operation == "create"):
            continue  # not given
        if value == "" and spec.name not in must_have:
            values[spec.name] = CLEARED
            continue
        try:
            values[spec.name] = validate_value(spec, value)
        except LinkstatsInputError as error:
            _add(errors, error)
    if operation == "create":
        for spec in resource.fields_for(operation):
            if spec.required_on_create and values.get(spec.name) is None and spec.name not in errors:
                errors[spec.name] = [f"The {spec.name} field is required."]
    if errors:
        raise ValidationFailed(errors)
    return values


def clean_list_params(resource: Resource, query: Mapping[str, str]) -> tuple[dict[str, Any], int]:
    """Listing parameters with the contract's defaults, and the page number. Raises ValidationFailed.

    Unknown parameter names are ignored; an empty value means "not given".
    """
    params = {spec.name: spec.default for spec in resource.list_params}
    errors: dict[str, list[str]] = {}
    for spec in resource.list_params:
        value = query.get(spec.name)
        if value in (None, ""):
            continue
        try:
            params[spec.name] = validate_value(spec, value)
        except LinkstatsInputError as error:
            _add(errors, error)
    page = 1
    if query.get("page") not in (None, ""):
        try:
            page = validate_id(query["page"], "page")
        except LinkstatsInputError as error:
            _add(errors, error)
    if errors:
        raise ValidationFailed(errors)
    return params, page


def field_key(name: str) -> str:
    """The client names nested values ``country[0].key``; Laravel says ``country.0.key``."""
    return re.sub(r"\[(\d+)\]", r".\1", name)


def _add(errors: dict[str, list[str]], error: LinkstatsInputError) -> None:
    key = field_key(error.field)
    errors.setdefault(key, []).append(f"The {key} field must be {error.allowed}.")
