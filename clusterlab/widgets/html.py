"""Frames as small HTML tables for the widgets; every value is escaped (log text is untrusted)."""

from __future__ import annotations

import datetime as dt
import html

import polars as pl

MAX_ROWS = 50  # rows a table shows; the frame behind it has them all

_STYLE = ("<style>.cl-t{border-collapse:collapse;font-size:12px;font-family:var(--jp-ui-font-family,sans-serif)}"
          ".cl-t th,.cl-t td{border-bottom:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top;"
          "white-space:nowrap;line-height:1.35}.cl-t th{position:sticky;top:0;background:#f3f3f3}"
          ".cl-t tr.cl-sel{background:#fff3cd}.cl-t td.cl-wrap{white-space:normal;min-width:240px;max-width:720px}"
          ".cl-t code{white-space:pre-wrap;word-break:break-all;font-size:11px}"
          ".cl-box{overflow:auto;border:1px solid #e5e5e5}"
          ".cl-note{color:#555;font-size:12px}.cl-warn{color:#8a4b00;font-weight:bold}"
          ".cl-error{color:#8b1a1a;background:#fdecea;border:1px solid #f5c2c0;padding:4px 8px;font-size:12px}"
          "</style>")


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
          selected: object = None, code: tuple[str, ...] = (), wrap: tuple[str, ...] = (),
          max_rows: int = MAX_ROWS, height_px: int | None = None) -> str:
    """An HTML table of `columns`, in a scrolling box `height_px` high; the row whose `key` is `selected` is lit."""
    cols = [c for c in (columns or frame.columns) if c in frame.columns]
    if not frame.height:
        return _STYLE + '<div class="cl-note">none</div>'
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    body = []
    for row in frame.head(max_rows).iter_rows(named=True):
        cls = ' class="cl-sel"' if key is not None and row.get(key) == selected else ""
        cells = "".join(_cell(row[c], c in code, c in wrap or c in code) for c in cols)
        body.append(f"<tr{cls}>{cells}</tr>")
    more = (f'<div class="cl-note">{frame.height - max_rows:,} more rows in the frame</div>'
            if frame.height > max_rows else "")
    box = f' style="max-height:{height_px}px"' if height_px else ""
    return f'{_STYLE}<div class="cl-box"{box}><table class="cl-t"><tr>{head}</tr>{"".join(body)}</table></div>{more}'


def _cell(value: object, code: bool, wrap: bool) -> str:
    text = f"<code>{esc(value)}</code>" if code else esc(value)
    return f'<td class="cl-wrap">{text}</td>' if wrap else f"<td>{text}</td>"


def evidence(frame: pl.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """Evidence lines, root cause first, each with the file and line it came from."""
    if not frame.height:
        return _STYLE + '<div class="cl-note">no evidence lines for this incident</div>'
    shown = frame.with_columns(where=pl.format("{}:{}", pl.col("file"), pl.col("line")))
    cols = ["rank_in_incident", "ts", "host", "source", "kind", "where", "text"]
    return table(shown, cols, code=("text",), max_rows=max_rows, height_px=360)


def note(text: str, warn: bool = False) -> str:
    """One escaped line of explanation (or warning)."""
    return f'{_STYLE}<div class="{"cl-warn" if warn else "cl-note"}">{esc(text)}</div>'


def facts(pairs: list[tuple[str, object]]) -> str:
    """A line of `label: value` facts, escaped."""
    return _STYLE + '<div class="cl-note">' + " · ".join(
        f"<b>{esc(k)}</b> {esc(v)}" for k, v in pairs) + "</div>"


def error(text: str) -> str:
    """An error box: one escaped line saying what could not be shown and why."""
    return f'{_STYLE}<div class="cl-error">{esc(text)}</div>'
