"""The weekly report's charts say what they show: one scale where bars are compared, whole-number
click ticks, axis labels, and the time span in every title (issue 21, "honest charts")."""

from __future__ import annotations

import pytest

from tests.support.example_dags import load_module

pytest.importorskip("matplotlib")

WINDOW = {"date_from": "2026-11-17", "date_to": "2026-11-23"}
SPAN = "2026-11-17 to 2026-11-23 (7 days, UTC)"
LINKS = [{"alias": "big", "clicks": 40}, {"alias": "small", "clicks": 3}]
REFERRERS = {
    "big": [{"value": "news.example", "count": "4"}, {"value": "", "count": "2"}],
    "small": [{"value": "mail.example", "count": 1}],
    "quiet": [],  # no clicks in the window: no panel
}
TRAFFIC = [  # two days: 12 + 9 daily unique visitors are 21 visits, not 21 people
    {"domain": "shop.example.com", "day": "2026-11-22", "visitors": 12, "pageviews": 30},
    {"domain": "shop.example.com", "day": "2026-11-23", "visitors": 9, "pageviews": 20},
    {"domain": "blog.example.com", "day": "2026-11-23", "visitors": 2, "pageviews": 2},
]


@pytest.fixture(scope="module")
def figures():
    import matplotlib.pyplot as plt

    made = load_module("linkstats_weekly_report").build_figures(LINKS, REFERRERS, TRAFFIC, WINDOW)
    yield made
    for figure in made.values():
        plt.close(figure)


def _whole_ticks(axes) -> bool:
    low, high = axes.get_xlim()
    ticks = [tick for tick in axes.get_xticks() if low <= tick <= high]
    return len(ticks) >= 2 and all(float(tick).is_integer() for tick in ticks)


def test_referrer_panels_share_one_x_axis_with_whole_click_ticks(figures):
    panels = figures["referrers_png"].axes
    assert len(panels) == 2  # "quiet" had no referrer rows
    assert panels[0].get_shared_x_axes().joined(panels[0], panels[1])
    assert panels[0].get_xlim() == panels[1].get_xlim()  # a 1-click bar is a quarter of a 4-click bar
    assert all(_whole_ticks(axes) for axes in panels)
    assert "clicks" in panels[-1].get_xlabel()


def test_every_title_states_the_time_span_it_covers(figures):
    (links_axes,) = figures["links_png"].axes
    assert links_axes.get_title() == "Top 2 links by clicks, all time (as of 2026-11-23)"
    assert "all time" in links_axes.get_xlabel() and links_axes.get_ylabel()
    for axes in figures["referrers_png"].axes:
        assert axes.get_title().endswith(SPAN)
    (traffic_axes,) = figures["traffic_png"].axes
    assert traffic_axes.get_title() == f"Websites: visits and pageviews, {SPAN}"
    assert SPAN in traffic_axes.get_xlabel()


def test_daily_visitors_summed_over_days_are_labelled_visits(figures):
    (axes,) = figures["traffic_png"].axes
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels == ["visits (daily unique visitors, summed)", "pageviews"]
    visits, pageviews = axes.containers
    by_domain = dict(zip([t.get_text() for t in axes.get_yticklabels()], visits.datavalues, strict=True))
    assert by_domain == {"blog.example.com": 2, "shop.example.com": 21}
    assert sorted(pageviews.datavalues) == [2, 50]
    assert _whole_ticks(axes)
