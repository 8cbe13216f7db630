"""Packaging glue that pyproject.toml cannot express: ship the demo town as package data.

The demo layers live in ``data/layers/`` in the repository; a regular (non-editable)
install carries them as the ``ms4map.demo_data`` package so ``ms4map.io.demo_path()``
finds them anywhere.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages("src") + ["ms4map.demo_data"],
    package_dir={"": "src", "ms4map.demo_data": "data/layers"},
    package_data={
        "ms4map": ["py.typed", "rules/profiles/*.toml"],
        "ms4map.demo_data": ["*.gpkg", "*.tif", "*.md"],
    },
    include_package_data=False,
)
