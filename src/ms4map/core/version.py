"""The version of ms4map (``ms4map.__version__``), importable from every layer."""

__version__ = "0.2.0"
