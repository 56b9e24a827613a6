"""Loss spikes: derived from a file's `steps` rows after ingest, stored as `loss_divergence` events.

A spike is a step whose loss is `SPIKE_RATIO` times the median loss of the `WINDOW` step rows before it
(at least `MIN_WINDOW` of them, so that the first rows of a log, a warmup's falling loss included, are
never judged) and at least `MIN_JUMP` above it (a fine-tune's loss near zero doubles on noise). Past the
first `EARLY_STEPS` steps, where the loss falls fast and jumps on the way down are routine, a short excerpt
(a user pastes the few lines around the jump) is judged too: a loss `LATE_RATIO` times the lower quartile
of the rows before it (one is enough) and `LATE_JUMP` nats above it; the quartile, not the median, so that a
climb over several rows is measured from where it began; rows still falling fast (the oldest of the window
`FALLING` times the newest) are left to the median rule whatever their step. Late-training noise moves an
LLM loss by tenths of a nat, a real spike by several. One event marks each episode (a spiking row with no
other in the `MIN_WINDOW` rows before it), with what came after it: `recovered` when a row within
`HORIZON` rows came back to `RECOVERED_RATIO` times the level before the spike (the median, or the quartile
of the late rule), else `diverged` (the loss stayed high, turned NaN, or the log ended). A diverged episode
that no later row came back from is restated (`loss_not_recovered`) at the file's last step row.

The events are derived rows of the file (`file_id`, source `training_health`): `refresh` deletes them and
computes them again from all the file's step rows, so a re-read or a grown file gives what a clean ingest
gives. Everything runs as SQL window functions in DuckDB, over each file's rows (all the files of a write
batch in one statement).
"""

from __future__ import annotations

import duckdb

SOURCE = "training_health"
SPIKE_RATIO = 3.0  # a loss this many times the trailing median ...
MIN_JUMP = 0.5  # ... and at least this far above it (nats) is a spike
WINDOW = 20  # step rows in the trailing median
MIN_WINDOW = 8  # rows the median needs before a row is judged
HORIZON = 50  # rows after a spike searched for the recovery
RECOVERED_RATIO = 1.5  # back within this factor of the median before the spike: recovered
EARLY_STEPS = 1000  # steps of warmup and fast descent, judged by the median rule only
LATE_RATIO = 1.4  # past them, a loss this many times the lower quartile of the rows before it ...
LATE_JUMP = 1.5  # ... and at least this far above it (nats) is a spike, even in a short excerpt
FALLING = 1.3  # unless the oldest of those rows is this many times the newest: a descent, judged as warmup

