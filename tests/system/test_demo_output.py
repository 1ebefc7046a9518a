"""The demo's printed lines: a cut line ends in an ellipsis, not in a comma that looks like the end."""

from __future__ import annotations

from dags_examples.demo.__main__ import shorten


def test_a_long_line_is_cut_with_an_ellipsis_not_at_a_comma():
    files = "report written: " + ", ".join(f"/reports/file_{i}.csv" for i in range(20))
    cut = shorten(files)
    assert len(cut) <= 150 and cut.endswith(" ...") and not cut[:-4].endswith(",")
    assert shorten("deleted 3/30 links (159.2/s, about 27 s left)") == "deleted 3/30 links (159.2/s, about 27 s left)"
    assert shorten("a, " * 100, width=20) == "a, a, a, a, a, a ..."
