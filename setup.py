"""The one compiled module: the BTL fits' Newton loop on few items, in C (see its source).

Optional: an install without a C compiler still succeeds, and
:func:`privrank.pairwise.btl.newton_btl` then fits with numpy alone. Everything else about the
package is in pyproject.toml.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("privrank.pairwise._newton", ["src/privrank/pairwise/_newton.c"],
                             extra_compile_args=["-O2"], optional=True)])
