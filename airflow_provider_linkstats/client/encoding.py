"""Form encoding of request fields, both ways.

The emulator decodes these bodies with its own reading of PHP's rules (``emulator/formdata.py``),
and a property test checks every pair the client sends against that decoder.

Wire format (application/x-www-form-urlencoded pairs):
- targeting rules in bracket notation: ``country[0][key]=US&country[0][value]=https://...``;
- list fields by ``contract.LIST_ENCODING``: ``pixel_ids[]=1&pixel_ids[]=2``, or one item per
  line in a single value (``exclude_ips``); an empty list clears the field (``name=``);
- integers as decimal strings, everything else as given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client.contract import LIST_ENCODING

FormPairs = list[tuple[str, str]]

_BRACKETS = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def encode_form(values: Mapping[str, Any]) -> FormPairs:
    """Encode validated field values as ordered form pairs."""
    pairs: FormPairs = []
    for name, value in values.items():
        if isinstance(value, list):
            pairs += _list_pairs(name, value)
        else:
            pairs.append((name, str(value)))
    return pairs


def _list_pairs(name: str, value: list[Any]) -> FormPairs:
    """A list field: targeting rules by index and part, else as its ``LIST_ENCODING`` says (``name[]``
    per item, or one item per line); an empty list clears the field."""
    if not value:
        return [(name, "")]
    if isinstance(value[0], Mapping):  # targeting rules: name[0][key], name[0][value], ...
        parts = ("key", "value")
        return [(f"{name}[{i}][{key}]", str(rule[key])) for i, rule in enumerate(value) for key in parts if key in rule]
    if LIST_ENCODING.get(name, "brackets") == "lines":
        return [(name, "\n".join(str(v) for v in value))]
    return [(f"{name}[]", str(v)) for v in value]
