"""The compiled kernels, ``privrank._kernels`` (C, in ``_kernels.c``), or None where they were not built.

Two inner loops where numpy's per-call overhead or its temporary arrays, not arithmetic, set the
time: the Newton steps of the logistic BTL fits on few items (:func:`privrank.pairwise.btl.newton_btl`)
and the per-pair counts of raw outcomes over a dense table of pairs
(:meth:`privrank.data.pair_counts.PairCounts.of_outcomes`). Each caller keeps its numpy loop, which
gives the same result (tests/test_kernels.py holds them to it) and runs where the module was not
built: the install compiles it when a C compiler is there and goes on without it otherwise.
"""
import importlib
from types import ModuleType

compiled: ModuleType | None
try:
    compiled = importlib.import_module("privrank._kernels")
except ImportError:  # installed without a C compiler: numpy alone
    compiled = None
