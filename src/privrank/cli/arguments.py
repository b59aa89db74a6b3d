"""Argument types shared by the subcommands: values argparse refuses with a usage error (exit 2)."""
from __future__ import annotations

import argparse


def seed(text: str) -> int:
    """A seed: a whole number >= 0 (seeds are for research runs, not for real releases)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("the seed must be a whole number >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the seed must be a whole number >= 0")
    return value
