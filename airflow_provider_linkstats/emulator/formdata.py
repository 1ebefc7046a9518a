"""Request bodies and query strings decoded the way PHP fills ``$_POST``/``$_GET``.

``country[0][key]=US`` nests, ``pixel_ids[]=5`` appends, a repeated plain name keeps the last
value, and dots or spaces in a top-level name become underscores. PHP arrays are ordered maps:
they are dicts here (keys are str, or int when numeric), so a scalar and an array stay distinct,
which matters: a scalar ``pixel_ids`` is what crashes the real service.

Laravel's middleware then trims every string and turns ``""`` into null (``None``).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl

PhpArray = dict  # str|int -> str | None | PhpArray

_BRACKETS = re.compile(r"\[([^\[\]]*)\]")


def decode(raw: bytes | str) -> PhpArray:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    out: PhpArray = {}
    for name, value in parse_qsl(text, keep_blank_values=True):
        _put(out, name, value)
    return _laravel_input(out)


def decode_body(body: bytes, content_type: str) -> PhpArray:
    """A form body, or a JSON object (Laravel merges either into the input)."""
    if "json" in content_type.lower():
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return {}
        return _laravel_input(_from_json(data)) if isinstance(data, dict) else {}
    return decode(body)


def _put(out: PhpArray, name: str, value: str) -> None:
    first = name.find("[")
    base, rest = (name, "") if first < 0 else (name[:first], name[first:])
    base = base.replace(".", "_").replace(" ", "_")
    if not base:
        return
    keys: list[str] = []
    position = 0
    for match in _BRACKETS.finditer(rest):
        if match.start() != position:
            break  # PHP stops at the first malformed bracket
        keys.append(match.group(1))
        position = match.end()
    if not keys:
        out[base] = value
        return
    node = out
    path = [base, *keys]
    for index, name_part in enumerate(path):
        last = index == len(path) - 1
        key: str | int = name_part
        if name_part == "" and index:
            key = _next_index(node)
        elif name_part.lstrip("-").isdigit() and index:
            key = int(name_part)
        if last:
            node[key] = value
        else:
            child = node.get(key)
            if not isinstance(child, dict):
                child = node[key] = {}
            node = child


def _next_index(node: PhpArray) -> int:
    numbers = [k for k in node if isinstance(k, int)]
    return max(numbers) + 1 if numbers else 0


def _from_json(value: Any) -> Any:
    if isinstance(value, list):
        return {i: _from_json(v) for i, v in enumerate(value)}
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _laravel_input(value: Any) -> Any:
    """TrimStrings then ConvertEmptyStringsToNull, recursively."""
    if isinstance(value, dict):
        return {k: _laravel_input(v) for k, v in value.items()}
    if isinstance(value, str):
        value = value.strip()
        return value or None
    return value


def is_array(value: Any) -> bool:
    return isinstance(value, dict)


def values(array: Any) -> list[Any]:
    """A PHP array's values in order (array_values)."""
    return list(array.values()) if isinstance(array, dict) else []
