"""What every Linkstats operator shares: the hook, failing fast, secret masking, field docs.

Operator modules are imported by the scheduler at every DAG parse, so nothing here imports an
HTTP library, the hooks module or the validation rules at module level: the contract's tables
(cheap, no imports) are all a DAG parse needs.

The path from operator to hook is straight: each operator module imports from this one only
(never a sibling), which holds the service mixins (which hook, which resource), the operation
bases and the shared doc text.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from airflow.providers.common.compat.sdk import BaseOperator

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS, POOL_SIZE
from airflow_provider_linkstats.connection import CONNECTION_TYPES
from airflow_provider_linkstats.lineage import LinkstatsLineageMixin

if TYPE_CHECKING:
    from airflow_provider_linkstats.hooks.linkstats import (
        LinkstatsAnalyticsHook,
        LinkstatsBaseHook,
        LinkstatsLinksHook,
    )

IF_EXISTS_CHOICES = ("fail", "skip", "update")
Execute = TypeVar("Execute", bound=Callable[..., Any])


def fails_fast(execute: Execute) -> Execute:
    """Turn an error no retry can mend into ``AirflowFailException``, so Airflow spends no task retry on it.

    The rule is ``outcomes.fail_fast``'s, shared with the sensor and the triggers.
    """

    @functools.wraps(execute)
    def run(self: BaseOperator, context: Any, *args: Any, **kwargs: Any) -> Any:
        from airflow_provider_linkstats.outcomes import failing_fast

        with failing_fast():
            return execute(self, context, *args, **kwargs)

    return run  # type: ignore[return-value]


class LinkstatsBaseOperator(BaseOperator):
    """Base of the Linkstats operators.

    :param linkstats_conn_id: the Airflow connection (templated); None (the default) lets the hook
        use its ``default_conn_name``.
    """

    resource: Resource
    service_conn_type: str  # set by the service mixin: whose hook, and so whose default connection
    # Operator argument -> API field, where the two differ (BaseOperator owns ``email``).
    field_arguments: dict[str, str] = {}
    ui_color = "#e8f4fd"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        conn_type = getattr(cls, "service_conn_type", None)
        if conn_type and cls.__doc__ and ":param linkstats_conn_id:" not in cls.__doc__:
            cls.__doc__ = cls.__doc__.rstrip() + "\n" + conn_doc(conn_type)

    def __init__(self, *, linkstats_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.linkstats_conn_id = linkstats_conn_id

    @property
    def hook(self) -> LinkstatsBaseHook:
        """The service's hook, created on first use in the worker (links or analytics)."""
        raise NotImplementedError

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render, then register password values with the secret masker before anything logs them."""
        super().render_template_fields(context, jinja_env)
        self.mask_secrets()

    def mask_secrets(self) -> None:
        from airflow.providers.common.compat.sdk import mask_secret

        for name in self.resource.secret_fields:
            value = getattr(self, self._argument_for(name), None)
            if isinstance(value, str) and value:
                mask_secret(value)

    # -- gathering and checking arguments -----------------------------------------------------

    def _argument_for(self, field_name: str) -> str:
        reverse = {api: arg for arg, api in self.field_arguments.items()}
        return reverse.get(field_name, field_name)

    def given_fields(self, operation: str) -> dict[str, Any]:
        """The API fields this task sets (None means "not given"), validated and normalised for ``operation``."""
        from airflow_provider_linkstats.client.validation import validate_fields

        values = {}
        for spec in self.resource.fields_for(operation):
            value = getattr(self, self._argument_for(spec.name), None)
            if value is not None:
                values[spec.name] = value
        return validate_fields(self.resource, operation, values)

    def given_filters(self, names: Iterable[str]) -> dict[str, Any]:
        from airflow_provider_linkstats.client.validation import validate_list_params

        filters = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        return validate_list_params(self.resource, filters)

    def record_id(self, argument: str) -> int:
        """The id argument named ``argument``, checked."""
        from airflow_provider_linkstats.client.validation import validate_id

        return validate_id(getattr(self, argument), argument)


# -- which service: the hook and the resource, for every operator of it --------------------------------


class LinksServiceMixin:
    """The links service's resource and hook (its ``default_conn_name`` when no connection id is given)."""

    resource: Resource = LINKS
    service_conn_type = "linkstats_links"
    linkstats_conn_id: str | None

    @cached_property
    def hook(self) -> LinkstatsLinksHook:
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        return LinkstatsLinksHook(self.linkstats_conn_id)


