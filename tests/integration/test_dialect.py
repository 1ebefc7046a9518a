"""One vocabulary, two phpShort generations: every argument reaches each generation under its own
name and reads back equal, or is refused before any request, naming the field and the version.

phpShort 44 and 49 are the emulator's two generations; phpShort 49 is also tests/support/v49_store.py
behind the scripted server (a small store written from REAL_SERVICE.md alone that, like a real v49
install, ignores the names it does not know), so the emulator and the client are not the only two
readings checked against each other.
"""

from __future__ import annotations

import datetime as dt
import logging
import re

import pytest

from airflow_provider_linkstats.client import LinkstatsInputError, TargetType
from airflow_provider_linkstats.client.contract import LINKS, TARGETING_FIELDS
from airflow_provider_linkstats.client.generations import PHPSHORT_44, PHPSHORT_46, generations
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import connection_json
from tests.support.v49_store import V49Links

URL = "https://example.com/landing"
END = dt.datetime(2031, 5, 1, 10, 30, tzinfo=dt.timezone.utc)
START = dt.datetime(2031, 4, 1, 8, 0, tzinfo=dt.timezone.utc)
RULES = {
    "country": [{"key": "US", "value": "https://example.com/us"}, {"key": "DE", "value": "https://example.com/de"}],
    "platform": [{"key": "Android", "value": "https://example.com/a"}],
    "language": [{"key": "fr", "value": "https://example.com/fr"}],
    "rotation": [{"value": "https://example.com/r1"}, {"value": "https://example.com/r2"}],
    "continent": [{"key": "EU", "value": "https://example.com/eu"}],
    "browser": [{"key": "Firefox", "value": "https://example.com/ff"}],
    "device": [{"key": "tablet", "value": "https://example.com/tab"}],
}
TYPE_OF = {name: kind for kind, name in TARGETING_FIELDS.items()}


def _cases(space_id: int, pixel_id: int) -> list[tuple[str, dict, dict]]:
    """(name, arguments, what the record reads back under the vocabulary's keys)."""
    cases = [
        ("alias", {"alias": "every-arg"}, {"alias": "every-arg"}),
        ("password", {"password": "visitor-pw"}, {"password": True, "privacy_password": False}),
        ("privacy_password", {"privacy": 2, "privacy_password": "stats-pw"}, {"privacy": 2, "privacy_password": True}),
        ("privacy", {"privacy": 1}, {"privacy": 1}),
        ("space_id", {"space_id": space_id}, {"space": space_id}),
        ("pixel_ids", {"pixel_ids": [pixel_id]}, {"pixels": [pixel_id]}),
        ("expiration_url", {"expiration_url": "https://example.com/over"}, {"expiration_url": "https://example.com/over"}),
        ("expiration_clicks", {"expiration_clicks": 500}, {"expiration_clicks": 500}),
        ("expires_at", {"expires_at": END}, {"expires_at": END.isoformat()}),
        (
            "starts_at",
            {"starts_at": START, "expires_at": END},
            {"starts_at": START.isoformat(), "expires_at": END.isoformat()},
        ),
        (
            "expiration_date",
            {"expiration_date": "2031-05-01", "expiration_time": "10:30"},
            {"expires_at": END.isoformat()},
        ),
        ("disabled", {"disabled": 1}, {"disabled": 1}),
        ("sensitive_content", {"sensitive_content": 1}, {"sensitive_content": 1}),
    ]
    for name, rules in RULES.items():
        kind = TYPE_OF[name]
        cases.append((name, {"target_type": int(kind), name: rules}, {"target_type": int(kind), name: rules}))
    return cases


def _read(record: dict, key: str):
    if key == "space":
        return (record.get("space") or {}).get("id")
    if key == "pixels":
        return [p["id"] for p in record.get("pixels") or []]
    return record.get(key)


