"""The Arrow compute functions the readers use, under ``pyarrow.compute``'s names and arguments,
called without importing ``pyarrow.compute``.

Importing ``pyarrow.compute`` wraps and documents each of Arrow's hundreds of functions, which
takes longer than ranking a file of a few thousand comparisons. Each function here calls the core
``pyarrow.compute`` is built on (``pyarrow._compute.call_function``) with the options
``pyarrow.compute`` passes. The array methods that compute (``Array.cast``, ``take``, ``filter``,
``is_null``, ...) import ``pyarrow.compute`` on their first call: the readers call the functions
here instead (``from . import arrow_compute as pc``).
"""
from __future__ import annotations


def _call(name: str, *args, options=None):
    from pyarrow._compute import call_function

    return call_function(name, list(args), options)


def cast(arr, target_type):
    """``arr`` as the Arrow type ``target_type``; a conversion that loses data raises ``ArrowInvalid``."""
    from pyarrow._compute import CastOptions

    return _call("cast", arr, options=CastOptions.safe(target_type))


def take(data, indices):
    return _call("take", data, indices)


def filter(data, mask):
    return _call("filter", data, mask)


def is_null(values):
    return _call("is_null", values)


def is_in(values, value_set):
    from pyarrow._compute import SetLookupOptions

    return _call("is_in", values, options=SetLookupOptions(value_set))


def index_in(values, value_set):
    from pyarrow._compute import SetLookupOptions

    return _call("index_in", values, options=SetLookupOptions(value_set))


def fill_null(values, fill_value):
    """``values`` with each null replaced by the Python value ``fill_value``."""
    import pyarrow

    return _call("coalesce", values, pyarrow.scalar(fill_value, type=values.type))


def min_max(values):
    return _call("min_max", values)


def unique(values):
    return _call("unique", values)


def dictionary_encode(values):
    return _call("dictionary_encode", values)


def array_sort_indices(values):
    return _call("array_sort_indices", values)


def utf8_lower(values):
    return _call("utf8_lower", values)


def utf8_length(values):
    return _call("utf8_length", values)


def utf8_trim_whitespace(values):
    return _call("utf8_trim_whitespace", values)