# The website field ``email`` (e-mail reports on or off) is the argument ``email_reports``, because
# ``email`` on every Airflow operator already means "where to send failure alerts".
WEBSITE_ARGUMENTS = {"email_reports": "email"}  # operator argument -> API field


class AnalyticsServiceMixin:
    """The analytics service's resource and hook (its ``default_conn_name`` when no connection id is given)."""

    resource: Resource = WEBSITES
    service_conn_type = "linkstats_analytics"
    field_arguments = WEBSITE_ARGUMENTS
    linkstats_conn_id: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _reject_email_switch(kwargs.get("email"))
        super().__init__(*args, **kwargs)

    @cached_property
    def hook(self) -> LinkstatsAnalyticsHook:
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook

        return LinkstatsAnalyticsHook(self.linkstats_conn_id)


def _reject_email_switch(value: Any) -> None:
    """``email=1`` meant the website's e-mail reports, but ``email`` is BaseOperator's alert address."""
    switch = isinstance(value, (bool, int)) or (
        isinstance(value, str) and value.strip().lower() in ("0", "1", "yes", "no", "true", "false", "on", "off")
    )
    if switch:
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        raise LinkstatsInputError(
            "email",
            value,
            "e-mail addresses for Airflow's failure alerts (BaseOperator's email); "
            "to switch the website's e-mail reports on or off use email_reports=1 or 0",
        )


# -- shared doc text ------------------------------------------------------------------------------------


def conn_doc(conn_type: str) -> str:
    """The ``linkstats_conn_id`` line of an operator's docstring; the default is the hook's, from one table."""
    return (
        f"    :param linkstats_conn_id: connection id (default: the hook's, ``{CONNECTION_TYPES[conn_type][2]}``). "
        "Templated.\n"
    )


IF_EXISTS_DOC = (
    '    :param if_exists: what an existing record with the same ``name`` means: "fail" (default),\n'
    '        "skip" (return it unchanged) or "update" (write the given fields to it). Templated.\n'
)
MAX_WORKERS_DOC = (
    f"    :param max_workers: concurrent deletes of a bulk delete (1-{POOL_SIZE}, default {DEFAULT_MAX_WORKERS}). "
    "Templated.\n"
)


def document_fields(resource: Resource, operation: str, *, renamed: dict[str, str] | None = None):
    """Class decorator: append a ``:param`` line per contract field to the operator's docstring.

    The field descriptions and allowed values come from the contract module, never retyped.
    """
    renamed = renamed or {}
    reverse = {api: arg for arg, api in renamed.items()}

    def decorate(cls: type) -> type:
        lines = []
        for spec in resource.fields_for(operation):
            name = reverse.get(spec.name, spec.name)
            alias_note = f" (API field ``{spec.name}``)" if name != spec.name else ""
            required = " Required." if operation == "create" and spec.required_on_create else ""
            lines.append(f"    :param {name}: {spec.doc}{alias_note} Allowed: {spec.allowed()}.{required} Templated.")
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n" + "\n".join(lines) + "\n"
        return cls

    return decorate


def document_filters(resource: Resource):
    def decorate(cls: type) -> type:
        lines = []
        for spec in resource.list_params:
            default = f" Service default: {spec.default!r}." if spec.default is not None else ""
            lines.append(f"    :param {spec.name}: {spec.doc} Allowed: {spec.allowed()}.{default} Templated.")
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n" + "\n".join(lines) + "\n"
        return cls

    return decorate


