"""phpShort 46+ writes expires_at as a UTC window, whatever the account's time zone: a create with
an end, no domain and no timezone extra reads the account only for its default domain, and when
that read fails it goes on as a create without an end would (sent without domain_id, with the
domain path's warning), not stopped for a zone it does not need."""

from __future__ import annotations

import datetime as dt
import logging

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsValidationError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import links_account


def _end() -> str:
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3)).replace(microsecond=0).isoformat()


def test_a_failed_account_read_does_not_stop_a_utc_window_create(emulators, monkeypatch, caplog):
    caplog.set_level(logging.WARNING)
    with links_account(emulators, monkeypatch, "49", default_domain_id=None) as emulator:
        emulator.faults.fail_next(count=1, status=500, method="GET", path_prefix="/account")
        with pytest.raises(LinkstatsValidationError) as caught:  # this install requires domain_id
            LinkstatsLinksHook().create_link("https://example.com/a", alias="zone-free", expires_at=_end())
        assert emulator.stats.count(method="POST", path_prefix="/links") == 1  # the create went on
        assert "sending the create without domain_id" in caplog.text
        assert "reading the account's default domain failed" in str(caught.value)
        assert "time zone" not in str(caught.value)
