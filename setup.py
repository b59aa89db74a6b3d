"""The one compiled module, privrank._kernels (see privrank/kernels.py).

Optional: an install without a C compiler still succeeds, and privrank then runs on numpy alone
(the same results, slower on small fits and on counting many outcomes). Everything else about the
package is in pyproject.toml.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("privrank._kernels", ["src/privrank/_kernels.c"],
                             extra_compile_args=["-O2"], optional=True)])