# NOTE: one statement for every file of a write batch (each window and join partitioned by file): one per file cost
# a DuckDB query plan per file, most of a batch of small logs' write time
_SQL = f"""
WITH best AS (  -- one step source per file: Megatron-DeepSpeed logs give rows from two collectors
    SELECT file_id, source FROM steps WHERE @FILES AND loss IS NOT NULL
    GROUP BY file_id, source QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY count(*) DESC, source) = 1
),
s AS MATERIALIZED (
    SELECT file_id, run, attempt, line, ts, host, rank, step, loss,
           row_number() OVER (PARTITION BY file_id ORDER BY line) AS rn
    FROM steps JOIN best USING (file_id, source) WHERE @FILES AND isfinite(loss)
),
lo AS (  -- a necessary condition first (the median is at least the minimum), cheap over every row
    SELECT *, min(loss) OVER prior AS lo, count(*) OVER prior AS n,
           -- still falling fast (a late step count does not make a descent late): the late rule does not judge it
           coalesce(first_value(loss) OVER prior > {FALLING} * lag(loss) OVER (PARTITION BY file_id ORDER BY rn),
                    false) AS falling
    FROM s
    WINDOW prior AS (PARTITION BY file_id ORDER BY rn ROWS BETWEEN {WINDOW} PRECEDING AND 1 PRECEDING)
),
cand AS (
    SELECT * FROM lo WHERE (n >= {MIN_WINDOW} AND loss >= {SPIKE_RATIO} * lo AND loss - lo >= {MIN_JUMP})
        OR (n >= 1 AND step >= {EARLY_STEPS} AND NOT falling AND loss >= {LATE_RATIO} * lo
            AND loss - lo >= {LATE_JUMP})
),
f AS (  -- the exact trailing median and lower quartile, for the few candidates only
    SELECT c.file_id, c.rn, any_value(c.run) AS run, any_value(c.attempt) AS attempt, any_value(c.line) AS line,
           any_value(c.ts) AS ts, any_value(c.host) AS host, any_value(c.rank) AS rank, any_value(c.step) AS step,
           any_value(c.loss) AS loss, any_value(c.n) AS n, any_value(c.falling) AS falling, median(p.loss) AS m,
           quantile_cont(p.loss, 0.25) AS q
    FROM cand c JOIN s p ON p.file_id = c.file_id AND p.rn >= c.rn - {WINDOW} AND p.rn < c.rn
    GROUP BY c.file_id, c.rn
),
rules AS (  -- `med`: the level the spike is measured from (and recovery judged against), `what` names it
    SELECT *, CASE WHEN by_median THEN m ELSE q END AS med, CASE WHEN by_median THEN 'median' ELSE 'lower quartile'
           END AS what
    FROM (SELECT *, n >= {MIN_WINDOW} AND m > 0 AND loss >= {SPIKE_RATIO} * m AND loss - m >= {MIN_JUMP} AS by_median,
                 n >= 1 AND step >= {EARLY_STEPS} AND NOT falling AND q > 0 AND loss >= {LATE_RATIO} * q
                 AND loss - q >= {LATE_JUMP} AS late FROM f)
    WHERE by_median OR late
),
starts AS (  -- one event per episode: no other spike in the MIN_WINDOW rows before (a diverging loss jumps again)
    SELECT * FROM rules
    QUALIFY coalesce(rn - lag(rn) OVER (PARTITION BY file_id ORDER BY rn) > {MIN_WINDOW}, true)
),
judged AS (
    SELECT st.file_id, st.rn, st.run, st.attempt, st.line, st.ts, st.host, st.rank, st.step, st.loss, st.med,
           st.what, st.n,
           min(l.rn) FILTER (WHERE l.loss <= {RECOVERED_RATIO} * st.med) AS back_rn,
           arg_min(l.step, l.rn) FILTER (WHERE l.loss <= {RECOVERED_RATIO} * st.med) AS back_step,
           count(l.rn) AS after_n
    -- NOTE: the HORIZON rows after each spike by equality (a hash join), not a range join over the whole file
    FROM starts st CROSS JOIN range(1, {HORIZON} + 1) o(k)
    LEFT JOIN s l ON l.file_id = st.file_id AND l.rn = st.rn + o.k
    GROUP BY ALL
),
tail AS (  -- each file's last step row, NaN or not: where a loss that never came back stands when the log ends
    SELECT file_id, run, attempt, line, ts, host, rank, step FROM steps JOIN best USING (file_id, source)
    WHERE @FILES QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY line DESC) = 1
),
last_diverged AS (
    SELECT * FROM judged WHERE back_rn IS NULL QUALIFY row_number() OVER (PARTITION BY file_id ORDER BY rn DESC) = 1
),
stuck AS (  -- the last diverged episode, if no row after it ever came back
    SELECT j.* FROM last_diverged j JOIN tail t USING (file_id)
    WHERE j.line < t.line
      AND coalesce((SELECT min(loss) FROM s WHERE s.file_id = j.file_id AND s.rn > j.rn) > {RECOVERED_RATIO} * j.med,
                   true)
)
SELECT file_id, '{SOURCE}' AS source, run, attempt, line, ts, host, rank,
       'loss_spike' AS kind, 'loss_divergence' AS failure_mode,
       CASE WHEN back_rn IS NULL THEN 'error' ELSE 'warning' END AS severity,
       format('loss {{:.4f}} at {{}} is {{:.1f}}x the {{}} {{:.4f}} of the {{}} steps before it; {{}}',
              loss, coalesce('step ' || step, 'line ' || line), loss / med, what, med, n,
              CASE WHEN back_rn IS NOT NULL THEN 'recovered ' || (back_rn - rn) || ' row(s) later'
                                                 || coalesce(' (step ' || back_step || ')', '')
                   WHEN after_n = 0 THEN 'the log ends there'
                   ELSE 'not back near it in the ' || after_n || ' row(s) after' END) AS text,
       json_object('step', step, 'loss', round(loss, 6), 'trailing_median', round(med, 6),
                   'ratio', round(loss / med, 2), 'window', n,
                   'outcome', CASE WHEN back_rn IS NULL THEN 'diverged' ELSE 'recovered' END,
                   'recovered_at_step', back_step)::VARCHAR AS detail
FROM judged
UNION ALL BY NAME
-- NOTE: root cause rejects evidence the job stepped past; a loss that stayed diverged is evidence up to the
-- end, so it is restated at the last row, where nothing stepped past it.
SELECT j.file_id, '{SOURCE}' AS source, t.run, t.attempt, t.line, t.ts, t.host, t.rank,
       'loss_not_recovered' AS kind, 'loss_divergence' AS failure_mode, 'error' AS severity,
       format('the loss never came back to {{:.4f}} ({RECOVERED_RATIO}x the median before the spike at {{}}) '
              || 'before the log ends at {{}}', {RECOVERED_RATIO} * j.med,
              coalesce('step ' || j.step, 'line ' || j.line), coalesce('step ' || t.step, 'line ' || t.line)) AS text,
       json_object('step', t.step, 'spike_step', j.step, 'trailing_median', round(j.med, 6),
                   'outcome', 'diverged')::VARCHAR AS detail
FROM stuck j JOIN tail t USING (file_id)
"""


