"""max_items of a links listing whose status is decided from the records (phpShort 46+, not a
complete walk) is checked as every other listing's is: the field, the value and what is allowed,
before any request; its digits as a string count as the number."""

from __future__ import annotations

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import links_account


@pytest.mark.parametrize("max_items", [-1, "x", 1.5])
def test_a_bad_max_items_is_refused_before_any_request(emulators, monkeypatch, max_items):
    with links_account(emulators, monkeypatch, "49") as emulator:
        with pytest.raises(LinkstatsInputError) as caught:
            LinkstatsLinksHook().list_links(status=1, max_items=max_items)
        text = str(caught.value)
        assert "max_items" in text and repr(max_items) in text and "a non-negative integer or None" in text
        assert emulator.stats.count(method="GET", path_prefix="/links") == 0


def test_max_items_as_digits_counts_as_the_number(emulators, monkeypatch):
    with links_account(emulators, monkeypatch, "49") as emulator:
        hook = LinkstatsLinksHook()
        for number in range(3):
            hook.create_link(f"https://example.com/{number}", alias=f"active-{number}")
        assert len(hook.list_links(status=1, max_items="2")) == 2
        assert emulator.stats.count(method="GET", path_prefix="/links") >= 1
