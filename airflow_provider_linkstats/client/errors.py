"""The exceptions the client raises: a small hierarchy a DAG author can catch by meaning."""

from __future__ import annotations

import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

# Answers worth trying again later (besides 429): the service or a proxy in front of it is
# briefly unavailable. A 500 is a bug on the server side, and sending the same request again
# gives the same answer.
RETRY_STATUSES = frozenset({502, 503, 504})
TRANSIENT_STATUSES = RETRY_STATUSES | {429}  # and a 429: every answer waited out and sent again


class LinkstatsError(Exception):
    """Base class of every error raised by this provider's client."""


class LinkstatsInputError(LinkstatsError, ValueError):
    """A value was rejected before any request was sent.

    The message names the field, the bad value (masked for secret fields) and what is allowed.
    """

    def __init__(
        self, field: str, value: object, allowed: str, *, secret: bool = False, message: str | None = None
    ) -> None:
        self.field = field
        self.value = "***" if secret else value
        self.allowed = allowed
        # ``message``: the whole text instead, for an error listing several problems (a bulk launch's rows).
        text = f"Invalid value for {field!r}: {shorten(self.value)}. Allowed: {full_stop(allowed)}"
        super().__init__(message or text)

    def sentence(self) -> str:
        """This error as one sentence, to stand among others (one full stop, at its end)."""
        return f"invalid value for {self.field!r}: {shorten(self.value)}; allowed: {full_stop(self.allowed)}"


class LinkstatsConfigError(LinkstatsError):
    """The Airflow connection is missing or not set up for this hook: no request can mend it."""


class LinkstatsApiError(LinkstatsError):
    """The service answered with an error status.

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one (429, 503). The
    text names the method, the full URL tried (``url``; ``path`` is relative to the API root), the
    Airflow connection (``conn_id``) and, where one is likely, the fix (``hint``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        method: str = "",
        path: str = "",
        retry_after: float | None = None,
        url: str = "",
        conn_id: str | None = None,
        hint: str = "",
    ) -> None:
        self.status = status
        self.method = method
        self.path = path
        self.url = url or path
        self.conn_id = conn_id
        self.hint = hint
        self.message = message
        self.retry_after = retry_after
        where = f"{method} {self.url} " if method else ""
        code = f"HTTP {status}: " if status is not None else ""
        text = f"{where}{code}{message}".strip()
        if conn_id:
            text += f" [connection {conn_id!r}]"
        if hint:
            text += f". {hint}"
        super().__init__(text)

    def reworded(self, message: str, kind: type[LinkstatsApiError] | None = None, **changes: Any) -> LinkstatsApiError:
        """This error saying ``message`` instead, as ``kind`` (default: its own class), keeping where it
        happened (method, URL, connection), its status and ``Retry-After`` unless ``changes`` sets them.
        For a hook that knows the likely fix better than the client did, so the client's generic
        ``hint`` is dropped (the message says the fix); raise it ``from`` this one. A 422's field
        errors are kept, and described once: ``message`` usually starts with this one's."""
        where = {name: getattr(self, name) for name in ("status", "method", "path", "retry_after", "url", "conn_id")}
        cls = kind or type(self)
        error = cls.__new__(cls)
        error.__dict__.update(self.__dict__)  # a 422's ``errors`` among them
        LinkstatsApiError.__init__(error, message, **{**where, **changes})
        return error


class LinkstatsAuthError(LinkstatsApiError):
    """401 or 403: the API key is missing, wrong or lacks permission."""


class LinkstatsNotFoundError(LinkstatsApiError):
    """404: no record with that id."""


class LinkstatsRouteMissError(LinkstatsApiError):
    """404 from outside the API (a wrong Base URL or path): not "no such record", so never taken as
    a record that is gone (a delete with ``missing_ok``, a watched link) but as a setting to fix."""


class LinkstatsValidationError(LinkstatsApiError):
    """422: the service rejected the input; ``errors`` maps each field to its messages."""

    def __init__(self, message: str, *, errors: dict[str, list[str]] | None = None, **kwargs: Any) -> None:
        self.errors = errors or {}
        details = describe_field_errors(self.errors)
        super().__init__(f"{message} ({details})" if details else message, **kwargs)


