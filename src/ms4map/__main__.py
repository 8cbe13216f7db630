"""`python -m ms4map` runs the command line."""

from .cli import _entry

_entry()
