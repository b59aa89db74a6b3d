"""Ranking from pairwise comparisons."""
