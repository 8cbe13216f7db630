"""ms4map map app: ``streamlit run app.py [-- WORKSPACE]`` (or ``ms4map app [WORKSPACE]``).

Opens the bundled demo town when no workspace is given.  Thin on purpose: the
pages live in :mod:`ms4map.app`, the GIS in the library.
"""

import sys
from pathlib import Path

from ms4map.app import main

HERE = Path(__file__).resolve()
# `streamlit run app.py -- WORKSPACE` sets sys.argv = [app.py, WORKSPACE]; anything else
# (a test runner's argv, for instance) is not ours to read.
ARGV = sys.argv[1:] if sys.argv and Path(sys.argv[0]).resolve() == HERE else []

main(app_dir=HERE.parent, argv=ARGV)
