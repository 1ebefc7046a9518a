"""The synchronous transport: one ``requests.Session`` for the client's whole life.

It only moves bytes. It tells apart a request that never left (safe to send again, whatever the
method) from one whose answer was lost (a POST there may have taken effect), and names the URL and
the connection in every failure.
"""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError

from airflow_provider_linkstats.client.auth import ApiKey
from airflow_provider_linkstats.client.errors import transport_error
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, request_url
from airflow_provider_linkstats.client.settings import COMMON_HEADERS, ClientSettings


class RequestsTransport:
    def __init__(self, settings: ClientSettings, auth: ApiKey) -> None:
        self.root = settings.root
        self.settings = settings
        self._timeout = (settings.connect_timeout, settings.read_timeout)
        self._session = requests.Session()
        self._session.verify = settings.verify_ssl
        self._session.trust_env = False  # proxies and .netrc from the environment must not see our key
        self._session.headers.update(COMMON_HEADERS)
        self._session.auth = self._auth = auth  # signs each request; the key is in no session header
        # Retries are ours (retry.py), so the adapter makes exactly one attempt.
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=settings.pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def __repr__(self) -> str:
        return f"RequestsTransport(root={self.root!r})"

    def send(self, request: ApiRequest) -> ApiResponse:
        url = request_url(self.root, request)
        try:
            response = self._session.request(
                request.method,
                (request.root or self.root) + request.path,
                params=list(request.params) or None,
                data=list(request.form) if request.method in ("POST", "PUT") else None,
                headers=dict(request.headers) or None,
                timeout=self._timeout,
                allow_redirects=False,
            )
        except (requests.exceptions.SSLError, requests.ConnectTimeout) as error:
            raise self._failed(request, url, error, sent=False) from None
        except requests.ConnectionError as error:
            reason = getattr(error.args[0], "reason", None) if error.args else None
            never_left = isinstance(reason, (NewConnectionError, ConnectTimeoutError))
            raise self._failed(request, url, error, sent=not never_left) from None
        except requests.RequestException as error:  # read timeout, truncated body, ...
            raise self._failed(request, url, error, sent=True) from None
        return ApiResponse(
            response.status_code, response.headers, response.content, url, self.settings.conn_id, self._auth.redact
        )

    def _failed(self, request: ApiRequest, url: str, error: BaseException, *, sent: bool) -> Exception:
        settings = self.settings
        return transport_error(
            request.method, url, error, sent=sent, conn_id=settings.conn_id, scheme_assumed=settings.scheme_assumed
        )

    def close(self) -> None:
        self._session.close()