def _every_argument(hook, space_id: int, pixel_id: int, sent: callable) -> dict[str, str]:
    """Each case created and read back; returns {case: "equal" | refusal text}."""
    outcomes = {}
    for index, (name, arguments, expected) in enumerate(_cases(space_id, pixel_id)):
        arguments = {"alias": f"arg-{index}", **arguments}
        before = sent()
        try:
            created = hook.create_link(URL, **arguments)
        except LinkstatsInputError as error:
            assert sent() == before, f"{name}: refused after a request"
            assert error.field in arguments and hook.dialect.label in str(error), str(error)
            outcomes[name] = "refused"
            continue
        record = hook.get_link(created["id"])
        for key, value in expected.items():
            assert _read(record, key) == value, (name, key, record)
        outcomes[name] = "equal"
    return outcomes


# Intended differences between the generations, and nothing else.
ONLY_V44 = {"disabled", "expiration_date"}
ONLY_V46 = {"starts_at", "sensitive_content", "continent", "browser", "device"}


def test_every_argument_reaches_phpshort_44_or_is_refused(emu, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, timezone="UTC"))
    hook = LinkstatsLinksHook()
    space, pixel = hook.create_space("every-arg"), hook.create_pixel("every-arg", "facebook", "abc123")
    outcomes = _every_argument(hook, space["id"], pixel["id"], lambda: emu.stats.count(method="POST"))
    assert {name for name, outcome in outcomes.items() if outcome == "refused"} == ONLY_V46
    hook.close()


def test_every_argument_reaches_phpshort_49_or_is_refused(scripted, monkeypatch):
    store = V49Links()
    scripted.set_default(store)
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version="49")
    )
    hook = LinkstatsLinksHook()
    outcomes = _every_argument(hook, 3, 5, lambda: len(scripted.requests))
    assert {name for name, outcome in outcomes.items() if outcome == "refused"} == ONLY_V44
    assert all(r["path"] != "/api/v1/stats/0" for r in scripted.requests)  # the extra named the version
    hook.close()


def test_every_generation_names_only_vocabulary_fields_and_target_types():
    vocabulary = {spec.name for spec in LINKS.fields}
    for generation in generations("links"):
        assert set(generation.form_fields) <= vocabulary and set(generation.record_keys) <= vocabulary
        assert set(generation.target_types) <= set(TargetType)
    assert set(PHPSHORT_44.target_types) | set(PHPSHORT_46.target_types) == set(TargetType)


def test_phpshort_49_form_uses_its_own_names(scripted, monkeypatch):
    scripted.set_default(V49Links())
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version="49")
    )
    before = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    LinkstatsLinksHook().create_link(
        URL,
        password="visitor-pw",
        privacy=2,
        privacy_password="stats-pw",
        expiration_clicks=10,
        expires_at="2031-05-01T12:30:00+02:00",
        rotation=RULES["rotation"],
    )
    # The window starts at the service's "now": its clock is read first (one GET, issue 37).
    form = next(r for r in scripted.requests if r["method"] == "POST")["form"]
    names = dict(form)
    assert names["redirect_password"] == "visitor-pw" and names["password"] == "stats-pw"
    assert names["clicks_limit"] == "10"
    assert names["active_period_end_at"] == "2031-05-01T10:30:00+00:00"  # UTC, with its offset
    start = dt.datetime.fromisoformat(names["active_period_start_at"])
    # the window starts when the task runs, by the service's clock less its margin (so it redirects at once)
    assert before - dt.timedelta(seconds=4) <= start <= dt.datetime.now(dt.timezone.utc)
    assert names["targets_type"] == "rotations"
    assert ("targets[1][value]", "https://example.com/r2") in form and "targets[0][key]" not in names
    assert not {"expiration_clicks", "privacy_password", "rotation[0][value]", "target_type"} & set(names)


