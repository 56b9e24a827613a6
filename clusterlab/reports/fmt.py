"""How numbers, times and durations read in reports (shared by the data's sentences and the templates)."""

from __future__ import annotations

import datetime as dt
import math


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def duration(seconds: float | None) -> str:
    """12.3 → '12 s', 687.9 → '11 min 28 s', 7300 → '2 h 1 min'."""
    if _missing(seconds):
        return "—"
    s = round(float(seconds))
    if s < 60:
        return f"{float(seconds):.0f} s" if s >= 1 else f"{float(seconds):.1f} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def ts(v: dt.datetime | str | None, seconds: bool = True) -> str:
    """A UTC time as '2026-11-24 08:20:25 UTC' (milliseconds when it has them)."""
    if _missing(v):
        return "—"
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v)
    if not isinstance(v, dt.datetime):
        return str(v)
    if not seconds:
        return v.strftime("%Y-%m-%d %H:%M UTC")
    ms = f".{v.microsecond // 1000:03d}" if v.microsecond else ""
    return v.strftime("%Y-%m-%d %H:%M:%S") + ms + " UTC"


def num(v, digits: int = 2) -> str:
    """A number with thousands separators, '—' when missing."""
    if _missing(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,d}"
    return f"{float(v):,.{digits}f}"


def pct(v, digits: int = 1) -> str:
    """A share as a percentage."""
    return "—" if _missing(v) else f"{float(v) * 100:.{digits}f}%"


def usd(v) -> str:
    """Dollars with cents."""
    return "—" if _missing(v) else f"${float(v):,.2f}"


def signed(v, digits: int = 2) -> str:
    """A change, with its sign."""
    return "—" if _missing(v) else f"{float(v):+,.{digits}f}"


def offset(seconds: float | None) -> str:
    """Time relative to the root cause: '+11 min 28 s', '−4 min 43 s'."""
    if _missing(seconds):
        return "—"
    sign = "−" if seconds < 0 else "+"
    return sign + duration(abs(seconds))


def pp(v) -> str:
    """A change of a share, in percentage points."""
    return "—" if _missing(v) else f"{float(v) * 100:+.1f} pp"


ROUTINE = "no incident (routine checkpoint and startup time)"


def mode_label(mode) -> str:
    """A failure mode as reports show it: the ledger's `none` is routine time no incident caused, not 'unknown'."""
    return ROUTINE if _missing(mode) or mode == "none" else str(mode)


# Table kinds of a figure with its interval: `rate0` (a rate, 0 digits: the reliability note stands in
# for a withheld figure) and `mtbf1`/`mtbf2` (an MTBF: a dash stands in).
INTERVAL_KINDS = ("rate0", "mtbf1", "mtbf2")


def interval(row: dict, key: str, kind: str = "mtbf2") -> tuple[str, str]:
    """A rate or MTBF with its 95% interval (`key`, `key_lo`, `key_hi` in `row`), as (figure, interval) texts.

    A withheld figure (too little exposure) reads as the row's `reliability_note` for a rate, else "—";
    a missing upper bound is an unbounded interval (no failure yet)."""
    digits = int(kind[-1])
    point, lo, hi = row.get(key), row.get(f"{key}_lo"), row.get(f"{key}_hi")
    if _missing(lo) and _missing(hi):
        span = ""
    elif _missing(hi):
        span = f"95% CI ≥ {num(lo, digits)}"
    else:
        span = f"95% CI {num(lo, digits)}–{num(hi, digits)}"
    if not _missing(point):
        return num(point, digits), span
    note = row.get("reliability_note")
    return (str(note) if kind.startswith("rate") and not _missing(note) else "—"), span


_KINDS = {"pp": pp, "int": lambda v: num(v), "num0": lambda v: num(v, 0), "num1": lambda v: num(v, 1),
          "num2": lambda v: num(v, 2), "num3": lambda v: num(v, 3), "pct": pct, "usd": usd, "ts": ts,
          "dur": duration, "signed": signed, "offset": offset, "mode": mode_label}


def cell(v, kind: str = "text") -> str:
    """A table cell's text: numbers and times by `kind`, anything else as a string ('—' when missing)."""
    if kind in _KINDS:
        return _KINDS[kind](v)
    if _missing(v):
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list | tuple):
        return ", ".join(str(x) for x in v)
    return str(v)
