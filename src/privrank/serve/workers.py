"""``privrank serve --workers N``: N server processes on one listening socket and one database.

The command does its start-up work once (the checks, the survey's claim on the store, the admin
token, the invitations, the planner's sample size), closes its store, and only then forks the
workers, so that it forks with no thread running (a fork copies only the thread that calls it: a
store's writer or a connection pool's thread would be missing in the copy, holding its locks). Each
worker opens its own store and serves the socket the command bound; the kernel hands each new
connection to one of them. Forking, rather than starting fresh interpreters, lets the workers
inherit the bound socket, the parsed survey and the planner's result without doing any of it again,
and lets the application be built from the command's arguments as it is with one process.

What the workers share goes through the store: the reports and their budgets (each write's
transaction locks what it checks), the registration limit (:mod:`privrank.serve.ratelimit`), the
admin token's hash and the survey's closing. The command supervises them: SIGINT or SIGTERM is
passed on as SIGTERM (each worker answers the requests in flight, then ends), and the command ends
once they all have; a second SIGINT kills them at once. A worker that ends on its own is reported on
stderr and started anew, unless it ended within :data:`SETTLE_SECONDS` of its start (it would only
fail again): then the others are stopped and the command fails.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from ..errors import InputError

#: a worker that ends sooner than this after its start stops the server instead of being started again
SETTLE_SECONDS = 10.0
#: seconds between two looks at the workers
POLL_SECONDS = 0.2
#: seconds the stopping workers get beyond the graceful shutdown's own limit before they are killed
STOP_MARGIN = 20.0


def _ending(status: int) -> str:
    code = os.waitstatus_to_exitcode(status)
    return f"with exit code {code}" if code >= 0 else f"by signal {signal.Signals(-code).name}"


class Workers:
    """The worker processes of one ``privrank serve --workers N``, forked by :meth:`run`."""

    def __init__(self, n: int, serve: Callable[[], None], graceful: float):
        self.n, self._serve, self._graceful = n, serve, graceful
        self._pids: dict[int, tuple[int, float]] = {}  # pid: (worker number, start time)

    def _start(self, number: int) -> None:
        signals = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # a signal now must not find a worker unrecorded
        try:
            pid = os.fork()
            if pid == 0:  # the worker: whatever happens, it never returns into the command
                code = 1
                try:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)
                    code = self._worker(number)
                finally:
                    os._exit(code)
            self._pids[pid] = (number, time.monotonic())
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, signals)

    def _worker(self, number: int) -> int:
        """A worker's life: serve until stopped; its exit code."""
        code = 1
        try:
            self._serve()
            code = 0
        except KeyboardInterrupt:
            code = 130
        except InputError as exc:
            print(f"privrank serve: worker {number}: {exc}", file=sys.stderr)
        except Exception as exc:  # only its type: its text could quote a request
            print(f"privrank serve: worker {number} failed ({type(exc).__name__})", file=sys.stderr)
        except BaseException:  # SIGTERM, as privrank.cli.main's handler raises it
            code = 143
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        return code

    def run(self) -> None:
        """Fork the workers and supervise them until a signal stops them (raised again here once every
        worker has ended, as :func:`privrank.cli.main` handles it).

        Raises
        ------
        InputError
            A worker ended within :data:`SETTLE_SECONDS` of its start (the others are stopped first).
        """
        if threading.active_count() > 1:
            raise RuntimeError("privrank serve forks its workers with no other thread running")
        try:
            for number in range(1, self.n + 1):
                self._start(number)
            while True:
                time.sleep(POLL_SECONDS)
                for pid, (number, started) in list(self._pids.items()):
                    done, status = os.waitpid(pid, os.WNOHANG)
                    if not done:
                        continue
                    del self._pids[pid]
                    lived = time.monotonic() - started
                    if lived < SETTLE_SECONDS:
                        self._stop()
                        raise InputError(f"worker {number} of privrank serve ended {_ending(status)} {lived:.0f} s "
                                         "after it started: stopped the others (its message above says why)")
                    print(f"privrank serve: worker {number} (process {pid}) ended {_ending(status)}: started "
                          "anew", file=sys.stderr)
                    self._start(number)
        except InputError:
            raise
        except BaseException:  # SIGINT or SIGTERM (main's handlers raise them): stop gracefully, then end as asked
            self._stop()
            raise

    def _stop(self) -> None:
        """SIGTERM to every worker and wait for them; a second SIGINT meanwhile kills them at once."""
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + self._graceful + STOP_MARGIN
        try:
            while self._pids:
                for pid in list(self._pids):
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        del self._pids[pid]
                if time.monotonic() > deadline:
                    self._signal(signal.SIGKILL)
                    deadline = float("inf")
                time.sleep(POLL_SECONDS / 4)
        except KeyboardInterrupt:
            self._signal(signal.SIGKILL)  # a report in flight is committed or not at all; its page resends it
            os.write(2, b"privrank: interrupted twice: stopped at once\n")
            os._exit(130)

    def _signal(self, signum: int) -> None:
        for pid in self._pids:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:  # ended, not yet waited for
                pass
