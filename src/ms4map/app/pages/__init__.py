"""The app's pages, one module each (``ms4map.app`` lists them)."""

__all__: list[str] = []
