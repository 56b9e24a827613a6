"""The per-step profile puts every rank's time on the ranks' common clock exactly as shifting each row does.

`timeline.rank_profile` subtracts each host's clock offset in integer microseconds and turns the step's
maximum back into a time once (an interval subtracted on every row of a 100M-row table cost more than the
rest of the pass). Here the hosts' clocks are fractions of a second apart, with microseconds of jitter, and
the profile's step ends are checked against the plain query: each row's time minus its host's offset as an
interval, then the maximum per step.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_series_equal
from timelines import T0

from clusterlab import Lab, attempts, timeline

RANKS, PER_HOST, STEPS = 12, 3, 30


def _write(lab: Lab, overlap: bool) -> None:
    """Three attempts of STEPS steps; host h's clock runs 0.25 s x h (plus 7 µs x h) ahead, each rank a few
    microseconds off its host. With `overlap`, each attempt resumes 5 steps before the last one ended."""
    back = 5 if overlap else 0
    lab.con.execute("INSERT INTO runs (run, cluster, gpus) VALUES ('r', 'c', ?)", [RANKS])
    lab.con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (1, '/steps', 'r', 1)")
    lab.con.execute(f"""
        INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s, compute_s,
                                comm_s, data_s)
        SELECT 1, 'steps', 'r', a, i * {RANKS} + r,
               TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_microseconds(CAST(
                   (i * 2.0 + 400 * a) * 1e6 + 250007 * (r // {PER_HOST}) + 13 * ((r * 7 + i) % 5) AS BIGINT)),
               'n-' || CAST(r // {PER_HOST} AS VARCHAR), r, s, 2.0, 1.5 + 0.001 * r, 0.35, 0.05
        FROM (SELECT range AS i, range // {STEPS} + 1 AS a, range - (range // {STEPS}) * {back} AS s
              FROM range({STEPS * 3})) st, range({RANKS}) rk(r)
    """)
    attempts.refresh(lab.con)


@pytest.mark.parametrize("overlap", [False, True])  # grouped by the step alone, and by (attempt, step)
def test_profile_step_ends_equal_each_row_shifted_by_its_hosts_offset(overlap: bool) -> None:
    with Lab(":memory:") as lab:
        _write(lab, overlap)
        offsets = timeline.host_offsets(lab.con, "r").filter(pl.col("off_us") != 0)
        got = timeline.rank_profile(lab.con, "r").sort("attempt", "step")
        lab.con.register("offsets", offsets.to_arrow())
        want = lab.sql("""
            SELECT attempt, step, max(ts - to_microseconds(coalesce(off_us, 0))) AS ts FROM rank_steps
            LEFT JOIN offsets USING (attempt, host) WHERE run = 'r' AND step IS NOT NULL
            GROUP BY attempt, step ORDER BY attempt, step""")
    # the hosts' offsets are large and not whole milliseconds: the shift is exercised, to the microsecond
    assert offsets["host"].n_unique() >= RANKS // PER_HOST - 1
    assert (offsets["off_us"].abs() > 200_000).any() and (offsets["off_us"] % 1000 != 0).any()
    assert (got["ts"] != got["last_ts"]).all()
    assert got.height == want.height == STEPS * 3
    assert_series_equal(got["ts"], want["ts"])
    assert got.schema["ts"] == pl.Datetime("us")
