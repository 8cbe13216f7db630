"""ms4map map app: ``streamlit run app.py [-- WORKSPACE]`` (or ``ms4map app [WORKSPACE]``).

Opens the bundled demo town when no workspace is given.  Thin on purpose: the
pages live in :mod:`ms4map.app`, the GIS in the library.
"""

from pathlib import Path

from ms4map.app import main

main(app_dir=Path(__file__).resolve().parent)
