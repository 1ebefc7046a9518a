"""The API key: held by one small object that signs requests and redacts texts.

The key flows one way: the hook hands it to ``ApiKey``, which sets the Authorization header on
every outgoing request of either transport (``requests`` and ``httpx`` both take a callable
``auth``) and removes the key from any text a server sends back. Nothing reads it back out of a
header, and no repr, str or pickle shows it.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["ApiKey"]

Request = TypeVar("Request")

REDACTED = "***"


class ApiKey:
    """A bearer token. ``ApiKey(key)(request)`` signs a request; ``redact(text)`` hides the key."""

    __slots__ = ("_key",)

    def __init__(self, key: str) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError("an API key must be a non-empty string")
        self._key = key

    def __call__(self, request: Request) -> Request:
        """Set the header on an outgoing request (``requests.PreparedRequest`` or ``httpx.Request``)."""
        request.headers["Authorization"] = f"Bearer {self._key}"  # type: ignore[attr-defined]
        return request

    def redact(self, text: str) -> str:
        return text.replace(self._key, REDACTED)

    def __repr__(self) -> str:
        return f"ApiKey({REDACTED})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiKey) and other._key == self._key

    def __hash__(self) -> int:
        return hash((ApiKey, self._key))

    def __reduce__(self) -> Any:
        # Pickling would write the key wherever the pickle goes (XCom, trigger kwargs, a cache).
        raise TypeError("an ApiKey is not picklable; pass the connection id and let the hook read the key")
