"""Frames as small HTML tables for the widgets; every value is escaped (log text is untrusted)."""

from __future__ import annotations

import datetime as dt
import html

import polars as pl

MAX_ROWS = 50  # rows a table shows; the frame behind it has them all

_STYLE = ("<style>.cl-t{border-collapse:collapse;font-size:12px;font-family:var(--jp-ui-font-family,sans-serif)}"
          ".cl-t th,.cl-t td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}"
          ".cl-t tr.cl-sel{background:#fff3cd}.cl-t code{white-space:pre-wrap;word-break:break-all}"
          ".cl-note{color:#555;font-size:12px}.cl-warn{color:#8a4b00;font-weight:bold}</style>")


def esc(value: object) -> str:
    """A value as escaped text: datetimes to the second, floats to two decimals, None as blank."""
    if value is None:
        return ""
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:,.2f}"
    return html.escape(str(value), quote=True)


def table(frame: pl.DataFrame, columns: list[str] | None = None, key: str | None = None,
          selected: object = None, code: tuple[str, ...] = (), max_rows: int = MAX_ROWS) -> str:
    """An HTML table of `columns`; the row whose `key` equals `selected` is highlighted."""
    cols = [c for c in (columns or frame.columns) if c in frame.columns]
    if not frame.height:
        return _STYLE + '<div class="cl-note">none</div>'
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for row in frame.head(max_rows).iter_rows(named=True):
        cls = ' class="cl-sel"' if key is not None and row.get(key) == selected else ""
        cells = "".join(f"<td><code>{esc(row[c])}</code></td>" if c in code else f"<td>{esc(row[c])}</td>"
                        for c in cols)
        body.append(f"<tr{cls}>{cells}</tr>")
    more = (f'<div class="cl-note">{frame.height - max_rows:,} more rows in the frame</div>'
            if frame.height > max_rows else "")
    return f'{_STYLE}<table class="cl-t"><tr>{head}</tr>{"".join(body)}</table>{more}'


def evidence(frame: pl.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """Evidence lines, root cause first, each with the file and line it came from."""
    if not frame.height:
        return _STYLE + '<div class="cl-note">no evidence lines for this incident</div>'
    shown = frame.with_columns(where=pl.format("{}:{}", pl.col("file"), pl.col("line")))
    cols = ["rank_in_incident", "ts", "host", "source", "kind", "where", "text"]
    return table(shown, cols, code=("where", "text"), max_rows=max_rows)


def note(text: str, warn: bool = False) -> str:
    """One escaped line of explanation (or warning)."""
    return f'{_STYLE}<div class="{"cl-warn" if warn else "cl-note"}">{esc(text)}</div>'


def facts(pairs: list[tuple[str, object]]) -> str:
    """A line of `label: value` facts, escaped."""
    return _STYLE + '<div class="cl-note">' + " · ".join(
        f"<b>{esc(k)}</b> {esc(v)}" for k, v in pairs) + "</div>"
