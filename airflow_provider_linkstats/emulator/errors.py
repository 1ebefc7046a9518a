"""Error answers in the real services' shapes; routes raise these and the app renders them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.emulator import spec


class ApiError(Exception):
    """An error answer with its exact JSON body (bodies differ: some carry "status", some don't)."""

    def __init__(self, status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None) -> None:
        super().__init__(str(body.get("message")))
        self.status = status
        self._body = dict(body)
        self.headers = dict(headers or {})

    def body(self) -> dict:
        return dict(self._body)


class ValidationFailed(ApiError, ValueError):
    """422 ``{"message": {field: [messages]}, "status": 422}``: phpShort's and phpAnalytics' own
    failedValidation puts the field errors in ``message``; there is no ``errors`` key."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        self.errors = {k: list(v) for k, v in errors.items()}
        super().__init__(422, {"message": self.errors, "status": 422})

    def __str__(self) -> str:
        """The field errors as a sentence (``url: The url field must be a valid URL.``), not a dict's repr."""
        return "; ".join(f"{field}: {' '.join(messages)}" for field, messages in self.errors.items())


def not_found() -> ApiError:
    return ApiError(404, {"message": spec.NOT_FOUND, "status": 404})


def website_model_not_found() -> ApiError:
    """phpAnalytics 3.x update() uses firstOrFail(): Laravel's own 404 body, without "status"."""
    return ApiError(404, {"message": spec.WEBSITE_MODEL_NOT_FOUND})


def domain_model_not_found() -> ApiError:
    """v49's link form request looks the domain up with firstOrFail() before validating."""
    return ApiError(404, {"message": spec.DOMAIN_MODEL_NOT_FOUND})


def server_error() -> ApiError:
    return ApiError(500, {"message": spec.SERVER_ERROR})


def forbidden() -> ApiError:
    return ApiError(403, {"message": spec.NO_API_ACCESS, "status": 403})
