"""Choosing epsilon before collecting: the planner's curve.

The planner simulates a design like LLMFAO's (59 items, 124 users, 72 comparisons each) and
predicts the error of the local release at each epsilon of a grid; `smallest_epsilon` returns
the smallest epsilon whose predicted Kendall distance to the true order is at most 0.1, and the
curve it searched.
"""
from privrank.plan import Design, plot_curve, smallest_epsilon

design = Design(items=59, users=124, comparisons_per_user=72, model="local")
best, curve = smallest_epsilon(design, "kendall", 0.1, reps=20, rng=0)

figure = plot_curve(curve, chosen=best)
figure.savefig("figure.png")
