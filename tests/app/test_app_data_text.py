"""Values from the data are shown as text: a water named like a Markdown image is not an
image the browser fetches, nor a link, nor math (issue 29 item 4, on the pages of the
map, the search and the screening)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pyogrio
import pytest
from test_app_town import town_layers, write_town

pytest.importorskip("streamlit")
from streamlit.testing.v1 import AppTest  # noqa: E402

from ms4map.app.state import data_text  # noqa: E402

EVIL = "![m](http://127.0.0.1:9/x.png) $x$ [click](http://example.com)"
#: A Markdown image or link that is still live: '![' or '](' not escaped by a backslash.
LIVE = re.compile(r"(?<!\\)!(?<!\\)\[|(?<!\\)\]\(|(?<!\\)\$x(?<!\\)\$")


@pytest.fixture(scope="module")
def evil_town(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("evil")
    write_town(folder)
    out = folder / "evil.gpkg"
    for name, frame in town_layers().items():
        if name == "outfalls":
            frame = frame.assign(receiving_water=EVIL)
        if name == "waterbodies":
            frame = frame.assign(name=EVIL)
        pyogrio.write_dataframe(frame, out, layer=name)
    shutil.copy(folder / "town_dem.tif", folder / "evil_dem.tif")
    return out


def _shown(text: str) -> str:
    """What a reader sees of a Markdown text: backslash escapes removed."""
    return re.sub(r"\\(.)", r"\1", text)


def _texts(at: AppTest) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "info", "warning", "error", "subheader"):
        out += [str(e.value) for e in getattr(at, kind)]
    return out


def _run(name: str, gpkg: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(gpkg))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp / "data"))
    script = f"from ms4map.app import run_page\nrun_page({name!r})"
    return AppTest.from_string(script, default_timeout=180).run()


def test_data_text_escapes_every_markdown_mark() -> None:
    said = data_text(EVIL + "\n# heading")
    assert not LIVE.search(said), said
    assert "\n" not in said  # a value cannot start a heading or a list on its own line


def test_map_path_and_search_show_a_hostile_water_name_as_text(
    evil_town: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _run("map", evil_town, tmp_path, monkeypatch)
    at.text_input(key="map_search_query").set_value("CB-0").run()
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    assert any("127.0.0.1:9" in _shown(t) for t in texts), texts[-6:]  # the name is shown ...
    live = [t for t in texts if "127.0.0.1:9" in _shown(t) and LIVE.search(t)]
    assert not live, live  # ... as text


def test_screening_shows_a_hostile_water_name_as_text(
    evil_town: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _run("screening", evil_town, tmp_path, monkeypatch)
    at.text_input(key="screen_parcel_ids").set_value("P08-02").run()
    at.number_input(key="screen_acres").set_value(0.3).run()
    at.button(key="screen_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    texts = _texts(at)
    assert any("127.0.0.1:9" in _shown(t) for t in texts), texts
    live = [t for t in texts if "127.0.0.1:9" in _shown(t) and LIVE.search(t)]
    assert not live, live


def test_addresses_in_data_are_not_autolinked() -> None:
    """Escaping stops Markdown links but not GitHub-flavoured autolinks of bare addresses
    (the chromium test found four live links); a zero-width space breaks them."""
    from ms4map.app.state import plain

    for said in (data_text("see http://127.0.0.1:9/y or www.evil.com or a@evil.com"),):
        assert not re.search(r"http\\:\\/|www\\\.|\\@\w", said), said
    assert "://" not in plain("see http://127.0.0.1:9/y") and "www." not in plain("www.x.com")


def test_the_investigations_address_is_not_reflected_as_a_link(
    evil_town: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 29 item 4: /investigation?outfall=[Session expired: click to log in
    again](http://...) showed a clickable link in the app's own warning."""
    monkeypatch.setenv("MS4MAP_WORKSPACE", str(evil_town))
    monkeypatch.setenv("MS4MAP_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_string(
        "from ms4map.app import run_page\nrun_page('investigation')", default_timeout=180
    )
    at.query_params["outfall"] = "[Session expired: click to log in again](http://127.0.0.1:9/)"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning if "from the link" in w.value]
    assert said and "Session expired" in _shown(said[0])
    assert not LIVE.search(said[0]) and "](" not in said[0].replace("\\](", "")
