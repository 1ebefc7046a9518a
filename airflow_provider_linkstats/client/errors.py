"""The exceptions the client raises: a small hierarchy a DAG author can catch by meaning."""

from __future__ import annotations

from typing import Any

# Answers worth trying again later (besides 429): the service or a proxy in front of it is
# briefly unavailable. A 500 is a bug on the server side, and sending the same request again
# gives the same answer.
RETRY_STATUSES = frozenset({502, 503, 504})


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
    """The service answered with an error status.

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one (429, 503).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.message = message
        self.retry_after = retry_after
        where = f"{method} {path} " if method else ""
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"{where}{code}{message}".strip())


class LinkstatsAuthError(LinkstatsApiError):
    """401 or 403: the API key is missing, wrong or lacks permission."""


class LinkstatsNotFoundError(LinkstatsApiError):
    """404: no record with that id."""


class LinkstatsValidationError(LinkstatsApiError):
    """422: the service rejected the input; ``errors`` maps each field to its messages."""

    def __init__(self, message: str, *, errors: dict[str, list[str]] | None = None, **kwargs: Any) -> None:
        self.errors = errors or {}
        details = describe_field_errors(self.errors)
        super().__init__(f"{message} ({details})" if details else message, **kwargs)


class LinkstatsRateLimitError(LinkstatsApiError):
    """429: too many requests; ``retry_after`` says how long the server wants us to wait."""


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


def describe_field_errors(errors: dict[str, list[str]]) -> str:
    """``domain_id: The Domain field is required.; url: ...``: each field with its messages."""
    return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())


def is_transient(error: BaseException) -> bool:
    """Whether the same request may succeed later: no answer, 429, or 502/503/504.

    The one rule for both the client's retries and the trigger's poll loop; everything else (bad
    input, 401/403, 404, 422, 500, a malformed answer) gives the same result however often sent.
    """
    if isinstance(error, LinkstatsTransportError):
        return True
    return isinstance(error, LinkstatsApiError) and (error.status == 429 or error.status in RETRY_STATUSES)


def is_permanent(error: BaseException) -> bool:
    """Whether no retry of the task can mend it: bad input, a 4xx other than 429, or a create whose
    outcome is unknown (sending it again could make a twin). Operators fail such tasks at once."""
    if isinstance(error, (LinkstatsInputError, LinkstatsOutcomeUnknownError)):
        return True
    status = error.status if isinstance(error, LinkstatsApiError) else None
    return status is not None and 400 <= status < 500 and status != 429


def transport_error(description: str, cause: BaseException, *, sent: bool) -> LinkstatsTransportError:
    """The error for a request that got no HTTP answer; names the request, never its body."""
    what = "no connection could be made" if not sent else "the answer was lost"
    return LinkstatsTransportError(f"{description}: {what} ({type(cause).__name__})", sent=sent)