class LinkstatsExistsError(LinkstatsValidationError):
    """A create with ``if_exists="fail"`` met a record with the same natural key (``record_id``;
    ``record``: the record itself, when a create whose outcome was unknown found it older than its send)."""

    record_id: object = None
    record: dict | None = None


class LinkstatsConflictError(LinkstatsExistsError):
    """The record under the natural key asked is another's: it differs in what identifies it (a
    link's long URL, a website's domain). Nothing was written to it; ``if_exists="update"`` would
    overwrite it, another alias or domain avoids it."""


class LinkstatsWriteMismatchError(LinkstatsApiError):
    """A create or update was answered 2xx, but the record does not hold what was sent.

    The install ignored a field: it is not the version the request was written for (an upgrade,
    a wrong ``api_version``). ``differences`` lists the fields (``verify.Difference``),
    ``record_id`` the record, ``believed`` the version assumed. Not permanent unless the version
    was pinned: the retry learns the version again and brings the record to what was asked.
    """

    differences: tuple = ()
    record_id: object = None
    believed: str = ""
    detail: str = ""  # the message without its leading fix
    permanent: bool = False

    @property
    def field(self) -> str:
        return self.differences[0].field if self.differences else ""


class LinkstatsRateLimitError(LinkstatsApiError):
    """429: too many requests; ``retry_after`` says how long the server wants us to wait."""


class LinkstatsServerError(LinkstatsApiError):
    """5xx: the service failed."""


class LinkstatsResponseError(LinkstatsApiError):
    """A success status with a body that is not what the API returns (malformed or unexpected)."""


class LinkstatsTransportError(LinkstatsError):
    """The request did not get an HTTP answer (refused, reset, timed out).

    ``sent`` is False when the request certainly never reached the server (connection refused or
    connect timeout), so even a create may be repeated safely. ``transient`` is False when trying
    again cannot help (a TLS handshake that failed: a wrong scheme or certificate).
    """

    def __init__(self, message: str, *, sent: bool, transient: bool = True) -> None:
        self.sent = sent
        self.transient = transient
        super().__init__(message)


class LinkstatsOutcomeUnknownError(LinkstatsError):
    """A create was sent but its answer was lost (or a gateway answered 502/503/504 in its place),
    and it could not be reconciled: the look-up failed too, or found several candidates.

    The record may or may not exist. Repeating the call blindly could create a twin, so the
    client stops here; check the service before retrying. A link with an alias (or a website, by
    its domain) is looked up by it, which is never ambiguous.

    ``retry_looks_first``: nothing was found within the late-commit window, and the task's retry
    finds the record before creating again (a create refused as taken, a look-up by name), taking
    it as its own by its ``created_at``: such a task is left to its retries.
    """

    retry_looks_first: bool = False


def describe_field_errors(errors: dict[str, list[str]]) -> str:
    """``domain_id: The Domain field is required.; url: ...``: each field with its messages."""
    return "; ".join(f"{name}: {' '.join(messages)}" for name, messages in errors.items())


def is_transient(error: BaseException) -> bool:
    """Whether the same request may succeed later: no answer, 429, or 502/503/504.

    The one rule for both the client's retries and the trigger's poll loop; everything else (bad
    input, 401/403, 404, 422, 500, a malformed answer) gives the same result however often sent.
    """
    if isinstance(error, LinkstatsTransportError):
        return error.transient
    return isinstance(error, LinkstatsApiError) and error.status in TRANSIENT_STATUSES


