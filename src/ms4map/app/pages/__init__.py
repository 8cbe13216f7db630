"""The app's pages: one module each, with a ``render()`` function."""
