"""The QA report as a person reads it: each problem in words, its code beside it."""

from __future__ import annotations

from ms4map.core.qa import QAReport, code_words


def test_the_markdown_report_names_each_problem_in_words_with_its_code() -> None:
    qa = QAReport()
    qa.add("warning", "dem_nodata", "dem", "DEM has 3 nodata cells.", fix="Fill them.")
    text = qa.to_markdown()
    assert "| DEM nodata (`dem_nodata`) | dem | 1 |" in text
    assert "| problem (code) |" in text


def test_code_words_keep_acronyms() -> None:
    assert code_words("missing_id") == "Missing ID"
    assert code_words("terminal_not_at_water") == "Terminal not at water"
