"""How often a running server looks again at something another process may change: the store's closing
time and admins, the survey file."""
from __future__ import annotations

import math
import threading


class Throttle:
    """Lets one caller through per ``seconds`` (:meth:`due`): the others, meanwhile, go on with what was
    read last, so no request waits for a read that another one is making."""

    def __init__(self, seconds: float, clock):
        self.seconds, self._clock = seconds, clock
        self._read = -math.inf
        self._lock = threading.Lock()

    def due(self) -> bool:
        """Whether this caller must read now: True for one caller per :attr:`seconds` (or after the clock
        went back)."""
        now, last = self._clock(), self._read
        if 0 <= now - last < self.seconds:
            return False
        with self._lock:  # one caller of those that found the reading old takes it
            if self._read != last:
                return False
            self._read = now
            return True
