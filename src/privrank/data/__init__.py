"""Containers and I/O for preference data (no privacy, no estimation)."""
