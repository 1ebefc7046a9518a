"""An operator's keyword arguments, declared once (``Argument``s, the contract's fields and query
parameters among them), and the ``__init__`` built from them. Imported at every DAG parse: only the
contract's tables and the connection types, no HTTP library.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from airflow_provider_linkstats.client.contract import Kind, Resource, StatsSpec
from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES

REQUIRED = inspect.Parameter.empty


class Argument:
    """One keyword argument of an operator. A plain class: a dataclass costs about half a millisecond
    to define, at every DAG parse."""

    __slots__ = ("name", "doc", "default", "annotation", "templated", "renderer")

    def __init__(
        self,
        name: str,
        doc: str,
        default: Any = None,  # REQUIRED: no default
        annotation: str = "Any",
        templated: bool = True,
        renderer: str | None = None,  # how the UI shows the rendered value ("json"), if not as text
    ) -> None:
        self.name, self.doc, self.default = name, doc, default
        self.annotation, self.templated, self.renderer = annotation, templated, renderer

    def __repr__(self) -> str:
        return f"Argument({self.name!r}, default={self.default!r}, annotation={self.annotation!r})"

    def param_line(self, note: str = "") -> str:
        text = " ".join(part for part in (self.doc, note, "Templated." if self.templated else "") if part)
        return f"    :param {self.name}: {text}"

    def parameter(self) -> inspect.Parameter:
        optional = "" if self.default is REQUIRED or self.default is not None else " | None"
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=self.default, annotation=self.annotation + optional
        )


def _annotation(kind: Kind, choices: tuple = ()) -> str:
    """The type a user passes for a field of ``kind`` (before rendering a template may give text)."""
    if kind is Kind.CHOICE:
        if choices and all(isinstance(choice, int) for choice in choices):
            return "int | bool" if set(choices) == {0, 1} else "int"
        return "str"
    return _ANNOTATIONS.get(kind, "str")


_ANNOTATIONS = {
    Kind.ID: "int | str",
    Kind.ID_LIST: "Sequence[int]",
    Kind.POSITIVE_INT: "int | str",
    Kind.DATETIME: "datetime | timedelta | str",
    Kind.TARGETING: "Sequence[dict[str, str]]",
    Kind.LINES: "Sequence[str]",
    Kind.IP_LINES: "Sequence[str]",
}
RECORD_ANNOTATION = "int | str | dict[str, Any]"


def field_arguments(resource: Resource, operation: str, renamed: Mapping[str, str]) -> tuple[Argument, ...]:
    """The contract's fields of ``resource`` for ``operation``, as arguments (``renamed``: argument -> field)."""
    reverse = {api: arg for arg, api in renamed.items()}
    arguments = []
    for spec in resource.fields_for(operation):
        name = reverse.get(spec.name, spec.name)
        required = operation == "create" and spec.required_on_create
        alias_note = f" (API field ``{spec.name}``)" if name != spec.name else ""
        doc = f"{spec.doc}{alias_note} Allowed: {spec.allowed()}.{' Required.' if required else ''}"
        renderer = "json" if spec.kind is Kind.TARGETING else None
        default = REQUIRED if required else None
        arguments.append(Argument(name, doc, default, _annotation(spec.kind, spec.choices), renderer=renderer))
    return tuple(arguments)


def filter_arguments(resource: Resource | StatsSpec) -> tuple[Argument, ...]:
    """A listing's query parameters (the contract's), as arguments."""
    arguments = []
    for spec in resource.list_params:
        default = f" Service default: {spec.default!r}." if spec.default is not None else ""
        doc = f"{spec.doc} Allowed: {spec.allowed()}.{default}"
        arguments.append(Argument(spec.name, doc, annotation=_annotation(spec.kind, spec.choices)))
    return tuple(arguments)


def conn_doc(conn_type: str) -> str:
    """The ``linkstats_conn_id`` text; the default is the hook's, from one table."""
    return f"connection id (default: the hook's, ``{CONNECTION_TYPES[conn_type][2]}``)."


def build_init(cls: type, arguments: tuple[Argument, ...]) -> Callable[..., None]:
    """An ``__init__`` taking exactly ``arguments`` (keyword-only) plus BaseOperator's ``**kwargs``: a
    missing required one is a TypeError, an unknown one BaseOperator's; Airflow reads the signature."""
    own = tuple(argument for argument in arguments if argument.name != "linkstats_conn_id")
    required = [argument.name for argument in arguments if argument.default is REQUIRED]

    def __init__(self: Any, **kwargs: Any) -> None:
        missing = [name for name in required if name not in kwargs]
        if missing:
            listed = ", ".join(map(repr, missing))
            raise TypeError(f"{cls.__name__}() missing required keyword argument{'s' * (len(missing) > 1)}: {listed}")
        values = {argument.name: kwargs.pop(argument.name, argument.default) for argument in own}
        super(cls, self).__init__(**kwargs)
        for name, value in values.items():
            setattr(self, name, value)
        self.mask_secrets()

    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    rest = inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD, annotation="Any")
    parameters = [self_parameter, *(argument.parameter() for argument in arguments), rest]
    __init__.__signature__ = inspect.Signature(parameters, return_annotation="None")  # type: ignore[attr-defined]
    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    __init__.__module__ = cls.__module__
    return __init__
