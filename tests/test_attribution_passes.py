"""The few reads of the per-rank table that attribution makes give what reading it the plain way gives.

Attribution reads the per-rank timings (100M rows in a fleet) once for the clock sample and once for the
per-step profile, and takes everything else from that profile. Each shortcut is checked against the plain
query it replaces: the profile grouped by the step alone (attempts that share no step number) against the
profile grouped by (attempt, step), the sampled multiples of a stride against `step % stride = 0`, the
candidates' last step from the profile against the table, and the inventory of a few hosts against the view.
"""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest
from polars.testing import assert_frame_equal
from timelines import T0

from clusterlab import Lab
from clusterlab.account import attribution
from clusterlab.diagnose import incidents, timeline
from clusterlab.ingest import attempts

RANKS, PER_HOST, STEPS = 16, 4, 40


CLOCK_US = f"1e6 * (i * 2.0 + 300 * a + 0.3 * (r // {PER_HOST}) + 0.001 * (r % {PER_HOST}))"


def _write(lab: Lab, overlap: bool = False, clock_us: str = CLOCK_US) -> None:
    """Four attempts of STEPS steps on hosts whose clocks run 0.3 s x h apart, the ranks of a host a millisecond
    apart; rank 5 computes slowly in the middle of each attempt. With `overlap`, each attempt resumes 10 steps
    before the last one's end (a restart from its checkpoint). A few rows name no attempt (steps 500-504), one
    no host. `clock_us`: each row's time, microseconds after T0, from its index i, attempt a and rank r."""
    back = 10 if overlap else 0
    lab.con.execute("INSERT INTO runs (run, cluster, gpus) VALUES ('r', 'c', ?)", [RANKS])
    lab.con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (1, '/steps', 'r', 1)")
    lab.con.execute(f"""
        INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank, step, step_s, compute_s,
                                comm_s, data_s)
        SELECT 1, 'steps', 'r', a, i * {RANKS} + r,
               TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_microseconds(CAST({clock_us} AS BIGINT)),
               'n-' || CAST(r // {PER_HOST} AS VARCHAR), r, s, 2.0,
               CASE WHEN r = 5 AND s % {STEPS} BETWEEN 10 AND 20 THEN 1.9 ELSE 1.5 + 0.001 * r END, 0.35, 0.05
        FROM (SELECT range AS i, range // {STEPS} + 1 AS a, range - (range // {STEPS}) * {back} AS s
              FROM range({STEPS * 4})) st, range({RANKS}) rk(r)
        UNION ALL
        SELECT 1, 'steps', 'r', NULL, 10000 + s * {RANKS} + r, TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_seconds(s),
               'n-0', r, 500 + s, 2.0, 1.5, 0.35, 0.05
        FROM range(5) st(s), range({RANKS}) rk(r)
        UNION ALL  -- a row that names no host: the clock sample's span is read on its own
        SELECT 1, 'steps', 'r', 1, 20000, TIMESTAMP '{T0:%Y-%m-%d %H:%M:%S}' + to_seconds(10), NULL, 99, 5, 2.0,
               1.5, 0.35, 0.05
    """)
    attempts.refresh(lab.con)


