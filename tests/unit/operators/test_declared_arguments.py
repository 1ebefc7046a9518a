"""Operators declared once (issue 25 item 3): a resource's contract fields are the create and update
operators' arguments, template fields and ``:param`` lines, with no second list to keep in step."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from airflow_provider_linkstats.client.contract import LINKS, PIXELS, SPACES, WEBSITES, FieldSpec, Kind
from airflow_provider_linkstats.operators import base, links, pixels, spaces, websites

WRITES = [
    (links.LinkstatsCreateLinkOperator, links.LinkstatsUpdateLinkOperator, LINKS, {}),
    (
        websites.LinkstatsCreateWebsiteOperator,
        websites.LinkstatsUpdateWebsiteOperator,
        WEBSITES,
        {"email": "email_reports"},
    ),
    (spaces.LinkstatsCreateSpaceOperator, spaces.LinkstatsUpdateSpaceOperator, SPACES, {}),
    (pixels.LinkstatsCreatePixelOperator, pixels.LinkstatsUpdatePixelOperator, PIXELS, {}),
]


def parameters(cls) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(cls.__init__).parameters.items() if n not in ("self", "kwargs")}


@pytest.mark.parametrize(("create", "update", "resource", "renamed"), WRITES, ids=lambda v: getattr(v, "name", ""))
def test_create_and_update_take_the_contract_fields(create, update, resource, renamed):
    def names(operation):
        return [renamed.get(spec.name, spec.name) for spec in resource.fields_for(operation)]

    noun = resource.singular
    assert list(parameters(create)) == ["linkstats_conn_id", *names("create"), "if_exists"]
    assert list(parameters(update)) == ["linkstats_conn_id", f"{noun}_id", *names("update")]
    for spec in resource.fields_for("create"):
        name = renamed.get(spec.name, spec.name)
        default = parameters(create)[name].default
        assert (default is inspect.Parameter.empty) == spec.required_on_create, name
        assert name in create.template_fields and f":param {name}: {spec.doc}" in create.__doc__
    assert set(update.template_fields) == {"linkstats_conn_id", f"{noun}_id", *names("update")}
    assert parameters(update)[f"{noun}_id"].default is inspect.Parameter.empty


def test_a_new_contract_field_is_an_argument_of_create_and_update_with_no_other_change():
    extra = FieldSpec("title", Kind.TEXT, "The link's title.")
    resource = dataclasses.replace(LINKS, fields=(*LINKS.fields, extra))

    class Create(base.LinksServiceMixin, base.LinkstatsCreateOperatorBase):
        """Create, with a made-up field."""

        resource = dataclasses.replace(LINKS, fields=(*LINKS.fields, extra))

    class Update(base.LinksServiceMixin, base.LinkstatsUpdateOperatorBase):
        """Update, with a made-up field."""

        resource = dataclasses.replace(LINKS, fields=(*LINKS.fields, extra))

    for cls in (Create, Update):
        assert "title" in parameters(cls) and "title" in cls.template_fields
        assert ":param title: The link's title. Allowed: a non-empty string. Templated." in cls.__doc__
    created = Create(task_id="c", url="https://e.x", title="Hi")
    assert created.title == "Hi" and created.given_fields("create")["title"] == "Hi"
    assert resource.fields_for("update")[-1] is extra


def test_a_subclass_of_an_operator_keeps_its_arguments():
    class Mine(links.LinkstatsCreateLinkOperator):
        """My create."""

    task = Mine(task_id="m", url="https://e.x", alias="mine")
    assert (task.url, task.alias, task.if_exists) == ("https://e.x", "mine", "fail")
    assert parameters(Mine) == parameters(links.LinkstatsCreateLinkOperator)
    assert ":param alias:" in Mine.__doc__


def test_unknown_and_missing_arguments_fail_at_construction():
    from airflow.exceptions import AirflowException

    with pytest.raises((TypeError, AirflowException), match="(?s)Invalid arguments were passed.*domain_id"):
        links.LinkstatsUpdateLinkOperator(task_id="u", link_id=1, domain_id=2)  # domain_id: create only
    with pytest.raises((TypeError, AirflowException), match="url"):
        links.LinkstatsCreateLinkOperator(task_id="c")
    with pytest.raises((TypeError, AirflowException), match="(?s)Invalid arguments were passed.*emails"):
        websites.LinkstatsCreateWebsiteOperator(task_id="w", domain="x.com", emails="a@b.c")


def test_defaults_and_values_land_on_the_instance():
    task = links.LinkstatsCreateLinkOperator(task_id="c", url="https://e.x", alias="a", linkstats_conn_id="mine")
    assert (task.url, task.alias, task.if_exists, task.password, task.linkstats_conn_id) == (
        "https://e.x",
        "a",
        "fail",
        None,
        "mine",
    )
    delete = spaces.LinkstatsDeleteSpaceOperator(task_id="d", space_ids=[1])
    assert (delete.space_id, delete.space_ids, delete.missing_ok) == (None, [1], False)
    assert links.LinkstatsCreateLinkOperator.template_fields_renderers["country"] == "json"
