"""Form encoding of request fields, both ways.

The client encodes with :func:`encode_form`; the emulator decodes with :func:`decode_form`. Both
live here so that the round trip is one module's promise (and one property test's subject).

Wire format (application/x-www-form-urlencoded pairs):
- targeting rules in bracket notation: ``country[0][key]=US&country[0][value]=https://...``;
- list fields by ``contract.LIST_ENCODING``: ``pixel_ids[]=1&pixel_ids[]=2``, or one item per
  line in a single value (``exclude_ips``); an empty list clears the field (``name=``);
- integers as decimal strings, everything else as given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from airflow_provider_linkstats.client.contract import LIST_ENCODING, Kind, Resource

FormPairs = list[tuple[str, str]]

_BRACKETS = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def encode_form(values: Mapping[str, Any]) -> FormPairs:
    """Encode validated field values as ordered form pairs."""
    pairs: FormPairs = []
    for name, value in values.items():
        if isinstance(value, list) and value and isinstance(value[0], Mapping):
            for index, rule in enumerate(value):
                for part in ("key", "value"):
                    if part in rule:
                        pairs.append((f"{name}[{index}][{part}]", str(rule[part])))
        elif isinstance(value, list):
            style = LIST_ENCODING.get(name, "brackets")
            if not value:
                pairs.append((name, ""))
            elif style == "lines":
                pairs.append((name, "\n".join(str(v) for v in value)))
            else:
                pairs.extend((f"{name}[]", str(v)) for v in value)
        else:
            pairs.append((name, str(value)))
    return pairs


def decode_form(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Turn form pairs back into nested values: ``a[]`` -> list, ``a[0][key]`` -> list of dicts.

    Values stay strings; :func:`coerce_form_values` applies the contract's types.
    """
    result: dict[str, Any] = {}
    for raw_key, value in pairs:
        match = _BRACKETS.match(raw_key)
        if not match or not match.group(2):
            result[raw_key] = value
            continue
        name = match.group(1)
        parts = re.findall(r"\[([^\[\]]*)\]", match.group(2))
        if parts == [""]:
            result.setdefault(name, [])
            if isinstance(result[name], list):
                result[name].append(value)
            continue
        if len(parts) == 2 and parts[0].isdigit():
            slots = result.setdefault(name, {})
            if isinstance(slots, dict):
                slots.setdefault(int(parts[0]), {})[parts[1]] = value
            continue
        result[raw_key] = value  # a shape the contract does not use: keep it as sent
    for name, value in result.items():
        if isinstance(value, dict) and all(isinstance(k, int) for k in value):
            result[name] = [value[index] for index in sorted(value)]
    return result


def coerce_form_values(resource: Resource, decoded: Mapping[str, Any]) -> dict[str, Any]:
    """Apply the contract's list encodings to decoded form values (``lines`` -> list)."""
    out = dict(decoded)
    for spec in resource.fields:
        if spec.name not in out:
            continue
        value = out[spec.name]
        if spec.kind in (Kind.LINES, Kind.IP_LINES) and isinstance(value, str):
            out[spec.name] = [line for line in value.split("\n") if line]
        elif spec.kind is Kind.ID_LIST and value == "":
            out[spec.name] = []
        elif spec.kind is Kind.TARGETING and value == "":
            out[spec.name] = []
    return out
