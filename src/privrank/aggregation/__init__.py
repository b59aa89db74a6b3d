"""Aggregation of full rankings: Kemeny and footrule, exact and private."""
