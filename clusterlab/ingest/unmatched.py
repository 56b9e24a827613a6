"""What clusterlab did not understand: trouble-looking lines no rule matched, grouped by template.

The parts of a line that vary from one occurrence to the next (times, numbers, hex, PCI and IP
addresses, directories, host names) are masked as named parameters, as Drain does, so that
thousands of lines from one program fold into a few templates. Sorted by count, each template keeps
one example with its file and line: the first thing to run on a new cluster's logs, to see which
collector to extend.

A continuation line (a C++ stack frame, `Exception raised from ...`, NCCL's `Last error:`, a Python
traceback's `File "...", line N`, torchrun's `<script> FAILED` title) is grouped with the line it
continues: the nearest kept line before it (after it, for the frames of a Python traceback, whose
exception line comes last). Continuing an unknown line, it counts in that line's template (`continued`);
continuing a line a rule read, it is part of a classified error: listed only when asked (`continued=True`),
last, as `continues a line a rule read`; with no such line near, it is listed after the real unknowns.

Masking is careful: a host is a name the bundle knows as a host, or a lowercase name ending in
`-<digits>` (`east-003`, `gpu-node-17`); `c10::Error`, `nvme0n1p2` and `[rank0]:` are no hosts (a
rank's number is masked as a number); a path keeps its file name (`<PATH>/ProcessGroupNCCL.cpp`).

(The hand-written masks in SQL, not Drain3: the grouping runs inside DuckDB over every kept line with no
Python loop, the templates are the same whatever the order lines come in, and continuation lines are a
question of neighbours, not of token similarity, which Drain does not answer.)

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
    # NOTE: the directories go, the file name stays: `ProcessGroupNCCL.cpp:618` says where, `<PATH>` alone nothing
    (r"(?:\.{1,2}/|/)?(?:[\w.@+-]+/){2,}([\w@+-][\w.@+-]*)", r"<PATH>/\1"),
    (r"(?:^|\s)/[\w.@+-]+/([\w@+-][\w.@+-]*)", r" <PATH>/\1"),
    # a host: lowercase words joined by hyphens ending in `-<digits>` (east-003, gpu-node-17, ip-10-0-3-7),
    # never a C++ scope (`c10::`), a device (`nvme0n1p2`) or a rank (`[rank0]`)
    (r"\b[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*(?:-\d+)+[a-z]?\b", "<HOST>"),
    (r"\b(rank|local_rank|default|Rank)(\d+)\b", r"\1<NUM>"),
    (r"[-+]?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b", "<NUM>"),
]

# A line that continues the one before it (after a `[rank0]:` prefix): a stack frame, where an exception was
# raised, NCCL's "Last error:" (its detail follows), a Python frame or the chained-exception banner
CONTINUATION = (r"^(?:frame #\d+: |#\d+\s+0x[0-9a-fA-F]+ in |Exception raised from \S+ at |Last error:\s*$|"
                r"File \"[^\"]*\", line \d+|During handling of the above exception|"
                r"The above exception was the direct cause|warnings\.warn\(\s*$|\S+ FAILED\s*$)")
# ... of which these continue the line AFTER them: a Python traceback's frames precede its exception line, and
# torchrun's `<script> FAILED` title precedes the root cause it summarises
FORWARD = r"^(?:File \"[^\"]*\", line \d+|During handling of the above exception|The above exception was|\S+ FAILED)"
RANK_PREFIX = r"^\s*\[(?:rank|default)?\d+\]:\s?"
BEFORE_LINES = 200  # a continuation's line is at most this far before it (a C++ trace of ~60 frames, and more)
AFTER_LINES = 60  # ... or after it (a Python traceback's frames)
HEAD_GAP = 100  # and no more than this between two kept lines of the same block

# the order templates are listed in: real unknowns first
RANK = {"continuation, its first line not kept": 1, "continues a line a rule read": 2}


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _template_sql(col: str = "text", hosts: str | None = None) -> str:
    expr = col
    if hosts is not None:  # the hosts the bundle names, whatever their shape, first
        expr = f"regexp_replace({expr}, {hosts}, '<HOST>', 'g')"
    for pattern, mask in MASKS:
        expr = f"regexp_replace({expr}, {_sql_str(pattern)}, {_sql_str(mask)}, 'g')"
    return f"trim(regexp_replace({expr}, '\\s+', ' ', 'g'))"


def _hosts_regex(con: duckdb.DuckDBPyConnection) -> str | None:
    """One regex of the host names the database knows (nodes, events, kept lines), longest first, or None."""
    names = [r[0] for r in con.execute("""
        SELECT DISTINCT host FROM (SELECT host FROM nodes UNION ALL SELECT host FROM unmatched_lines
                                   UNION ALL SELECT DISTINCT host FROM events)
        WHERE host IS NOT NULL AND length(host) BETWEEN 4 AND 64 AND regexp_matches(host, '^[A-Za-z0-9][\\w.-]*$')
        ORDER BY length(host) DESC, host LIMIT 5000""").fetchall()]
    if not names:
        return None
    return "\\b(?:" + "|".join(n.replace(".", "\\.") for n in names) + ")\\b"


def unmatched(con: duckdb.DuckDBPyConnection, run: str | None = None, limit: int | None = 50,
              continued: bool = False) -> pl.DataFrame:
    """One row per template: `template, seen_by, lines, files, hosts, example, file, line, continued` (the first
    occurrence; `continued`: continuation lines folded into it), real unknowns first, most frequent first.
    `seen_by` is "no rule", the collector that half-recognised it, or what a continuation line continues.

    `continued`: list the continuation lines of lines a rule read too (last): parts of a classified error."""
    hosts = _hosts_regex(con)
    return store.frame(con, f"""
        WITH raw AS (
            SELECT file_id, run, host, line, text, 'no rule' AS seen_by FROM unmatched_lines
            UNION ALL
            SELECT file_id, run, host, line, text, 'half-recognised by ' || source FROM events
            WHERE kind = 'unrecognised'
        ), u AS (
            SELECT u.*, f.path AS file, regexp_replace(u.text, {_sql_str(RANK_PREFIX)}, '') AS body
            FROM raw u JOIN ingested_files f USING (file_id) WHERE ($run IS NULL OR u.run = $run)
        ), c AS (  -- (a `[rank0]:` prefix is no part of the template: rank 3's "Last error:" is rank 0's)
            SELECT *, {_template_sql('body', _sql_str(hosts) if hosts else None)} AS template,
                   regexp_matches(ltrim(body), {_sql_str(CONTINUATION)}) AS cont,
                   regexp_matches(ltrim(body), {_sql_str(FORWARD)}) AS fwd FROM u
        ), marks AS (  -- the kept lines of files with continuations: what a rule read, what it did not
            SELECT DISTINCT file_id, line, 'event' AS role FROM events
            WHERE kind <> 'unrecognised' AND file_id IN (SELECT file_id FROM c WHERE cont)
            UNION ALL SELECT file_id, line, CASE WHEN cont THEN 'cont' ELSE 'unmatched' END FROM c
            WHERE file_id IN (SELECT file_id FROM c WHERE cont)
        ), gaps AS (
            SELECT *, line - lag(line, 1, -1000000) OVER (PARTITION BY file_id ORDER BY line, role) AS gap FROM marks
        ), near AS (  -- a block: kept lines no more than HEAD_GAP apart
            SELECT *, sum(CASE WHEN gap > {HEAD_GAP} THEN 1 ELSE 0 END)
                OVER (PARTITION BY file_id ORDER BY line, role ROWS UNBOUNDED PRECEDING) AS block FROM gaps
        ), heads AS (
            SELECT file_id, line, role,
                last_value(CASE WHEN role <> 'cont' THEN struct_pack(line, role) END IGNORE NULLS) OVER (
                    PARTITION BY file_id, block ORDER BY line ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev,
                first_value(CASE WHEN role <> 'cont' THEN struct_pack(line, role) END IGNORE NULLS) OVER (
                    PARTITION BY file_id, block ORDER BY line ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS next
            FROM near
        ), linked AS (
            SELECT c.*, CASE WHEN NOT c.cont THEN NULL
                WHEN c.fwd THEN coalesce(n, p) ELSE coalesce(p, n) END AS head
            FROM c LEFT JOIN (
                SELECT file_id, line,
                       CASE WHEN line - prev.line <= {BEFORE_LINES} THEN prev END AS p,
                       CASE WHEN next.line - line <= {AFTER_LINES} THEN next END AS n
                FROM heads WHERE role = 'cont') h USING (file_id, line)
        ), folded AS (  -- a continuation of an unknown line counts in that line's template
            SELECT h.template, h.seen_by, count(*) AS continued FROM linked l
            JOIN c h ON h.file_id = l.file_id AND h.line = l.head.line AND NOT h.cont
            WHERE l.head.role = 'unmatched' GROUP BY ALL
        ), listed AS (
            SELECT template, file, host, line, text,
                   CASE WHEN NOT cont THEN seen_by WHEN head IS NULL THEN 'continuation, its first line not kept'
                        ELSE 'continues a line a rule read' END AS seen_by
            FROM linked WHERE NOT cont OR head IS NULL OR (head.role = 'event' AND $continued)
        )
        SELECT template, seen_by, count(*) AS lines, count(DISTINCT file) AS files, count(DISTINCT host) AS hosts,
               arg_min(text, (file, line)) AS example, arg_min(file, (file, line)) AS file,
               arg_min(line, (file, line)) AS line, coalesce(any_value(f.continued), 0) AS continued
        FROM listed LEFT JOIN folded f USING (template, seen_by) GROUP BY template, seen_by
        ORDER BY CASE seen_by {" ".join(f"WHEN {_sql_str(k)} THEN {v}" for k, v in RANK.items())} ELSE 0 END,
                 lines DESC, template
        LIMIT coalesce($limit, 2147483647)
    """, {"run": run, "limit": limit, "continued": continued})
