"""Form encoding round-trips: the client's ``encode_form``, urlencoded as on the wire, read back by
the emulator's parser gives exactly the values the client validated, for arbitrary targeting rules
and unicode or reserved characters (& = [ ] % + # spaces emoji) in aliases, URLs and passwords.
The same holds end to end: created over HTTP on the running emulator and read back.
"""

from __future__ import annotations

import logging
import re
import string
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_linkstats.client.contract import LINKS, WEBSITES, Platform
from airflow_provider_linkstats.client.encoding import encode_form
from airflow_provider_linkstats.client.validation import validate_fields
from airflow_provider_linkstats.emulator import formdata
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook
from tests.support.leakcheck import no_secrets_logged, track_secret  # noqa: F401

pytestmark = [pytest.mark.usefixtures("no_secrets_logged"), pytest.mark.timeout(120)]

# -- strategies --------------------------------------------------------------------------------------

RESERVED = [
    "&",
    "=",
    "[",
    "]",
    "%",
    "+",
    "#",
    " ",
    "?",
    "/",
    ";",
    ":",
    "@",
    ",",
    "'",
    '"',
    "\\",
    "<",
    ">",
    "%20",
    "%2B",
    "%25",
    "&amp;",
    "a=b",
    "[0]",
    "[]",
    "😀",
    "👍🏽",
    "é",
    "ß",
    "中文",
    "\u200b",
    "\t",
    "\n",
]


def tricky_text(*, allow_controls: bool = True, exclude: str = "", min_size: int = 1, max_size: int = 12):
    """Strings mixing reserved form/URL characters, emoji and arbitrary unicode (no lone surrogates)."""
    blacklist = ("Cs",) if allow_controls else ("Cs", "Cc", "Zl", "Zp")
    pieces = st.one_of(
        st.sampled_from([p for p in RESERVED if not set(p) & set(exclude) and (allow_controls or p.isprintable())]),
        st.characters(blacklist_categories=blacklist, blacklist_characters=exclude),
    )
    return st.lists(pieces, min_size=min_size, max_size=max_size).map("".join).filter(lambda s: len(s) >= min_size)


def urls():
    """Absolute http(s) URLs whose path, query and fragment hold reserved and unicode characters."""
    host = st.from_regex(r"[a-z][a-z0-9-]{0,10}(\.[a-z]{2,6}){1,2}", fullmatch=True)
    rest = tricky_text(allow_controls=False, min_size=0, max_size=10).filter(lambda s: not any(c.isspace() for c in s))
    return st.builds(
        lambda scheme, h, path, query, frag: f"{scheme}://{h}/{path}?{query}#{frag}",
        st.sampled_from(["http", "https"]),
        host,
        rest,
        rest,
        rest,
    )


def rules(key: st.SearchStrategy | None, value: st.SearchStrategy, min_size: int = 1):
    rule = (
        st.fixed_dictionaries({"key": key, "value": value})
        if key is not None
        else st.fixed_dictionaries({"value": value})
    )
    return st.lists(rule, min_size=min_size, max_size=4)


ids = st.integers(min_value=1, max_value=10**9)
dates = st.dates().map(lambda d: d.isoformat()).filter(lambda s: len(s) == 10)
times = st.times().map(lambda t: t.strftime("%H:%M"))


# What the service's alpha_dash accepts: letters of any script, digits, "-" and "_".
slugs = st.text(
    alphabet=st.one_of(st.characters(whitelist_categories=("Lu", "Ll", "Lo", "Nd")), st.sampled_from("-_")),
    min_size=1,
    max_size=16,
).filter(lambda s: re.fullmatch(r"[\w-]+", s) is not None)
countries = st.sampled_from(["US", "FR", "DE", "GB", "JP", "BR", "IN", "ZA"])
languages = st.sampled_from(["en", "fr", "de", "es", "ja", "pt", "zh", "ar"])


def kept_by_trim(value: str) -> bool:
    """The service trims every input; the client refuses text it would change."""
    return value.strip() == value and bool(value)


