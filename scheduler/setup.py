"""Builds the compiled local searches (src/tobsched/lsearch.c) as tobsched/_lsearch*.so, a plain C
library that tobsched/native.py loads with ctypes (no Python headers needed). Everything else is in
pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tobsched._lsearch",
            sources=["src/tobsched/lsearch.c"],
            extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"],
        )
    ]
)
