"""The exceptions the client raises: a small hierarchy a DAG author can catch by meaning."""

from __future__ import annotations


class LinkstatsError(Exception):
    """Base class of every error raised by this provider's client."""


class LinkstatsInputError(LinkstatsError, ValueError):
    """A value was rejected before any request was sent.

    The message names the field, the bad value (masked for secret fields) and what is allowed.
    """

    def __init__(self, field: str, value: object, allowed: str, *, secret: bool = False) -> None:
        self.field = field
        self.value = "***" if secret else value
        self.allowed = allowed
        super().__init__(f"Invalid value for {field!r}: {self.value!r}. Allowed: {allowed}.")


class LinkstatsApiError(LinkstatsError):
    """The service answered with an error status."""

    def __init__(self, message: str, *, status: int | None = None, method: str = "", path: str = "") -> None:
        self.status = status
        self.method = method
        self.path = path
        self.message = message
        where = f"{method} {path} " if method else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}".strip())


class LinkstatsAuthError(LinkstatsApiError):
    """401 or 403: the API key is missing, wrong or lacks permission."""


class LinkstatsNotFoundError(LinkstatsApiError):
    """404: no record with that id."""


class LinkstatsValidationError(LinkstatsApiError):
    """422: the service rejected the input; ``errors`` maps each field to its messages."""

    def __init__(self, message: str, *, errors: dict[str, list[str]] | None = None, **kwargs: object) -> None:
        self.errors = errors or {}
        details = "; ".join(f"{f}: {' '.join(msgs)}" for f, msgs in self.errors.items())
        super().__init__(f"{message} ({details})" if details else message, **kwargs)  # type: ignore[arg-type]


class LinkstatsRateLimitError(LinkstatsApiError):
    """429: too many requests; ``retry_after`` is the server's wait in seconds, when it gave one."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: object) -> None:
        self.retry_after = retry_after
        super().__init__(message, **kwargs)  # type: ignore[arg-type]


class LinkstatsServerError(LinkstatsApiError):
    """5xx: the service failed."""


class LinkstatsResponseError(LinkstatsApiError):
    """A success status with a body that is not what the API returns (malformed or unexpected)."""


class LinkstatsTransportError(LinkstatsError):
    """The request did not get an HTTP answer (refused, reset, timed out).

    ``sent`` is False when the request certainly never reached the server (connection refused or
    connect timeout), so even a create may be repeated safely.
    """

    def __init__(self, message: str, *, sent: bool) -> None:
        self.sent = sent
        super().__init__(message)


class LinkstatsOutcomeUnknownError(LinkstatsError):
    """A create was sent but its answer was lost, and it could not be reconciled.

    The record may or may not exist. Repeating the call blindly could create a twin, so the
    client stops here; give the record an alias (links) or use its domain (websites) so that a
    retry can look it up instead.
    """
