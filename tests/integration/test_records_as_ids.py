"""Every operator that takes a record id also takes the record (issue 28 item 1): ``create.output``.

Against the emulator over real HTTP; a record without a usable id is refused before any request,
naming the argument and showing the value as given.
"""

from __future__ import annotations

import pytest

from airflow_provider_linkstats.client import LinkstatsInputError
from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsGetLinkOperator,
    LinkstatsUpdateLinkOperator,
)
from airflow_provider_linkstats.operators.pixels import (
    LinkstatsDeletePixelOperator,
    LinkstatsGetPixelOperator,
    LinkstatsUpdatePixelOperator,
)
from airflow_provider_linkstats.operators.spaces import (
    LinkstatsDeleteSpaceOperator,
    LinkstatsGetSpaceOperator,
    LinkstatsUpdateSpaceOperator,
)
from airflow_provider_linkstats.operators.stats import LinkstatsLinkStatsOperator, LinkstatsWebsiteStatsOperator
from airflow_provider_linkstats.operators.websites import (
    LinkstatsDeleteWebsiteOperator,
    LinkstatsGetWebsiteOperator,
    LinkstatsUpdateWebsiteOperator,
)
from tests.conftest import fails_without_retry, run_operator


def api_calls(emu) -> int:
    return emu.stats.count(path_prefix="/public/api/v1")


def test_link_operators_take_the_record_a_create_returns(emu):
    record, _ = run_operator(LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/r", alias="rec"))
    got, _ = run_operator(LinkstatsGetLinkOperator(task_id="g", link_id=record))
    assert got["id"] == record["id"] and got["alias"] == "rec"
    changed, _ = run_operator(LinkstatsUpdateLinkOperator(task_id="u", link_id=record, url="https://example.com/new"))
    assert changed["url"] == "https://example.com/new" and emu.store.links()[0]["url"] == "https://example.com/new"
    rows, _ = run_operator(
        LinkstatsLinkStatsOperator(
            task_id="s", link_id=record, name="country", date_from="2000-01-01", date_to="2099-01-01"
        )
    )
    assert rows == []
    deleted, _ = run_operator(LinkstatsDeleteLinkOperator(task_id="d", link_id=record))
    assert deleted == record["id"] and emu.store.links() == []


def test_website_space_and_pixel_operators_take_records(emu):
    site = emu.store.add_website(domain="records.example")
    space = emu.store.add_space(name="Q4")
    pixel = emu.store.add_pixel(name="tag", type="google-ads", value="AW-1")
    as_record = {"id": str(site["id"]), "domain": "records.example"}  # the service may send the id as text
    assert run_operator(LinkstatsGetWebsiteOperator(task_id="g", website_id=as_record))[0]["id"] == site["id"]
    updated, _ = run_operator(LinkstatsUpdateWebsiteOperator(task_id="u", website_id=as_record, exclude_bots=0))
    assert updated["exclude_bots"] == 0
    rows, _ = run_operator(
        LinkstatsWebsiteStatsOperator(
            task_id="s", website_id=as_record, name="country", date_from="2000-01-01", date_to="2099-01-01"
        )
    )
    assert rows == []
    assert run_operator(LinkstatsGetSpaceOperator(task_id="g", space_id=dict(space)))[0]["name"] == "Q4"
    assert run_operator(LinkstatsUpdateSpaceOperator(task_id="u", space_id=dict(space), color=3))[0]["color"] == 3
    assert run_operator(LinkstatsGetPixelOperator(task_id="g", pixel_id=dict(pixel)))[0]["name"] == "tag"
    assert (
        run_operator(LinkstatsUpdatePixelOperator(task_id="u", pixel_id=dict(pixel), value="AW-2"))[0]["value"]
        == "AW-2"
    )
    assert run_operator(LinkstatsDeletePixelOperator(task_id="d", pixel_id=dict(pixel)))[0] == pixel["id"]
    assert run_operator(LinkstatsDeleteSpaceOperator(task_id="d", space_id=dict(space)))[0] == space["id"]
    assert run_operator(LinkstatsDeleteWebsiteOperator(task_id="d", website_id=as_record))[0] == site["id"]
    assert emu.store.websites() == []


def test_bulk_delete_takes_records_as_a_list_operator_returns_them(emu):
    records = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"many{i}") for i in range(3)]
    deleted, _ = run_operator(LinkstatsDeleteLinkOperator(task_id="d", link_ids=[dict(r) for r in records]))
    assert deleted == sorted(r["id"] for r in records) and emu.store.links() == []


def test_a_record_rendered_as_text_by_a_plain_template_is_read_back(emu):
    record = dict(emu.store.add_link(url="https://example.com/t", alias="text"))
    got, _ = run_operator(LinkstatsGetLinkOperator(task_id="g", link_id="{{ params.record }}"), record=record)
    assert got["alias"] == "text"
    other = dict(emu.store.add_link(url="https://example.com/u", alias="text2"))
    deleted, _ = run_operator(
        LinkstatsDeleteLinkOperator(task_id="d", link_ids="{{ params.records }}"), records=[record, other]
    )
    assert deleted == sorted([record["id"], other["id"]]) and emu.store.links() == []


@pytest.mark.parametrize(
    ("operator", "argument", "value", "why"),
    [
        (LinkstatsDeleteLinkOperator, "link_id", {"alias": "spring"}, "this record has no 'id'"),
        (LinkstatsGetLinkOperator, "link_id", {"id": "abc", "alias": "spring"}, "this record's 'id' is 'abc'"),
        (LinkstatsUpdateWebsiteOperator, "website_id", {"id": 0, "domain": "x.com"}, "this record's 'id' is 0"),
        (LinkstatsDeleteSpaceOperator, "space_ids", [{"id": 1}, {"name": "Q4"}], "this record has no 'id'"),
        (LinkstatsGetLinkOperator, "link_id", "{'alias': 'spring'", "a positive integer id, or a record"),
    ],
)
def test_a_record_without_a_usable_id_is_refused_naming_the_argument(emu, operator, argument, value, why):
    extra = {"exclude_bots": 1} if operator is LinkstatsUpdateWebsiteOperator else {}
    emu.stats.reset()
    with fails_without_retry(LinkstatsInputError) as caught:
        run_operator(operator(task_id="t", **{argument: value}, **extra))
    error = caught.value.__cause__
    shown = value[1] if isinstance(value, list) else value
    assert error.field == argument and error.value == shown
    assert str(error).startswith(
        f"Invalid value for {argument!r}: {shown!r}. Allowed: a positive integer id, or a record"
    )
    assert why in str(error)
    assert api_calls(emu) == 0


def test_a_dag_deletes_the_link_its_create_task_returned(emu, airflow_db):
    import importlib.util

    from tests.conftest import DAGS_FOLDER

    path = DAGS_FOLDER / "tests" / "records_as_ids.py"
    spec = importlib.util.spec_from_file_location("linkstats_test_dag_records_as_ids", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = module.dag.test()
    states = {ti.task_id: ti.state for ti in run.get_task_instances()}
    assert run.state == "success", states
    assert states == {"create": "success", "read": "success", "change": "success", "delete": "success"}
    assert emu.stats.count(method="PUT") + emu.stats.count(method="POST") == 2  # the create and the update
    assert emu.stats.count(method="DELETE") == 1
    assert emu.store.links() == []
