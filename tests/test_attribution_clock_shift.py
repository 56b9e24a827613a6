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
from test_attribution_passes import PER_HOST, RANKS, STEPS, _write

from clusterlab import Lab
from clusterlab.diagnose import timeline

# hosts' clocks 0.25 s x h (plus 7 µs x h) apart, each rank a few microseconds off its host
SKEWED_US = f"(i * 2.0 + 300 * a) * 1e6 + 250007 * (r // {PER_HOST}) + 13 * ((r * 7 + i) % 5)"


@pytest.mark.parametrize("overlap", [False, True])  # grouped by the step alone, and by (attempt, step)
def test_profile_step_ends_equal_each_row_shifted_by_its_hosts_offset(overlap: bool) -> None:
    with Lab(":memory:") as lab:
        _write(lab, overlap, SKEWED_US)
        offsets = timeline.host_offsets(lab.con, "r").filter(pl.col("off_us") != 0)
        got = timeline.rank_profile(lab.con, "r").sort("attempt", "step", nulls_last=True)  # (as SQL orders)
        lab.con.register("offsets", offsets.to_arrow())
        want = lab.sql("""
            SELECT attempt, step, max(ts - to_microseconds(coalesce(off_us, 0))) AS ts FROM rank_steps
            LEFT JOIN offsets USING (attempt, host) WHERE run = 'r' AND step IS NOT NULL
            GROUP BY attempt, step ORDER BY attempt, step""")
    # the hosts' offsets are large and not whole milliseconds: the shift is exercised, to the microsecond
    assert offsets["host"].n_unique() >= RANKS // PER_HOST - 1
    assert (offsets["off_us"].abs() > 200_000).any() and (offsets["off_us"] % 1000 != 0).any()
    shifted = got.filter(pl.col("attempt").is_not_null())  # (the rows naming no attempt are on the common clock)
    assert (shifted["ts"] != shifted["last_ts"]).all()
    assert got.height == want.height >= STEPS * 4
    assert_series_equal(got["ts"], want["ts"])
    assert got.schema["ts"] == pl.Datetime("us")
