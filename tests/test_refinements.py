"""A refining rule that fails leaves the answer it refines, with a note naming it; strict mode raises instead."""

from __future__ import annotations

import polars as pl
import pytest
from timelines import Attempt, write_events, write_run

from clusterlab import Lab
from clusterlab.diagnose import (
    counter_evidence,
    incidents,
    load_failures,
    maintenance,
    onsets,
    root_cause,
    sdc,
    sticky,
    stopped_first,
    straggler_evidence,
)

# every guarded rule: its fallback must have the shape the code after it reads
RULES = [(sticky, "with_sticky_faults", "sticky-fault"), (maintenance, "with_maintenance", "maintenance"),
         (sdc, "with_silent_corruption", "silent-data-corruption"), (root_cause, "_divergence_onsets",
         "divergence-onset"), (load_failures, "lost_on_load", "failed-resume"),
         (stopped_first, "suspects", "stopped-first"), (counter_evidence, "with_counter_evidence", "counter-evidence"),
         (straggler_evidence, "stragglers", "straggler"), (incidents, "checkpoint_incidents", "checkpoint"),
         (onsets, "line_onsets", "line-onset"), (onsets, "open_save_onsets", "open-save-onset"),
         (onsets, "request_sent_onsets", "request-sent-onset"), (onsets, "kill_onsets", "kill-onset"),
         (onsets, "node_loss_onsets", "node-loss-onset")]


def _broken(*args, **kwargs):
    raise ValueError("a corner this rule never saw")


def _run(lab: Lab) -> None:
    write_run(lab.con, "r", 16, [Attempt(0, 30, [10.0] * 100), Attempt(2000, 30, [10.0] * 50)])
    write_events(lab.con, [{"t": 30 + 1000 + 2, "host": "h-001", "kind": "xid", "xid": 79,
                            "failure_mode": "gpu_fell_off_bus", "severity": "critical"}], name="h-001-dmesg")


@pytest.mark.parametrize(("module", "name", "rule"), RULES, ids=[r[2] for r in RULES])
def test_a_failing_rule_leaves_the_core_answer_and_says_so(monkeypatch: pytest.MonkeyPatch, module, name: str,
                                                           rule: str) -> None:
    monkeypatch.setenv("CLUSTERLAB_STRICT", "0")
    monkeypatch.setattr(module, name, _broken)
    with Lab(":memory:") as lab:
        _run(lab)
        a = lab.attribute("r")
    end = a.incidents.filter(pl.col("kind") == "attempt_end").row(0, named=True)
    assert (end["failure_mode"], end["host"]) == ("gpu_fell_off_bus", "h-001"), end
    assert [n for n in a.notes if n.startswith(f"diagnosis incomplete: the {rule} rule failed (ValueError")], a.notes
    assert abs(a.rows["gpu_hours"].sum() - a.gpu_hours) < 1e-6


def test_strict_mode_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERLAB_STRICT", "1")
    monkeypatch.setattr(sticky, "with_sticky_faults", _broken)
    with Lab(":memory:") as lab:
        _run(lab)
        with pytest.raises(ValueError, match="a corner"):
            lab.attribute("r")


def test_a_healthy_run_has_no_such_note() -> None:
    with Lab(":memory:") as lab:
        _run(lab)
        assert not [n for n in lab.attribute("r").notes if n.startswith("diagnosis incomplete")]
