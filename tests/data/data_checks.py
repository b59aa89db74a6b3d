"""Comparisons of what the readers return, shared by the data tests."""
import dataclasses

import numpy as np


def same_data(x, y) -> bool:
    """Whether two results of the readers (comparisons, rankings, tallies: frozen dataclasses holding
    arrays) hold the same values in every field."""
    if type(x) is not type(y):
        return False
    for field in dataclasses.fields(x):
        a, b = getattr(x, field.name), getattr(y, field.name)
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            if a is None or b is None or not np.array_equal(a, b):
                return False
        elif a != b:
            return False
    return True
