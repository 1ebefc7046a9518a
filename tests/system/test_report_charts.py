"""The weekly report's charts say what they show: one scale where bars are compared, whole-number
click ticks, axis labels, the time span once per figure (issue 21, "honest charts"; issue 28:
not repeated on every panel), and the websites' visitors per day as the log shows them."""

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


def test_every_figure_states_the_time_span_once(figures):
    (links_axes,) = figures["links_png"].axes
    assert links_axes.get_title() == "Top 2 links by clicks, all time (as of 2026-11-23)"
    assert "all time" in links_axes.get_xlabel() and links_axes.get_ylabel()
    referrers = figures["referrers_png"]
    assert referrers._suptitle.get_text() == f"Referrers of the top links, {SPAN}"
    assert [axes.get_title(loc="left") for axes in referrers.axes] == ["big", "small"]  # the panels: the link only
    assert not any(SPAN in text for axes in referrers.axes for text in (axes.get_title(), axes.get_xlabel()))
    traffic = figures["traffic_png"]
    assert traffic._suptitle.get_text() == f"Websites: unique visitors and pageviews per day, {SPAN}"
    assert not any(SPAN in text for axes in traffic.axes for text in (axes.get_title(), axes.get_xlabel()))


def test_websites_show_one_line_per_day_of_the_window(figures):
    visitors, pageviews = figures["traffic_png"].axes
    assert visitors.get_shared_x_axes().joined(visitors, pageviews)
    days = ["11-17", "11-18", "11-19", "11-20", "11-21", "11-22", "11-23"]
    assert [label.get_text() for label in pageviews.get_xticklabels()] == days  # every day, none summed
    lines = {line.get_label(): list(line.get_ydata()) for line in visitors.get_lines()}
    assert lines == {"blog.example.com": [0, 0, 0, 0, 0, 0, 2], "shop.example.com": [0, 0, 0, 0, 0, 12, 9]}
    views = {line.get_label(): list(line.get_ydata()) for line in pageviews.get_lines()}
    assert views == {"blog.example.com": [0, 0, 0, 0, 0, 0, 2], "shop.example.com": [0, 0, 0, 0, 0, 30, 20]}
    assert "unique visitors" in visitors.get_ylabel() and pageviews.get_ylabel() == "pageviews"
    assert [t.get_text() for t in visitors.get_legend().get_texts()] == ["blog.example.com", "shop.example.com"]
    assert visitors.get_ylim()[0] == 0 and pageviews.get_ylim()[0] == 0
