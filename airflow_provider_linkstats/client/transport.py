"""The synchronous transport: one ``requests.Session`` for the client's whole life.

It only moves bytes. It tells apart a request that never left (safe to send again, whatever the
method) from one whose answer was lost (a POST there may have taken effect).
"""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from airflow_provider_linkstats import __version__
from airflow_provider_linkstats.client.errors import LinkstatsTransportError
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse

USER_AGENT = f"airflow-provider-linkstats/{__version__}"


class RequestsTransport:
    def __init__(
        self,
        root: str,
        api_key: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        verify_ssl: bool = True,
        pool_size: int = 16,
    ) -> None:
        self.root = root
        self._timeout = (connect_timeout, read_timeout)
        self._session = requests.Session()
        self._session.verify = verify_ssl
        self._session.trust_env = False  # proxies and .netrc from the environment must not see our key
        self._session.headers.update(
            {"Authorization": f"Bearer {api_key}", "Accept": "application/json", "User-Agent": USER_AGENT}
        )
        # Retries are ours (retry.py), so the adapter makes exactly one attempt.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def __repr__(self) -> str:
        return f"RequestsTransport(root={self.root!r})"

    @property
    def api_key(self) -> str:
        """The key, kept only in the session's Authorization header (so in no attribute's repr)."""
        return str(self._session.headers["Authorization"]).removeprefix("Bearer ")

    def send(self, request: ApiRequest) -> ApiResponse:
        try:
            response = self._session.request(
                request.method,
                self.root + request.path,
                params=list(request.params) or None,
                data=list(request.form) if request.method in ("POST", "PUT") else None,
                timeout=self._timeout,
                allow_redirects=False,
            )
        except requests.ConnectTimeout as error:
            raise _transport_error(request, error, sent=False) from None
        except requests.ConnectionError as error:
            reason = getattr(error.args[0], "reason", None) if error.args else None
            never_left = isinstance(reason, (NewConnectionError, ConnectTimeoutError))
            raise _transport_error(request, error, sent=not never_left) from None
        except requests.RequestException as error:  # read timeout, truncated body, ...
            raise _transport_error(request, error, sent=True) from None
        return ApiResponse(response.status_code, response.headers, response.content)

    def close(self) -> None:
        self._session.close()


def _transport_error(request: ApiRequest, error: Exception, *, sent: bool) -> LinkstatsTransportError:
    what = "no connection could be made" if not sent else "the answer was lost"
    return LinkstatsTransportError(f"{request.describe()}: {what} ({type(error).__name__})", sent=sent)