def link_fields(operation: str, min_list: int = 1, text=tricky_text):
    optional = {
        "alias": slugs,
        "password": text().filter(kept_by_trim),
        "space_id": ids,
        "pixel_ids": st.lists(ids, min_size=min_list, max_size=4),
        "disabled": st.sampled_from([0, 1]),
        "privacy": st.sampled_from([0, 1, 2]),
        "privacy_password": text().filter(kept_by_trim),
        "expiration_url": urls(),
        "expiration_clicks": ids,
        "target_type": st.sampled_from([0, 1, 2, 4]),
        "country": rules(countries, urls(), min_list),
        "platform": rules(st.sampled_from([p.value for p in Platform]), urls(), min_list),
        "language": rules(languages, urls(), min_list),
        "rotation": rules(None, urls(), min_list),
    }
    expiry = st.one_of(st.just({}), st.fixed_dictionaries({"expiration_date": dates, "expiration_time": times}))
    if operation == "create":
        optional["domain_id"] = ids
        fields = st.fixed_dictionaries({"url": urls()}, optional=optional)
    else:
        fields = st.fixed_dictionaries({}, optional={"url": urls(), **optional})
    return st.builds(lambda f, e: {**f, **e}, fields, expiry)  # the service takes date and time together


def line_items(text=tricky_text):
    """Items sent one per line: no line break inside, no padding (what the contract allows)."""
    return text(exclude="\n").filter(lambda s: s.strip() == s and s)


ips = st.one_of(st.ip_addresses(v=4), st.ip_addresses(v=6)).map(str)


def website_fields(operation: str, min_list: int = 1, text=tricky_text):
    optional = {
        "privacy": st.sampled_from([0, 1, 2]),
        "password": text().filter(kept_by_trim),
        "email": st.sampled_from([0, 1]),
        "exclude_bots": st.sampled_from([0, 1]),
        "exclude_params": st.lists(line_items(text), min_size=min_list, max_size=4),
        "exclude_ips": st.lists(ips, min_size=min_list, max_size=4),
    }
    if operation == "create":
        label = r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?"
        domain = st.from_regex(rf"{label}(\.{label}){{1,3}}", fullmatch=True)
        return st.fixed_dictionaries({"domain": domain}, optional=optional)
    return st.fixed_dictionaries({}, optional=optional)


def on_the_wire(values: dict[str, Any]) -> bytes:
    """What the client puts in the request body (requests urlencodes the pairs the same way)."""
    return urlencode(encode_form(values)).encode("utf-8")


# -- through the emulator's parser --------------------------------------------------------------------


def assert_decoded_like_php(pairs: list[tuple[str, str]]) -> None:
    """Every pair the client sends is found where PHP's $_POST would put it, trimmed, "" as null
    (the emulator's own decoder, written from PHP's rules, not from the client's encoder)."""
    decoded = formdata.decode(urlencode(pairs).encode("utf-8"))
    appended: dict[str, int] = {}
    for name, value in pairs:
        base, _, rest = name.partition("[")
        keys = rest[:-1].split("][") if rest else []
        node: Any = decoded
        path = base
        node = node[base]
        for key in keys:
            if key == "":
                index = appended.get(path, 0)
                appended[path] = index + 1
                key = index
            elif key.isdigit():
                key = int(key)
            path += f"[{key}]"
            node = node[key]
        assert node == (value.strip() or None), (name, value, node)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), resource=st.sampled_from([LINKS, WEBSITES]), operation=st.sampled_from(["create", "update"]))
def test_emulator_decoder_reads_back_every_pair_the_client_sent(data, resource, operation):
    strategy = link_fields(operation) if resource is LINKS else website_fields(operation)
    sent = validate_fields(resource, operation, data.draw(strategy))
    assert_decoded_like_php(encode_form(sent))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), resource=st.sampled_from([LINKS, WEBSITES]))
def test_empty_lists_on_update_clear_the_field(data, resource):
    """An empty list is sent as ``name=`` and read back as an empty list (the field cleared), never
    as a missing field or a list holding one empty string."""
    strategy = link_fields("update", min_list=0) if resource is LINKS else website_fields("update", min_list=0)
    sent = validate_fields(resource, "update", data.draw(strategy))
    assert formdata.decode(on_the_wire(sent)).keys() >= {name for name, value in sent.items() if value == []}
    assert_decoded_like_php(encode_form(sent))


# -- end to end: create over HTTP on the running emulator, read back --------------------------------


# Printable text for what travels in a URL path too (the alias): controls and lone dots excluded so
# no HTTP library normalises the path under us.
def http_text(*, exclude: str = "", **kwargs: Any):
    return tricky_text(allow_controls=False, exclude="/" + exclude, **kwargs).filter(lambda s: s.strip(".") != "")


