"""Municipality profiles: loading, validation, and every quote checked against the laws."""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest

from ms4map.core.errors import DataError, InputOpenError, UsageError
from ms4map.rules.profiles import (
    BUILTIN_PROFILES,
    EXEMPTION_CODES,
    REQUIRED_CITATIONS,
    builtin_profile_path,
    load_profile,
)

LAWS = Path(
    os.environ.get("MS4MAP_LAWS_DIR", Path(__file__).resolve().parents[3] / "shared" / "laws")
)


def _squash(text: str) -> str:
    # Whitespace-insensitive comparison.  The stray "Â" of the Stillwater text sits only
    # after list labels ("A.Â"), which no quote includes, so it is not normalised away.
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_builtin_profiles_load(name):
    p = load_profile(name)
    assert p.name == name
    assert set(REQUIRED_CITATIONS) <= set(p.citations)
    assert set(p.exemptions) == set(EXEMPTION_CODES)
    assert p.pollutant_reading == "law" and p.tributary_reach_km == 0
    assert p.officer_title
    assert p.enforcement["penalties"][0]["max_usd"] == 350


def test_default_and_specifics():
    assert load_profile(None).name == "stillwater"
    assert load_profile("kingsbury").enforcement["remedy_hours"] == 48
    assert load_profile("kingsbury").enforcement["records_years"] == 7
    assert load_profile("kiryas_joel").enforcement["penalty_period"] == "day"
    assert load_profile("kiryas_joel").officer_title == "Stormwater Management Administrator"


@pytest.mark.parametrize("name", BUILTIN_PROFILES)
def test_every_quote_is_in_the_laws(name):
    if not LAWS.is_dir():
        pytest.skip(f"reference laws not found at {LAWS} (set MS4MAP_LAWS_DIR)")
    texts = {f.name: _squash(f.read_text(encoding="utf-8")) for f in LAWS.glob("*.txt")}
    raw = tomllib.loads(builtin_profile_path(name).read_text(encoding="utf-8"))
    entries = [(f"citations.{rule}", e) for rule, es in raw["citations"].items() for e in es]
    entries += [(f"exemptions.{code}", e) for code, e in raw["exemptions"].items()]
    assert entries
    for where, e in entries:
        quote = _squash(e["quote"])
        assert e.get("file") in texts, f"{name} {where}: file {e.get('file')!r} not in {LAWS}"
        assert quote in texts[e["file"]], f"{name} {where}: quote not found in {e['file']}"
        if "section" in e:
            # no invented section numbers: the text itself must print "§ <section>"
            assert f"§ {e['section']}" in texts[e["file"]], f"{name} {where}: § {e['section']}"


def test_unknown_profile_name():
    with pytest.raises(UsageError, match="Unknown profile 'springfield'.*stillwater"):
        load_profile("springfield")


def test_missing_file(tmp_path):
    with pytest.raises(InputOpenError):
        load_profile(tmp_path / "town.toml")


def _write_variant(tmp_path, edit):
    text = builtin_profile_path("stillwater").read_text(encoding="utf-8")
    p = tmp_path / "town.toml"
    p.write_text(edit(text), encoding="utf-8")
    return p


def test_town_file_with_missing_field(tmp_path):
    p = _write_variant(
        tmp_path, lambda t: t.replace('officer_title = "Stormwater Management Officer"\n', "")
    )
    with pytest.raises(DataError, match="missing field 'officer_title'"):
        load_profile(p)


def test_town_file_with_missing_setting_and_citation(tmp_path):
    def edit(t):
        t = t.replace("tributary_reach_km = 0.0\n", "")
        return t.replace("[[citations.condition_b]]", "[[citations.condition_bee]]")

    with pytest.raises(DataError) as exc:
        load_profile(_write_variant(tmp_path, edit))
    msg = str(exc.value)
    assert "screening.tributary_reach_km" in msg and "citations.condition_b" in msg


def test_town_file_bad_values(tmp_path):
    def edit(t):
        t = t.replace('pollutant_reading = "law"', 'pollutant_reading = "loose"')
        return t.replace("[exemptions.cemetery]", "[exemptions.graveyard]")

    with pytest.raises(DataError) as exc:
        load_profile(_write_variant(tmp_path, edit))
    assert "pollutant_reading" in str(exc.value) and "graveyard" in str(exc.value)


def test_town_file_narrowed_list(tmp_path):
    p = _write_variant(
        tmp_path,
        lambda t: t.replace(
            'pollutant_reading = "law"\npollutants_of_concern = []',
            'pollutant_reading = "list"\npollutants_of_concern = ["silt/sediment", "phosphorus"]',
        ),
    )
    prof = load_profile(p)
    assert prof.pollutant_reading == "list" and "phosphorus" in prof.pollutants_of_concern
    bad = _write_variant(
        tmp_path, lambda t: t.replace('pollutant_reading = "law"', 'pollutant_reading = "list"')
    )
    with pytest.raises(DataError, match="non-empty"):
        load_profile(bad)


def test_invalid_toml(tmp_path):
    p = tmp_path / "town.toml"
    p.write_text("name = \n", encoding="utf-8")
    with pytest.raises(DataError, match="not valid TOML"):
        load_profile(p)


def test_with_pollutants_validates_names_and_keeps_sediment():
    from ms4map.core.errors import UsageError

    prof = load_profile("stillwater")
    # a misspelling is read as the pollutant it names; sediment is always in the list
    assert prof.with_pollutants(["phosphorous"]).pollutants_of_concern == (
        "silt/sediment",
        "phosphorus",
    )
    assert prof.with_pollutants(["TSS", "nutrients"]).pollutants_of_concern == (
        "silt/sediment",
        "nutrients",
    )
    assert prof.with_pollutants(["nutrients"], include_sediment=False).pollutants_of_concern == (
        "nutrients",
    )
    with pytest.raises(UsageError, match="'xyz'.*nutrients.*phosphorus"):
        prof.with_pollutants(["phosphorus", "xyz"])


def test_town_file_unknown_pollutant_and_sediment_opt_out(tmp_path):
    bad = _write_variant(
        tmp_path,
        lambda t: t.replace(
            'pollutant_reading = "law"\npollutants_of_concern = []',
            'pollutant_reading = "list"\npollutants_of_concern = ["phosphorus", "xyz"]',
        ),
    )
    with pytest.raises(DataError, match="screening.pollutants_of_concern.*'xyz'"):
        load_profile(bad)
    off = _write_variant(
        tmp_path,
        lambda t: t.replace(
            'pollutant_reading = "law"\npollutants_of_concern = []',
            'pollutant_reading = "list"\npollutants_of_concern = ["nutrients"]',
        ).replace("narrowed_includes_sediment = true", "narrowed_includes_sediment = false"),
    )
    assert load_profile(off).pollutants_of_concern == ("nutrients",)
    on = _write_variant(
        tmp_path,
        lambda t: t.replace(
            'pollutant_reading = "law"\npollutants_of_concern = []',
            'pollutant_reading = "list"\npollutants_of_concern = ["nutrients"]',
        ),
    )
    assert load_profile(on).pollutants_of_concern == ("silt/sediment", "nutrients")