def is_permanent(error: BaseException) -> bool:
    """Whether no retry of the task can mend it: bad input, a 4xx other than 429, or a create whose
    outcome is unknown (sending it again could make a twin), a connection that is missing or of the
    wrong type, a TLS handshake that failed. Operators fail such tasks at once."""
    if isinstance(error, LinkstatsOutcomeUnknownError) and error.retry_looks_first:
        return False  # the task's retry looks for the record before creating: no twin
    never_mended = (LinkstatsInputError, LinkstatsOutcomeUnknownError, LinkstatsConfigError, LinkstatsExistsError)
    if isinstance(error, never_mended) or getattr(error, "permanent", False):
        return True
    if isinstance(error, LinkstatsTransportError):
        return not error.transient
    status = error.status if isinstance(error, LinkstatsApiError) else None
    return status is not None and 400 <= status < 500 and status != 429


def transport_error(
    method: str,
    url: str,
    cause: BaseException,
    *,
    sent: bool,
    conn_id: str | None = None,
    scheme_assumed: bool = False,
) -> LinkstatsTransportError:
    """The error for a request that got no HTTP answer, saying what to check.

    Names the request (method and URL, never the body), the host and port, the connection, and for
    the causes a retry cannot mend (TLS handshake, unknown host name) what to write instead.
    """
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"{parts.hostname}:{port}"
    where = f"{method} {url}"
    conn = f" (connection {conn_id!r})" if conn_id else ""
    kind = _cause_kind(cause)
    if kind == "tls" and not sent:  # a TLS failure after sending is a lost answer, handled below
        fix = (
            f"the Base URL of connection {conn_id!r} has no scheme, so https was assumed; write it with its "
            f"scheme: http://{host} if the service speaks plain HTTP there, else https://{host}"
            if scheme_assumed
            else "check the Base URL's scheme (http:// for a plain-HTTP service), the certificate, or the "
            "verify_ssl extra"
        )
        return LinkstatsTransportError(
            f"{where}: the TLS handshake with {host} failed ({type(cause).__name__}){conn}; {fix}",
            sent=False,
            transient=False,
        )
    if kind in _UNREACHABLE:
        why = _UNREACHABLE[kind].format(name=parts.hostname, conn=conn)
        return LinkstatsTransportError(f"{where}: no connection could be made to {host}: {why}", sent=False)
    what = f"no connection could be made to {host}" if not sent else "the answer was lost"
    return LinkstatsTransportError(f"{where}: {what} ({type(cause).__name__}){conn}", sent=sent)


_UNREACHABLE = {  # what a connection that could not be made says, by ``_cause_kind``
    "dns": "the host name {name!r} does not resolve{conn}; check the Base URL's host",
    "refused": "connection refused, nothing listens there{conn}; check the Base URL's host and port, and that the "
    "service is running",
}
# The causes ``_cause_kind`` tells: by class, or by the class's name (urllib3's, without importing it).
_CAUSES = (("tls", ssl.SSLError, "SSLError"), ("dns", socket.gaierror, "NameResolutionError"),
           ("refused", ConnectionRefusedError, None))  # fmt: skip


def _cause_kind(error: BaseException) -> str:
    """"tls", "dns", "refused" or "": what the chain of causes of a transport error says."""
    seen: set[int] = set()
    todo: list[object] = [error]
    while todo:
        item = todo.pop()
        if not isinstance(item, BaseException) or id(item) in seen:
            continue
        seen.add(id(item))
        kind = next((kind for kind, cls, name in _CAUSES if isinstance(item, cls) or type(item).__name__ == name), "")
        if kind:
            return kind
        todo.extend((item.__cause__, item.__context__, getattr(item, "reason", None), *item.args[:1]))
    return ""


def full_stop(text: str) -> str:
    """``text`` ending in one full stop: a text that ends a sentence already gets none more."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else f"{text}."


MAX_ECHO = 80  # characters of a bad value shown in an error: enough to recognise it


def shorten(value: object) -> str:
    """``repr(value)``, cut to MAX_ECHO characters with the full length said, so a long value is never echoed whole."""
    text = repr(value)
    if len(text) <= MAX_ECHO:
        return text
    sized = isinstance(value, (str, bytes, list, tuple, dict))
    size = f"{len(value)} {'characters' if isinstance(value, (str, bytes)) else 'items'}" if sized else "cut"  # type: ignore[arg-type]
    return f"{text[:MAX_ECHO]}... ({size})"