def visit(emu, alias: str, password: str) -> int:
    """A visitor's click (the test's own traffic: urllib3 would log the password in the URL)."""
    quiet = logging.getLogger("urllib3")
    level = quiet.level
    quiet.setLevel(logging.WARNING)
    try:
        url = f"{emu.url}/{quote(alias, safe='')}"
        return requests.get(url, params={"password": password}, allow_redirects=False, timeout=5).status_code
    finally:
        quiet.setLevel(level)


@pytest.fixture
def links_hook(make_hook, emu):
    return make_hook("links", retry_wait=0.01)


@pytest.fixture
def sites_hook(emu):
    hook = LinkstatsAnalyticsHook(retry_wait=0.01)
    yield hook
    hook.close()


def as_stored(record: dict, field: str) -> Any:
    """What a real record holds for a request field: targeting rules are ``<name>_target``,
    ``domain_id`` is the nested ``domain``'s id."""
    if field == "domain_id":
        return record["domain"]["id"]
    if field in ("country", "platform", "language", "rotation"):
        return record[f"{field}_target"]
    return record[field]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=link_fields("create", text=http_text))
def test_link_round_trips_through_the_running_emulator(emu, links_hook, fields):
    emu.reset()
    fields = dict(fields)
    fields.setdefault("alias", "plain-alias")
    for unowned in ("space_id", "pixel_ids", "domain_id"):  # must be the account's: covered by the hook tests
        fields.pop(unowned, None)
    fields.pop("expiration_date", None)  # keep the link active so a click is redirected
    fields.pop("expiration_time", None)
    fields.pop("expiration_clicks", None)
    fields["disabled"] = 0
    password = track_secret("pw-" + fields.pop("password", "default") + "-x")  # the service trims the ends
    fields.pop("privacy_password", None)
    sent = validate_fields(LINKS, "create", {**fields, "password": password})

    created = links_hook.create_link(**sent)
    read = links_hook.get_link(created["id"])
    for name, value in sent.items():
        if name in LINKS.secret_fields:
            assert read[name] is True  # set, never shown
        else:
            assert as_stored(read, name) == value, name
    # The alias travels back as a listing search parameter, and as the short link's path.
    found = links_hook.list_links(search=sent["alias"], search_by="alias")
    assert created["id"] in [link["id"] for link in found]
    assert visit(emu, sent["alias"], password) == 302
    assert visit(emu, sent["alias"], password + "x") == 403


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fields=website_fields("create", text=http_text))
def test_website_round_trips_through_the_running_emulator(emu, sites_hook, fields):
    emu.reset()
    fields = dict(fields)
    if "password" in fields:
        fields["password"] = track_secret("pw-" + fields["password"] + "-x")
    sent = validate_fields(WEBSITES, "create", fields)
    created = sites_hook.create_website(**sent)
    read = sites_hook.get_website(created["id"])
    for name, value in sent.items():
        if name in WEBSITES.secret_fields:
            assert read[name] is True  # set, never shown
        elif name != "exclude_params":  # accepted, never returned by phpAnalytics
            assert read[name] == value, name
    assert [w["id"] for w in sites_hook.list_websites(search=sent["domain"])] == [created["id"]]


def test_reserved_characters_example_on_the_wire(emu, links_hook):
    """One readable example of the above, byte for byte."""
    alias = "été_中文-1"
    sent = {"url": "https://ex.com/p?q=1&r=[2]#f", "alias": alias, "rotation": [{"value": "https://ex.com/%2B"}]}
    assert on_the_wire(sent) == (
        b"url=https%3A%2F%2Fex.com%2Fp%3Fq%3D1%26r%3D%5B2%5D%23f&alias=%C3%A9t%C3%A9_%E4%B8%AD%E6%96%87-1"
        b"&rotation%5B0%5D%5Bvalue%5D=https%3A%2F%2Fex.com%2F%252B"
    )
    created = links_hook.create_link(**sent)
    assert (created["alias"], created["url"], created["rotation_target"]) == (alias, sent["url"], sent["rotation"])
    assert created["short_url"].endswith("/" + quote(alias, safe=""))


assert set(string.punctuation) - set("".join(RESERVED)) <= set("!$()*-._`{|}~^"), "keep RESERVED broad"