@pytest.mark.parametrize(
    ("arguments", "field", "text"),
    [
        ({"disabled": 1}, "disabled", "not available on phpShort 46+"),
        ({"expiration_date": "2031-01-01", "expiration_time": "10:00"}, "expiration_date", "use expires_at"),
        ({"country": RULES["country"], "platform": RULES["platform"]}, "platform", "one targeting list per link"),
        ({"target_type": 2, "country": RULES["country"]}, "target_type", "1 (GEOGRAPHIC) with country"),
        ({"starts_at": START}, "expires_at", "given together"),
        (
            {"starts_at": "2040-01-02T00:00:00+00:00", "expires_at": "2040-01-01T00:00:00+00:00"},
            "expires_at",
            "a moment after starts_at (2040-01-02 00:00:00 UTC)",
        ),
    ],
)
def test_phpshort_49_refusals_before_any_request(scripted, monkeypatch, arguments, field, text):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version="49")
    )
    with pytest.raises(LinkstatsInputError, match=re.escape(text)) as caught:
        LinkstatsLinksHook().create_link(URL, **arguments)
    assert caught.value.field == field
    assert scripted.requests == []


def test_language_targeting_takes_effect_on_phpshort_44(emu, make_hook):
    """Issue 19: target_type 3 (language) was refused, so language= could never take effect."""
    hook = make_hook("links")
    created = hook.create_link(URL, alias="bonjour", target_type=TargetType.LANGUAGE, language=RULES["language"])
    record = hook.get_link(created["id"])
    assert record["target_type"] == 3 and record["language"] == RULES["language"]
    assert record["language_target"] == RULES["language"]  # the generation's own key passes through


def test_v49_record_reads_into_the_vocabulary():
    from airflow_provider_linkstats.client.records import normalize

    record = normalize(
        LINKS,
        {
            "id": 1,
            "targets_type": "languages",
            "targets": RULES["language"],
            "password": False,
            "redirect_password": True,
            "active_period_start_at": "2031-04-01T08:00:00.000000Z",
            "active_period_end_at": "2031-05-01T10:30:00.000000Z",
            "clicks_limit": "500",
            "expires_at": None,
        },
    )
    assert record["password"] is True and record["privacy_password"] is False  # visitor vs statistics page
    assert record["expires_at"] == END.isoformat() and record["starts_at"] == START.isoformat()
    assert record["expiration_clicks"] == 500
    assert record["target_type"] == 3 and record["language"] == RULES["language"] and record["country"] is None


def test_v49_create_echo_never_carries_a_secret():
    from airflow_provider_linkstats.client.records import normalize

    echo = {"id": 1, "redirect_password": "visitor-pw", "password": "stats-pw", "clicks_limit": None}
    record = normalize(LINKS, echo)
    assert "visitor-pw" not in repr(record) and "stats-pw" not in repr(record)


@pytest.mark.parametrize(
    ("api_version", "name", "wire"),
    [
        ("44", "platform", "platform"),
        ("49", "platform", "operating_system"),
        ("49", "clicks", "click"),
        ("44", "click", "clicks"),
        ("49", "cities", "city"),
        ("44", "operating_system", "platform"),
    ],
)
def test_statistics_names_per_generation(scripted, monkeypatch, api_version, name, wire):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version=api_version)
    )
    scripted.add(("respond", 200, {"data": [{"value": "x", "count": "3"}], "status": 200}))
    rows = LinkstatsLinksHook().get_link_stats(1, name, "2025-03-01", "2025-03-03")
    assert rows == [{"value": "x", "count": 3}]
    assert dict(scripted.requests[0]["query"])["name"] == wire


def test_statistic_without_counterpart_refused_naming_the_version(scripted, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version="49")
    )
    with pytest.raises(LinkstatsInputError, match="not available on phpShort 46"):
        LinkstatsLinksHook().get_link_stats(1, "clicks_hour", "2025-03-01", "2025-03-03")
    assert scripted.requests == []


def test_dialect_refusal_names_field_and_version():
    error = PHPSHORT_46.refuse("disabled", 1)
    assert "'disabled'" in str(error) and "phpShort 46+" in str(error)