def _by_hash(monkeypatch: pytest.MonkeyPatch, con, run: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The profile grouped by (attempt, step) and the clock offsets from samples grouped by (attempt, host, step),
    as without the shortcuts."""
    with monkeypatch.context() as m:
        m.setattr(timeline, "PERFECT_MAX_BITS", 0)
        m.setattr(timeline, "_disjoint", lambda ranges: False)
        return timeline.rank_profile(con, run), timeline.host_offsets(con, run)


@pytest.mark.parametrize("overlap", [False, True])
def test_profile_and_clock_sample_grouped_by_the_step_alone_equal_those_by_attempt_and_step(
        monkeypatch: pytest.MonkeyPatch, overlap: bool) -> None:
    with Lab(":memory:") as lab:
        _write(lab, overlap)
        assert timeline.host_offsets(lab.con, "r")["off_us"].abs().max() > 0  # the clock shift takes part
        assert timeline._disjoint(timeline._step_ranges(lab.con, "r")) is not overlap
        lab.con.execute("SET perfect_ht_threshold = 14")
        got = timeline.rank_profile(lab.con, "r")
        assert lab.con.execute("SELECT current_setting('perfect_ht_threshold')").fetchall() == [(14,)]  # as it was
        got_off = timeline.host_offsets(lab.con, "r")
        want, want_off = _by_hash(monkeypatch, lab.con, "r")
    assert_frame_equal(got_off.sort("attempt", "host"), want_off.sort("attempt", "host"), check_column_order=False)
    assert got_off.height == 4 * RANKS // PER_HOST
    order = ["attempt", "step"]
    assert got.columns == want.columns and got.schema == want.schema
    assert got.height == STEPS * 4 + 5
    # which host is slowest is arbitrary where the ranks tie; here they never do
    assert_frame_equal(got.sort(order, nulls_last=True), want.sort(order, nulls_last=True))
    assert got.filter(pl.col("attempt").is_null())["step"].sort().to_list() == list(range(500, 505))
    slow = got.filter(pl.col("max_c") > 1.8)
    assert slow.height == 4 * 11 and set(slow["slow_host"]) == {"n-1"}


@pytest.mark.parametrize("lo, hi", [(0, 50_000), (2**31 - 40_000, 2**31 + 10_000), (-30_000, 20_000)])
def test_the_sampled_steps_are_the_multiples_of_the_stride(lo: int, hi: int) -> None:
    with Lab(":memory:") as lab:
        lab.con.execute("CREATE TEMP TABLE r AS SELECT range AS step FROM range(?, ?)", [lo, hi])
        for stride in (1, 2, 3, 7, 12, 64, 96, 199, 1000, 65_537):
            want = lab.con.execute(f"SELECT count(*) FROM r WHERE step % {stride} = 0").fetchall()[0][0]
            one = timeline._multiples(str(stride), lo, hi)
            assert lab.con.execute(f"SELECT count(*) FROM r WHERE {one}").fetchall()[0][0] == want, stride
        # per attempt (a join with the strides)
        strides = pl.DataFrame({"attempt": [1, 2], "stride": [12, 7]})
        odd = pl.col("stride") // (pl.col("stride") & -pl.col("stride"))
        b = strides.with_columns(_mask=(pl.col("stride") & -pl.col("stride")) - 1, _lim=(2**32 - 1) // odd,
                                 _inv=odd.map_elements(lambda d: pow(d, -1, 2**32), return_dtype=pl.Int64))
        lab.con.register("b", b.to_arrow())
        joined = timeline._multiples("b.stride", lo, hi)
        got = lab.con.execute(f"SELECT b.attempt, count(*) FROM r, b WHERE {joined} GROUP BY 1 ORDER BY 1").fetchall()
        want = lab.con.execute("SELECT b.attempt, count(*) FROM r, b WHERE r.step % b.stride = 0 "
                               "GROUP BY 1 ORDER BY 1").fetchall()
        assert got == want


def test_candidates_take_the_last_step_from_the_profile_as_from_the_table() -> None:
    """Attempt 2's last record, 200 s after its last step, has no step number: the evidence window (100 s here)
    still runs back from it."""
    with Lab(":memory:") as lab:
        _write(lab)
        last = T0 + dt.timedelta(seconds=2.0 * (2 * STEPS - 1) + 300 * 2 + 200)
        lab.con.execute("INSERT INTO rank_steps (file_id, source, run, attempt, line, ts, host, rank) "
                        "VALUES (1, 'steps', 'r', 2, 99999, ?, 'n-0', 0)", [last])
        lab.con.execute("INSERT INTO ingested_files (file_id, path, run, attempt) VALUES (2, '/torch', 'r', 2)")
        lab.con.execute("""INSERT INTO events (file_id, source, run, attempt, line, ts, host, kind, failure_mode,
                                               severity, text)
                           SELECT 2, 'torch', 'r', 2, range, ? - to_seconds(range * 50), 'n-1', 'cuda_error',
                                  'cuda_error', 'error', 'CUDA error' FROM range(6)""", [last])
        attempts.refresh(lab.con)
        s = incidents.Settings(window_s=100.0)
        profile = timeline.rank_profile(lab.con, "r")
        got = incidents.candidates(lab.con, "r", s, profile)
        want = incidents.candidates(lab.con, "r", s)
    assert got.height == 3  # 0, 50 and 100 s before the step-less record
    assert_frame_equal(got.sort("attempt", "ts"), want.sort("attempt", "ts"))


def test_the_inventory_of_a_few_hosts_equals_the_view() -> None:
    with Lab(":memory:") as lab:
        _write(lab)
        lab.con.execute("INSERT INTO clusters (cluster, provider, gpu, gpus_per_node) VALUES ('c', 'p', 'H100', 8)")
        lab.con.execute("INSERT INTO nodes (host, cluster) VALUES ('n-0', 'c'), ('spare-1', 'c')")
        lab.con.execute("INSERT INTO events (file_id, source, line, ts, host, kind, failure_mode, severity, text) "
                        "VALUES (1, 'kernel', 1, ?, 'nfs-9', 'nfs', 'filesystem_io', 'error', 'x')", [T0])
        hosts = pl.Series(["n-0", "n-1", "n-2", "spare-1", "nfs-9", "fabric", None, "n-1"])
        for ranked in ([], ["n-2"]):
            got = attribution._inventory(lab.con, hosts, pl.Series(ranked, dtype=pl.String))
            want = lab.sql("SELECT host, cluster, provider FROM inventory WHERE host IN "
                           "('n-0', 'n-1', 'n-2', 'spare-1', 'nfs-9', 'fabric')")
            assert_frame_equal(got.sort("host"), want.sort("host"))
    assert set(got["host"]) == {"n-0", "n-1", "n-2", "spare-1", "nfs-9"}  # "fabric" is nowhere: no row
