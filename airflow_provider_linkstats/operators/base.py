"""What every Linkstats operator shares: the hook, failing fast (or the retry policy), masking, the
arguments, the service mixins and the five operations written once.

Imported at every DAG parse: nothing here imports an HTTP library, the hooks or the validation rules
at module level. Each operator module imports from this one (never a sibling but ``lineage`` and
``ownership``); its keyword arguments are declared once (``operators/arguments.py``), and from that
list each class gets its ``__init__``, ``template_fields`` and the ``:param`` lines of its docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from airflow.providers.common.compat.sdk import BaseOperator

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Resource
from airflow_provider_linkstats.client.settings import DEFAULT_MAX_WORKERS, POOL_SIZE
from airflow_provider_linkstats.operators.arguments import (  # operator modules import these from here
    RECORD_ANNOTATION,
    REQUIRED,
    Argument,
    build_init,
    conn_doc,
    field_arguments,
    filter_arguments,
)
from airflow_provider_linkstats.operators.lineage import LinkstatsLineageMixin

if TYPE_CHECKING:
    from airflow_provider_linkstats.hooks.linkstats import (
        LinkstatsAnalyticsHook,
        LinkstatsBaseHook,
        LinkstatsLinksHook,
    )

IF_EXISTS_CHOICES = ("fail", "skip", "update")
Execute = TypeVar("Execute", bound=Callable[..., Any])


def fails_fast(execute: Execute) -> Execute:
    """Spend no task retry on an error no retry can mend (``hooks.outcomes``' rule): on Airflow 3.3+
    the task's retry policy decides, before 3.3 such an error becomes ``AirflowFailException``."""

    @functools.wraps(execute)
    def run(self: BaseOperator, context: Any, *args: Any, **kwargs: Any) -> Any:
        from airflow_provider_linkstats.hooks.outcomes import failing_fast

        with failing_fast(uses_retry_policy(self)):
            return execute(self, context, *args, **kwargs)

    return run  # type: ignore[return-value]


def uses_retry_policy(task: Any) -> bool:
    """Whether ``task``'s retry policy decides its retries (Airflow 3.3+, in a task run); gives it ours
    if the DAG gave none. Set when the task runs: importing the policy's module at build time would
    add about 2 ms to every DAG parse."""
    if not hasattr(task, "retry_policy"):  # Airflow before 3.3
        return False
    # Only in Airflow's task runner, which consults the policy: it runs the copy prepare_for_execution()
    # made and locked for execution. Called directly (op.execute({}) in a notebook), the task fails fast.
    if not getattr(task, "_lock_for_execution", False):
        return False
    if task.retry_policy is None:
        from airflow_provider_linkstats.operators.retry_policy import AVAILABLE, LinkstatsRetryPolicy

        if not AVAILABLE:  # a common-compat provider too old to name the retry-policy classes
            return False
        task.retry_policy = LinkstatsRetryPolicy()
    return True


class LinkstatsBaseOperator(BaseOperator):
    """Base of the Linkstats operators. A concrete class (a resource and a docstring of its own) gets
    from ``declared_arguments()`` its ``__init__``, ``template_fields``, ``template_fields_renderers``
    and ``:param`` lines (``argument_notes`` adds a class's own words to an argument's line)."""

    resource: Resource
    service_conn_type: str  # set by the service mixin: whose hook, and so whose default connection
    # Operator argument -> API field, where the two differ (BaseOperator owns ``email``).
    field_arguments: dict[str, str] = {}
    argument_notes: dict[str, str] = {}
    declared: tuple[Argument, ...] = ()  # the arguments of the generated __init__, once built
    ui_color = "#e8f4fd"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        summary = cls.__dict__.get("__doc__")
        if not summary or getattr(cls, "resource", None) is None:
            return  # a base
        if "__init__" in cls.__dict__:  # a signature of its own: only the connection's line, if missing
            if ":param linkstats_conn_id:" not in summary:
                cls.__doc__ = summary.rstrip() + "\n" + cls.all_arguments()[0].param_line() + "\n"
            return
        arguments = cls.declared or cls.all_arguments()
        if not cls.declared:  # a subclass of a declared operator inherits its __init__
            cls.__init__ = build_init(cls, arguments)  # type: ignore[method-assign]
            cls.declared = arguments
        if "template_fields" not in cls.__dict__:
            cls.template_fields = tuple(argument.name for argument in arguments if argument.templated)
        if "template_fields_renderers" not in cls.__dict__:
            cls.template_fields_renderers = {a.name: a.renderer for a in arguments if a.renderer}
        lines = [argument.param_line(cls.argument_notes.get(argument.name, "")) for argument in arguments]
        cls.__doc__ = summary.rstrip() + "\n\n" + "\n".join(lines) + "\n"

    @classmethod
    def all_arguments(cls) -> tuple[Argument, ...]:
        conn = Argument("linkstats_conn_id", conn_doc(cls.service_conn_type), annotation="str")
        return (conn, *cls.declared_arguments())

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        return ()

    @classmethod
    def record_argument(cls, what: str, *, many: bool = False, default: Any = REQUIRED) -> Argument:
        """``<noun>_id`` (an id or a record), or with ``many`` ``<noun>_ids`` (ids or records)."""
        noun = cls.resource.singular
        if many:
            return Argument(f"{noun}_ids", what, annotation="Sequence[int | str | dict[str, Any]]")
        return Argument(f"{noun}_id", f"{what}: its id, or its record (``create.output``).", default, RECORD_ANNOTATION)

    def __init__(self, *, linkstats_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.linkstats_conn_id = linkstats_conn_id

    @property
    def hook(self) -> LinkstatsBaseHook:
        raise NotImplementedError

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """Render, then mask password values before anything logs them."""
        super().render_template_fields(context, jinja_env)
        self.mask_secrets()

    def mask_secrets(self) -> None:
        values = (getattr(self, self._argument_for(name), None) for name in self.resource.secret_fields)
        secrets = [value for value in values if isinstance(value, str) and value]
        if secrets:
            from airflow.providers.common.compat.sdk import mask_secret

            for value in secrets:
                mask_secret(value)

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

    def record_id(self, argument: str) -> int:
        return id_of(getattr(self, argument), argument)

    @property
    def id_argument(self) -> str:
        return f"{self.resource.singular}_id"

    @property
    def ids_argument(self) -> str:
        return f"{self.resource.singular}_ids"


RECORD_ALLOWED = "a positive integer id, or a record with one (the dict a create operator returns)"


def id_of(value: Any, argument: str) -> int:
    """A record's id from an id (int or digits) or from the record itself (``create.output``); a
    record rendered by a plain (non-native) template arrives as its text and is read back."""
    from airflow_provider_linkstats.client.errors import LinkstatsInputError
    from airflow_provider_linkstats.client.validation import validate_id

    record = _literal(value) if isinstance(value, str) and value.strip().startswith("{") else value
    if not isinstance(record, Mapping):
        try:
            return validate_id(value, argument)
        except LinkstatsInputError:
            raise LinkstatsInputError(argument, value, RECORD_ALLOWED) from None
    try:
        return validate_id(record.get("id"), argument)
    except LinkstatsInputError:
        why = f"this record's 'id' is {record['id']!r}" if "id" in record else "this record has no 'id'"
        raise LinkstatsInputError(argument, value, f"{RECORD_ALLOWED}; {why}") from None


def fail_task(message: str, errors: Iterable[BaseException]) -> NoReturn:
    """Fail the task with ``message``: for good (no retry) when no error of ``errors`` could mend."""
    from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException

    from airflow_provider_linkstats.client.errors import is_permanent

    if all(is_permanent(error) for error in errors):
        raise AirflowFailException(message)
    raise AirflowException(message)


def rendered_list(value: Any) -> Any:
    """A list a template rendered without native types (``"[1, 2]"``, ``"1,2"`` or records) read
    back; anything but text as it is."""
    from airflow_provider_linkstats.client.validation import split_list

    if not isinstance(value, str):
        return value
    listed = _literal(value) if value.strip().startswith("[") else None
    return listed if isinstance(listed, list) else split_list(value)


def _literal(text: str) -> Any:
    """The Python literal a plain template rendered (a list or a record), or None if it is not one."""
    import ast

    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


class LinksServiceMixin:
    """The links service's resource and hook."""

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
    """The analytics service's resource and hook."""

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


class _WriteOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Create and update: the fields given, checked for ``operation``, and a hook after the write."""

    operation: str

    def prepare_fields(self) -> dict[str, Any]:
        return self.given_fields(self.operation)

    def after_write(self, record: dict[str, Any], context: Any) -> None:
        """Hook for subclasses (links push the short URL for their extra link)."""


class LinkstatsCreateOperatorBase(_WriteOperatorBase):
    """Create a record; ``if_exists`` decides what a record with the same natural key (alias, domain
    or name) means, so a retried task never creates a twin (a link with another long URL under
    "skip" fails the task, nothing written to it)."""

    operation = "create"

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        if_exists = Argument("if_exists", f"what an existing {cls.resource.singular} with the same "
                             f'``{cls.resource.natural_key}`` means: "fail" (default), "skip" (return it unchanged) '
                             'or "update" (write the given fields to it).', "fail", "str")  # fmt: skip
        return (*field_arguments(cls.resource, "create", cls.field_arguments), if_exists)

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        from airflow_provider_linkstats.client.checks import check_choice

        if_exists = check_choice("if_exists", self.if_exists, IF_EXISTS_CHOICES)
        fields = self.prepare_fields()
        # Create first; the look-up and if_exists only when the service says the key is taken.
        # A record an earlier try of this task made (its worker was lost) is this task's own
        # (``ownership.is_ours``); a link without alias carries the task's own key.
        from airflow_provider_linkstats.operators.ownership import task_claim

        claim = task_claim(context)
        record, outcome = self.hook.create_or_reconcile(fields, if_exists, self.resource, claim=claim)
        if outcome == "created_earlier":
            self.log.info(
                "%s id=%s was created by an earlier try of this task", self.resource.singular, record.get("id")
            )
        else:
            self.log.info("%s %s id=%s", outcome, self.resource.singular, record.get("id"))
        self.touched_ids = (record["id"],)
        self.after_write(record, context)
        return record


class LinkstatsGetOperatorBase(LinkstatsBaseOperator):
    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        return (cls.record_argument(f"the {cls.resource.singular}"),)

    @fails_fast
    def execute(self, context: Any) -> dict[str, Any]:
        return self.hook.get_record(self.record_id(self.id_argument), self.resource)


class LinkstatsUpdateOperatorBase(_WriteOperatorBase):
    """Send only the fields given; a field left as None is not sent and stays as it is."""

    operation = "update"

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        record = cls.record_argument(f"the {cls.resource.singular} to change")
        return (record, *field_arguments(cls.resource, "update", cls.field_arguments))

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


class LinkstatsDeleteOperatorBase(LinkstatsLineageMixin, LinkstatsBaseOperator):
    """Delete one record (``<id>``) or many (``<ids>``, on a bounded thread pool); returns the id(s)
    deleted or already gone. Without ``missing_ok`` a record gone fails the task (after every other
    id of a bulk delete was tried)."""

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        noun = cls.resource.singular
        return (
            cls.record_argument(f"one {noun}", default=None),
            cls.record_argument("many ids or records, e.g. the XCom of a list task; deleted on ``max_workers`` "
                                "threads with progress lines in the log.", many=True),
            Argument("missing_ok", f"a {noun} that is already gone counts as deleted instead of failing.", False,
                     "bool", templated=False),
            Argument("max_workers", f"concurrent deletes of a bulk delete (1-{POOL_SIZE}, default "
                     f"{DEFAULT_MAX_WORKERS}).", DEFAULT_MAX_WORKERS, "int"),
        )  # fmt: skip

    @fails_fast
    def execute(self, context: Any) -> int | list[int]:
        from airflow_provider_linkstats.client.checks import check_bool
        from airflow_provider_linkstats.client.errors import LinkstatsInputError

        missing_ok = check_bool("missing_ok", self.missing_ok)
        single, many = getattr(self, self.id_argument), getattr(self, self.ids_argument)
        if single is not None and many is not None:
            raise LinkstatsInputError(
                f"{self.id_argument}/{self.ids_argument}", (single, many), "exactly one of the two"
            )
        if single is None and many is None:
            # Most often an XCom: the task that returns the id(s) failed, was skipped or returned None.
            raise LinkstatsInputError(
                f"{self.id_argument}/{self.ids_argument}",
                None,
                f"one of the two; both are None here (a value taken from another task's output is None when "
                f"that task failed, was skipped or returned nothing: check the upstream task of {self.task_id!r})",
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
        from airflow_provider_linkstats.client.errors import LinkstatsInputError
        from airflow_provider_linkstats.operators.bulk import delete_many

        many = rendered_list(many)
        if isinstance(many, (bytes, dict)) or not hasattr(many, "__iter__"):
            raise LinkstatsInputError(self.ids_argument, many, "a list of positive integer ids, or of records")
        workers = check_whole_number("max_workers", self.max_workers, minimum=1, maximum=POOL_SIZE)
        ids = list(dict.fromkeys(id_of(value, self.ids_argument) for value in many))
        result = delete_many(
            lambda record_id: self.hook.delete_record(record_id, missing_ok=missing_ok, resource=self.resource),
            ids,
            max_workers=workers,
            noun=self.resource.name,
            log=self.log,
            limiter=getattr(self.hook.client, "limiter", None),
        )
        if result.failed:
            sample = "; ".join(f"id {i}: {why}" for i, why in sorted(result.failed.items())[:5])
            message = (
                f"{len(result.failed)} of {len(ids)} {self.resource.name} could not be deleted "
                f"({len(result.deleted)} deleted). First failures: {sample}"
            )
            fail_task(message, result.errors.values())  # a retry deletes only what is left
        self.touched_ids = tuple(sorted(result.deleted + result.already_gone))
        return list(self.touched_ids)


class LinkstatsListOperatorBase(LinkstatsBaseOperator):
    """Walk every page of a listing (per_page 100 unless given) and return the records (the log gets a count)."""

    @classmethod
    def declared_arguments(cls) -> tuple[Argument, ...]:
        max_items = Argument("max_items", "stop after this many records (default: all).", annotation="int")
        return (*filter_arguments(cls.resource), max_items)

    @fails_fast
    def execute(self, context: Any) -> list[dict[str, Any]]:
        from airflow_provider_linkstats.client.checks import check_whole_number, is_blank
        from airflow_provider_linkstats.client.validation import validate_list_params

        given = {spec.name: getattr(self, spec.name) for spec in self.resource.list_params}
        filters = validate_list_params(self.resource, {k: v for k, v in given.items() if v is not None})
        max_items = None
        if not is_blank(self.max_items):
            max_items = check_whole_number(
                "max_items", self.max_items, allowed="a non-negative integer, or None for all"
            )
        records = list(self.hook.iter_records(filters, max_items, self.resource))
        shown = ", ".join(f"{k}={v!r}" for k, v in filters.items()) or "no filters"
        self.log.info("listed %d %s (%s)", len(records), self.resource.name, shown)
        return records
