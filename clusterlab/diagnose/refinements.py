"""A refinement of the diagnosis that fails leaves the answer it was refining, flagged, rather than no answer.

The root cause is decided by a core pass (candidates, progress, tiers) and then refined by rules that each read one
more kind of evidence: a sticky fault, a maintenance drain, silent data corruption, a failed resume, the rank that
stopped first, counter evidence, stragglers, checkpoints. Evidence nobody here wrote can reach a corner of one rule
that its tests never did; a traceback then costs the whole run's answer, every incident and the ledger. Instead the
rule's input goes on unrefined and the run's notes say which rule failed and why, so the answer reads as the
lesser one it is.

`CLUSTERLAB_STRICT=1` (the test suite sets it) raises instead: a failing rule is a defect to fix, not to hide.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# The notes of the attribution in progress (a list per `collecting()` scope; None outside one)
_NOTES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("refinement_notes", default=None)


def strict() -> bool:
    return os.environ.get("CLUSTERLAB_STRICT", "") not in ("", "0")


def refined(what: str, rule: Callable[[], T], unrefined: T) -> T:
    """`rule()`, or `unrefined` with a note where the rule raises (see the module's docstring)."""
    try:
        return rule()
    except Exception as e:  # noqa: BLE001 - any failure of a rule leaves the answer it refines
        if strict():
            raise
        note = (f"diagnosis incomplete: {what} failed ({type(e).__name__}: {str(e)[:200]}); "
                "the answer is given without it")
        notes = _NOTES.get()
        if notes is not None and note not in notes:
            notes.append(note)
        return unrefined


class collecting:  # noqa: N801 - used as a context manager, read as a phrase
    """Within `with collecting() as notes:`, the notes of the rules that failed are appended to `notes`."""

    def __enter__(self) -> list[str]:
        self._notes: list[str] = []
        self._token = _NOTES.set(self._notes)
        return self._notes

    def __exit__(self, *exc: object) -> None:
        _NOTES.reset(self._token)
