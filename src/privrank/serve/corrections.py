"""A running server follows corrections of its survey file: its texts are served without a restart.

``privrank serve SURVEY`` looks at the survey file (a ``stat``: its inode, size and modification time) at
most once per :attr:`SurveyFile.REFRESH` seconds, as requests come, and reads it again when it changed:

* a survey of the same terms (:meth:`~privrank.serve.survey.Survey.fingerprint`: items and their order,
  design, epsilon, budget, mechanism) is served from the next page load on, its texts recorded with the
  UTC day by :meth:`~privrank.serve.store.Store.claim` (the dashboard's "edited on" history), as a restart
  would; its ``closes`` and ``redirect``, neither terms nor texts, are followed too;
* a survey of other terms is not served: the server goes on with the survey as it was, every report
  keeping its meaning, and logs one warning for that version of the file;
* a file that cannot be read as a survey (a half-saved editor write, a syntax error) leaves the survey
  served as it was, with one warning for that version; a file missing for a moment (an editor replacing
  it) is looked at again next time.

Terms and texts are never mixed: what is served is either the survey as it was or the corrected file
as a whole, whose terms are the same.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from ..errors import InputError
from .survey import load_survey
from .throttle import Throttle


class SurveyFile:
    """The survey a server serves (:attr:`survey`), following the corrections of its file at ``path``
    (module docstring); with ``path`` None, the survey as given, for good. ``clock``: monotonic seconds."""

    REFRESH = 1.0

    def __init__(self, survey, path, store, clock=time.monotonic):
        self.survey = survey
        self._path = None if path is None else Path(path)
        self._store = store
        self._throttle = Throttle(self.REFRESH, clock)
        self._seen: tuple | None = None  # the version of the file last read; None: read it at the first look

    def due(self) -> bool:
        """Whether this caller must :meth:`read` the file now (one caller per :attr:`REFRESH` seconds)."""
        return self._path is not None and self._throttle.due()

    def read(self) -> None:
        """Look at the file, and if it changed since it was last read, read it (blocking: a ``stat``, then
        a read and a write of the texts to the store): the corrected survey is served from now on, or,
        refused, the survey as it was, with one warning."""
        assert self._path is not None  # due() is never True without a file
        try:
            info = self._path.stat()
        except OSError:  # removed a moment by an editor that writes a new file in its place: looked at next time
            return
        version = (info.st_ino, info.st_size, info.st_mtime_ns)
        if version == self._seen:
            return
        try:
            corrected = load_survey(self._path)
        except InputError as exc:
            self._refuse(version, f"{exc}: the survey goes on as it was served; a corrected file is taken up "
                                  f"within {self.REFRESH:g} to {2 * self.REFRESH:g} seconds")
            return
        if corrected.fingerprint() != self.survey.fingerprint():
            self._refuse(version, f"{self._path}: its terms changed (items, item order, design, epsilon, budget or "
                                  "mechanism): the survey goes on with the terms it was started with, so every "
                                  "report keeps its meaning. Put the terms back as they were: only the texts (and "
                                  "closes, redirect) may change on a running survey; a survey of other terms needs "
                                  "a database of its own")
            return
        if corrected != self.survey:
            try:
                self._store.claim(corrected.fingerprint(), earlier=corrected.earlier_fingerprint(),
                                  texts=corrected.texts())
            except InputError:  # the store unavailable a moment: not served before it is recorded; tried again
                return
            self.survey = corrected
        self._seen = version

    def _refuse(self, version: tuple, message: str) -> None:
        """Keep the survey as it is, with ``message`` logged once for this ``version`` of the file."""
        self._seen = version
        logging.getLogger("privrank.serve").warning("privrank serve: warning: %s", message)
