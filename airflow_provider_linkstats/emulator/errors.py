"""The one exception the emulator's routes raise; the app turns it into a JSON error answer."""

from __future__ import annotations

from collections.abc import Mapping


class ApiError(Exception):
    """An error answer: ``{"message": ..., "errors": {field: [...]}}`` (errors only for 422)."""

    def __init__(self, status: int, message: str, errors: Mapping[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = dict(errors or {})

    def body(self) -> dict:
        body: dict = {"message": self.message}
        if self.errors:
            body["errors"] = self.errors
        return body


class ValidationFailed(ApiError, ValueError):
    """422 naming every bad field, worded like Laravel's validator (first message + "and N more")."""

    def __init__(self, errors: Mapping[str, list[str]]) -> None:
        messages = [m for msgs in errors.values() for m in msgs]
        message = messages[0] if messages else "The given data was invalid."
        if len(messages) > 1:
            more = len(messages) - 1
            message += f" (and {more} more error{'s' if more > 1 else ''})"
        super().__init__(422, message, errors)


def not_found(singular: str, record_id: object) -> ApiError:
    return ApiError(404, f"No {singular} with id {record_id}.")
