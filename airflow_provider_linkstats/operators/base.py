"""What every Linkstats operator shares: the hook, secret masking, validation, field docs.

Operator modules are imported by the scheduler at every DAG parse, so nothing here imports an
HTTP library or the hooks module at module level.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

from airflow.providers.common.compat.sdk import BaseOperator

from airflow_provider_linkstats.client.contract import Resource
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.validation import validate_fields, validate_list_params
from airflow_provider_linkstats.lineage import LinkstatsLineageMixin

IF_EXISTS_CHOICES = ("fail", "skip", "update")


class LinkstatsBaseOperator(BaseOperator):
    """Base of the Linkstats operators.

    :param linkstats_conn_id: the Airflow connection (templated); defaults to the service's
        default connection id.
    """

    resource: Resource
    hook_class_name: str  # name in hooks/linkstats.py, imported when the task runs
    # Operator argument -> API field, where the two differ (BaseOperator owns ``email``).
    field_arguments: dict[str, str] = {}
    ui_color = "#e8f4fd"

    def __init__(self, *, linkstats_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.linkstats_conn_id = linkstats_conn_id

    @cached_property
    def hook(self) -> Any:
        from airflow_provider_linkstats.hooks import linkstats

        return getattr(linkstats, self.hook_class_name)(self.linkstats_conn_id)

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
        """The API fields this task sets (None means "not given"), validated for ``operation``."""
        values = {}
        for spec in self.resource.fields_for(operation):
            value = getattr(self, self._argument_for(spec.name), None)
            if value is not None:
                values[spec.name] = value
        validate_fields(self.resource, operation, values)
        return values

    def given_filters(self, names: Iterable[str]) -> dict[str, Any]:
        filters = {name: getattr(self, name) for name in names if getattr(self, name) is not None}
        return validate_list_params(self.resource, filters)


def check_choice(field: str, value: Any, choices: Sequence[Any]) -> Any:
    if value not in choices:
        raise LinkstatsInputError(field, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def check_bool(field: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise LinkstatsInputError(field, value, "True or False")


def check_max_items(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LinkstatsInputError("max_items", value, "a non-negative integer, or None for all")
    return value


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


def assign_arguments(operator: BaseOperator, arguments: dict[str, Any], names: Iterable[str]) -> None:
    """Store the named constructor arguments as attributes (the template fields read them)."""
    for name in names:
        setattr(operator, name, arguments[name])


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

    def execute(self, context: Any) -> dict[str, Any]:
        if_exists = check_choice("if_exists", self.if_exists, IF_EXISTS_CHOICES)
        fields = self.prepare_fields()
        noun, key_name = self.resource.singular, self.resource.natural_key
        key = fields.get(key_name)
        existing = self.hook.find(str(key), fields.get("domain_id")) if key is not None else None
        if existing is None:
            record = self.hook.create_record(fields)
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
            record = self.hook.update_record(existing["id"], changes)
            self.log.info("%s with %s %r exists (id=%s); updated", noun, key_name, key, existing.get("id"))
        self.touched_ids = (record["id"],)
        self.after_write(record, context)
        return record

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        """Hook for subclasses (links push the short URL for their extra link)."""


class LinkstatsGetOperatorBase(LinkstatsBaseOperator):
    id_argument: str

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.validation import validate_id

        record_id = validate_id(getattr(self, self.id_argument), self.id_argument)
        return self.hook.get_record(record_id)


class LinkstatsUpdateOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Send only the fields given; a field left as None is not sent and stays as it is."""

    id_argument: str

    def prepare_fields(self) -> dict[str, Any]:
        return self.given_fields("update")

    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.validation import validate_id

        record_id = validate_id(getattr(self, self.id_argument), self.id_argument)
        fields = self.prepare_fields()
        if not fields:
            accepted = ", ".join(spec.name for spec in self.resource.fields_for("update"))
            raise LinkstatsInputError("fields", {}, f"at least one field to change: {accepted}")
        record = self.hook.update_record(record_id, fields)
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

    def __init__(self, *, missing_ok: bool = False, max_workers: int = 8, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.missing_ok = missing_ok
        self.max_workers = max_workers

    def execute(self, context: Any) -> int | list[int]:
        from airflow_provider_linkstats.client.validation import validate_id

        missing_ok = check_bool("missing_ok", self.missing_ok)
        single, many = getattr(self, self.id_argument), getattr(self, self.ids_argument)
        if (single is None) == (many is None):
            raise LinkstatsInputError(
                f"{self.id_argument}/{self.ids_argument}", (single, many), "exactly one of the two"
            )
        if single is not None:
            record_id = validate_id(single, self.id_argument)
            deleted = self.hook.delete_record(record_id, missing_ok=missing_ok)
            self.touched_ids = (record_id,)
            self.log.info(
                "%s id=%s %s", self.resource.singular, record_id, "deleted" if deleted else "was already gone"
            )
            return record_id
        return self._delete_many(many, missing_ok)

    def _delete_many(self, many: Any, missing_ok: bool) -> list[int]:
        from airflow_provider_linkstats.client.validation import validate_id
        from airflow_provider_linkstats.operators.bulk import MAX_WORKERS_LIMIT, delete_many

        if isinstance(many, str):  # a template rendered without native types: "[1, 2]" or "1,2"
            from airflow_provider_linkstats.client.validation import split_list

            many = split_list(many)
        if isinstance(many, (bytes, dict)) or not hasattr(many, "__iter__"):
            raise LinkstatsInputError(self.ids_argument, many, "a list of positive integer ids")
        workers = self.max_workers
        if isinstance(workers, str) and workers.strip().isdigit():
            workers = int(workers)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS_LIMIT:
            raise LinkstatsInputError("max_workers", workers, f"an integer from 1 to {MAX_WORKERS_LIMIT}")
        ids = list(dict.fromkeys(validate_id(value, self.ids_argument) for value in many))
        result = delete_many(
            lambda record_id: self.hook.delete_record(record_id, missing_ok=missing_ok),
            ids,
            max_workers=workers,
            noun=self.resource.name,
            log=self.log,
        )
        if result.failed:
            from airflow.providers.common.compat.sdk import AirflowException

            sample = "; ".join(f"id {i}: {why}" for i, why in sorted(result.failed.items())[:5])
            raise AirflowException(
                f"{len(result.failed)} of {len(ids)} {self.resource.name} could not be deleted "
                f"({len(result.deleted)} deleted). First failures: {sample}"
            )
        self.touched_ids = tuple(sorted(result.deleted + result.already_gone))
        return list(self.touched_ids)


class LinkstatsListOperatorBase(LinkstatsBaseOperator):
    """Walk every page of a listing (per_page 100 unless given) and return the records.

    The task log gets a count, not the records.
    """

    def __init__(self, *, max_items: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.max_items = max_items

    def execute(self, context: Any) -> list[dict[str, Any]]:
        filters = self.given_filters(spec.name for spec in self.resource.list_params)
        max_items = check_max_items(self.max_items)
        records = list(self.hook.iter_records(filters, max_items))
        shown = ", ".join(f"{k}={v!r}" for k, v in filters.items()) or "no filters"
        self.log.info("listed %d %s (%s)", len(records), self.resource.name, shown)
        return records