def _files(file_ids: list[int]) -> str:
    """The SQL condition for these files: their range first (DuckDB skips the row groups outside it: a batch's ids
    are consecutive), then each (ids are integers of the store's, formatted, never text)."""
    ids = ",".join(str(int(i)) for i in sorted(set(file_ids)))
    return f"file_id BETWEEN {min(file_ids)} AND {max(file_ids)} AND file_id IN ({ids})"


def refresh_files(con: duckdb.DuckDBPyConnection, files: dict[int, dict[str, int] | None]) -> int:
    """Recompute the loss-spike events of these ingested files in one pass; returns how many they have now.

    `files`: each file's row counts (a file result's, or None), given the net change in `events` (so a grown
    file's counts stay right)."""
    if not files:
        return 0
    where = _files(list(files))
    gone = dict(con.execute(f"SELECT file_id, count(*) FROM events WHERE {where} AND source = '{SOURCE}' "
                            "GROUP BY file_id").fetchall())
    if gone:
        con.execute(f"DELETE FROM events WHERE {where} AND source = '{SOURCE}'")
    # most files hold no loss at all (kernel logs, NCCL, sacct): one probe instead of the window query
    if not gone and not con.execute(f"SELECT 1 FROM steps WHERE {where} AND loss IS NOT NULL LIMIT 1").fetchall():
        return 0
    con.execute(f"INSERT INTO events BY NAME {_SQL.replace('@FILES', where)}")
    made = dict(con.execute(f"SELECT file_id, count(*) FROM events WHERE {where} AND source = '{SOURCE}' "
                            "GROUP BY file_id").fetchall())
    for file_id, rows in files.items():
        change = made.get(file_id, 0) - gone.get(file_id, 0)
        if rows is not None and change:
            rows["events"] = rows.get("events", 0) + change
    return sum(made.values())


def refresh(con: duckdb.DuckDBPyConnection, file_id: int, rows: dict[str, int] | None = None) -> int:
    """Recompute the loss-spike events of one ingested file (`refresh_files` of one)."""
    return refresh_files(con, {file_id: rows})