# -- the five operations, written once for both resources ----------------------------------------


class LinkstatsCreateOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Create a record; ``if_exists`` decides what a record with the same natural key means.

    The natural key is the alias (links) or domain (websites): with "fail" an existing one fails
    the task, with "skip" it is returned as is, with "update" the given fields are written to it.
    So a retried task never creates a twin.
    """

    def __init__(self, *, if_exists: str = "fail", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.if_exists = if_exists

    def prepare_fields(self) -> dict[str, Any]:
        return self.given_fields("create")

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import check_choice

        if_exists = check_choice("if_exists", self.if_exists, IF_EXISTS_CHOICES)
        fields = self.prepare_fields()
        noun, key_name = self.resource.singular, self.resource.natural_key
        key = fields.get(key_name)
        existing = self.hook.find(str(key), fields.get("domain_id"), self.resource) if key is not None else None
        if existing is None:
            record = self.hook.create_record(fields, self.resource)
            self.log.info("created %s id=%s", noun, record.get("id"))
        elif if_exists == "fail":
            from airflow.providers.common.compat.sdk import AirflowFailException

            raise AirflowFailException(
                f"a {noun} with {key_name} {key!r} already exists (id={existing.get('id')}); "
                f"set if_exists='skip' to reuse it or if_exists='update' to overwrite its fields"
            )
        elif if_exists == "skip":
            self.log.info("%s with %s %r exists (id=%s); skipped", noun, key_name, key, existing.get("id"))
            record = existing
        else:
            updatable = {spec.name for spec in self.resource.fields_for("update")}
            changes = {name: value for name, value in fields.items() if name in updatable}
            record = self.hook.update_record(existing["id"], changes, self.resource)
            self.log.info("%s with %s %r exists (id=%s); updated", noun, key_name, key, existing.get("id"))
        self.touched_ids = (record["id"],)
        self.after_write(record, context)
        return record

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        """Hook for subclasses (links push the short URL for their extra link)."""


class LinkstatsGetOperatorBase(LinkstatsBaseOperator):
    id_argument: str

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        return self.hook.get_record(self.record_id(self.id_argument), self.resource)


class LinkstatsUpdateOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Send only the fields given; a field left as None is not sent and stays as it is."""

    id_argument: str

    def prepare_fields(self) -> dict[str, Any]:
        return self.given_fields("update")

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        record_id = self.record_id(self.id_argument)
        fields = self.prepare_fields()
        if not fields:
            accepted = ", ".join(spec.name for spec in self.resource.fields_for("update"))
            raise LinkstatsInputError("fields", {}, f"at least one field to change: {accepted}")
        record = self.hook.update_record(record_id, fields, self.resource)
        self.touched_ids = (record_id,)
        self.log.info("updated %s id=%s: %s", self.resource.singular, record_id, ", ".join(sorted(fields)))
        self.after_write(record, context)
        return record

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        """Hook for subclasses (links push the short URL for their extra link)."""


class LinkstatsDeleteOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Delete one record (``<id>``) or many (``<ids>``, on a bounded thread pool).

    Returns the id, or the list of ids deleted or already gone. With ``missing_ok`` a record
    that no longer exists counts as deleted; without it, that fails the task (after every other
    id of a bulk delete was tried).
    """

    id_argument: str
    ids_argument: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ and ":param max_workers:" not in cls.__doc__:  # the limits written once, here
            cls.__doc__ = cls.__doc__.rstrip() + "\n" + MAX_WORKERS_DOC

    def __init__(self, *, missing_ok: bool = False, max_workers: int = DEFAULT_MAX_WORKERS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.missing_ok = missing_ok
        self.max_workers = max_workers

    @fails_fast
    def execute(self, context: Any) -> int | list[int]:
        from airflow_provider_linkstats.client.checks import check_bool
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        missing_ok = check_bool("missing_ok", self.missing_ok)
        single, many = getattr(self, self.id_argument), getattr(self, self.ids_argument)
        if (single is None) == (many is None):
            raise LinkstatsInputError(
                f"{self.id_argument}/{self.ids_argument}", (single, many), "exactly one of the two"
            )
        if single is not None:
            record_id = self.record_id(self.id_argument)
            deleted = self.hook.delete_record(record_id, missing_ok=missing_ok, resource=self.resource)
            self.touched_ids = (record_id,)
            self.log.info(
                "%s id=%s %s", self.resource.singular, record_id, "deleted" if deleted else "was already gone"
            )
            return record_id
        return self._delete_many(many, missing_ok)

    def _delete_many(self, many: Any, missing_ok: bool) -> list[int]:
        from airflow_provider_linkstats.client.checks import check_whole_number
        from airflow_provider_linkstats.client.errors import LinkstatsInputError, is_permanent
        from airflow_provider_linkstats.client.validation import split_list, validate_id
        from airflow_provider_linkstats.operators.bulk import delete_many

        if isinstance(many, str):  # a template rendered without native types: "[1, 2]" or "1,2"
            many = split_list(many)
        if isinstance(many, (bytes, dict)) or not hasattr(many, "__iter__"):
            raise LinkstatsInputError(self.ids_argument, many, "a list of positive integer ids")
        workers = check_whole_number("max_workers", self.max_workers, minimum=1, maximum=POOL_SIZE)
        ids = list(dict.fromkeys(validate_id(value, self.ids_argument) for value in many))
        result = delete_many(
            lambda record_id: self.hook.delete_record(record_id, missing_ok=missing_ok, resource=self.resource),
            ids,
            max_workers=workers,
            noun=self.resource.name,
            log=self.log,
            limiter=getattr(self.hook.client, "limiter", None),
        )
        if result.failed:
            from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

            sample = "; ".join(f"id {i}: {why}" for i, why in sorted(result.failed.items())[:5])
            message = (
                f"{len(result.failed)} of {len(ids)} {self.resource.name} could not be deleted "
                f"({len(result.deleted)} deleted). First failures: {sample}"
            )
            # A retry of the task deletes only what is left, so it is worth one unless nothing could mend it.
            if all(is_permanent(error) for error in result.errors.values()):
                raise AirflowFailException(message)
            raise AirflowException(message)
        self.touched_ids = tuple(sorted(result.deleted + result.already_gone))
        return list(self.touched_ids)


class LinkstatsListOperatorBase(LinkstatsBaseOperator):
    """Walk every page of a listing (per_page 100 unless given) and return the records.

    The task log gets a count, not the records.
    """

    def __init__(self, *, max_items: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_items = max_items

    @fails_fast
    def execute(self, context: Any) -> list[dict[str, Any]]:
        from airflow_provider_linkstats.client.checks import check_whole_number, is_blank

        filters = self.given_filters(spec.name for spec in self.resource.list_params)
        max_items = None
        if not is_blank(self.max_items):
            max_items = check_whole_number(
                "max_items", self.max_items, allowed="a non-negative integer, or None for all"
            )
        records = list(self.hook.iter_records(filters, max_items, self.resource))
        shown = ", ".join(f"{k}={v!r}" for k, v in filters.items()) or "no filters"
        self.log.info("listed %d %s (%s)", len(records), self.resource.name, shown)
        return records


class LinkstatsNamedListOperatorBase(LinkstatsListOperatorBase):
    """Listings of named records (spaces, pixels): search by name, sort by id or name."""

    def __init__(
        self,
        *,
        search: str | None = None,
        search_by: str | None = None,
        sort_by: str | None = None,
        sort: str | None = None,
        per_page: int | None = None,
        max_items: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(max_items=max_items, **kwargs)
        self.search = search
        self.search_by = search_by
        self.sort_by = sort_by
        self.sort = sort
        self.per_page = per_page
