"""What clusterlab did not understand: trouble-looking lines no rule matched, grouped by template.

The parts of a line that vary from one occurrence to the next (times, numbers, hex, PCI and IP
addresses, paths, host names with digits) are masked as named parameters, as Drain does, so that
thousands of lines from one program fold into a few templates. Sorted by count, each template keeps
one example with its file and line: the first thing to run on a new cluster's logs, to see which
collector to extend.

Lines a collector half-recognised (a prefix it knows, fields it could not read) are stored as events
of kind `unrecognised` with failure mode `unknown`; they are listed here too, named by that
collector, because they are exactly the lines a rule should be written for.
"""

from __future__ import annotations

import duckdb
import polars as pl

from clusterlab import store

# (pattern, mask), applied in order: the specific shapes before the bare numbers they contain
MASKS: list[tuple[str, str]] = [
    (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<TS>"),
    (r"\b\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\b", "<TIME>"),
    (r"\b[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]\b", "<PCI>"),
    (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b", "<IP>"),
    (r"\b0x[0-9a-fA-F]+\b", "<HEX>"),
    (r"\b[0-9a-fA-F]{12,}\b", "<HEX>"),
    (r"(?:/[\w.@+-]+){2,}/?", "<PATH>"),
    (r"\b[A-Za-z][\w-]*?-?\d+(?:\.[\w-]+)*\b", "<HOST>"),
    (r"[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", "<NUM>"),
]


def _template_sql(col: str = "text") -> str:
    expr = col
    for pattern, mask in MASKS:
        expr = f"regexp_replace({expr}, '{pattern}', '{mask}', 'g')"
    return f"trim(regexp_replace({expr}, '\\s+', ' ', 'g'))"


def unmatched(con: duckdb.DuckDBPyConnection, run: str | None = None, limit: int | None = 50) -> pl.DataFrame:
    """One row per template: `template, seen_by, lines, files, hosts, example, file, line` (the first
    occurrence), most frequent first. `seen_by` is "no rule", or the collector that half-recognised it."""
    return store.frame(con, f"""
        WITH raw AS (
            SELECT file_id, run, host, line, text, 'no rule' AS seen_by FROM unmatched_lines
            UNION ALL
            SELECT file_id, run, host, line, text, 'half-recognised by ' || source FROM events
            WHERE kind = 'unrecognised'
        ), u AS (
            SELECT u.*, f.path AS file, {_template_sql('u.text')} AS template FROM raw u
            JOIN ingested_files f USING (file_id) WHERE ($run IS NULL OR u.run = $run)
        )
        SELECT template, seen_by, count(*) AS lines, count(DISTINCT file) AS files, count(DISTINCT host) AS hosts,
               arg_min(text, (file, line)) AS example, arg_min(file, (file, line)) AS file,
               arg_min(line, (file, line)) AS line
        FROM u GROUP BY template, seen_by ORDER BY lines DESC, template
        LIMIT coalesce($limit, 2147483647)
    """, {"run": run, "limit": limit})
