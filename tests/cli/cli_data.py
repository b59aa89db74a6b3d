"""Helpers of the command-line tests."""


def items_of(path):
    """The public item list of a shared comparisons file (its data set's item table)."""
    return str(path).replace("_comparisons.csv", "_items.csv")
