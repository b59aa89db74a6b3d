"""Helpers of the command-line tests."""
import csv
import io


def items_of(path):
    """The public item list of a shared comparisons file (its data set's item table)."""
    return str(path).replace("_comparisons.csv", "_items.csv")


def labelled_comparisons(path, labels, users: int):
    """Write comparisons between ``labels`` to the CSV ``path``: each user compares every label with
    another (a different one for each user), a fixed pattern of outcomes; returns ``path``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["user", "item_a", "item_b", "outcome"])
    m = len(labels)
    for u in range(users):
        for k, label in enumerate(labels):
            w.writerow([f"u{u}", label, labels[(k + 1 + u % (m - 1)) % m], 1 if (u + k) % 3 else -1])
    path.write_text(buf.getvalue(), newline="")
    return path