def logged(caplog, capsys) -> str:
    """Hook log lines: Airflow 3 sends them through structlog to stdout, Airflow 2 through logging."""
    return capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)


def test_rounding_of_expires_at_on_v44_is_logged(emu, make_hook, caplog, capsys):
    caplog.set_level(logging.INFO)
    hook = make_hook("links")
    hook.create_link(URL, expires_at="2031-05-01T10:29:30+00:00")
    assert "rounded up to 2031-05-01 10:30 (UTC)" in logged(caplog, capsys)


def test_every_argument_reaches_the_emulators_phpshort_49_or_is_refused(monkeypatch):
    """The same, against the emulator's phpShort 49, the version detected (auto)."""
    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY

    with Emulator(api_keys=(API_KEY,), links_version="49", analytics_version="31") as emu:
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="auto"))
        hook = LinkstatsLinksHook()
        space, pixel = hook.create_space("every-arg"), hook.create_pixel("every-arg", "x", "abc123")
        assert hook.dialect is PHPSHORT_46  # detected
        outcomes = _every_argument(hook, space["id"], pixel["id"], lambda: emu.stats.count(method="POST"))
        assert {name for name, outcome in outcomes.items() if outcome == "refused"} == ONLY_V44
        hook.close()


def test_operator_renders_the_new_arguments_then_speaks_49(scripted, monkeypatch):
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
    from tests.conftest import run_operator

    scripted.set_default(V49Links())
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1", api_version="49")
    )
    task = LinkstatsCreateLinkOperator(
        task_id="t",
        url=URL,
        starts_at="{{ params.start }}",
        expires_at="{{ params.end }}",
        sensitive_content="{{ params.consent }}",
        device=[{"key": "{{ params.device }}", "value": URL}],
    )
    params = {"start": START.isoformat(), "end": END.isoformat(), "consent": "1", "device": "tablet"}
    record, _ = run_operator(task, **params)
    assert record["starts_at"] == START.isoformat() and record["expires_at"] == END.isoformat()
    form = dict(scripted.requests[0]["form"])
    assert form["sensitive_content"] == "1" and form["targets_type"] == "devices"
    assert form["targets[0][key]"] == "tablet"


def test_versions_doc_names_every_argument_target_type_and_statistic():
    from pathlib import Path

    from airflow_provider_linkstats.client.contract import LINK_STAT_NAMES, WEBSITE_STAT_NAMES

    doc = (Path(__file__).parents[2] / "docs" / "versions.md").read_text()
    for name in {name for g in generations("links") for name in g.form_fields}:
        assert f"`{name}`" in doc, name
    for wire in {wire for wire in PHPSHORT_46.target_types.values() if wire}:
        assert wire in doc, wire
    for name in (*LINK_STAT_NAMES, *WEBSITE_STAT_NAMES):
        assert name in doc, name


def test_rules_alone_take_effect_on_phpshort_44_too(emu, make_hook):
    """One rules list and no target_type: the list's type is sent, as phpShort 46+ derives it."""
    hook = make_hook("links")
    record = hook.get_link(hook.create_link(URL, alias="rules-alone", language=RULES["language"])["id"])
    assert record["target_type"] == int(TargetType.LANGUAGE) and record["language"] == RULES["language"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"country": RULES["country"], "platform": []}, ("countries", 2)),
        ({"platform": [], "country": RULES["country"]}, ("countries", 2)),
        ({"target_type": 0, "country": []}, ("", 0)),
    ],
)
def test_phpshort_49_empty_list_only_clears(arguments, expected):
    from airflow_provider_linkstats.client.protocol import build_update

    form = build_update(LINKS, 1, arguments, PHPSHORT_46).form
    names = dict(form)
    assert (names["targets_type"], sum(name.startswith("targets[") for name, _ in form) // 2) == expected
