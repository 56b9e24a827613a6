"""Checkpoints and rollbacks: a resume from an older step than the newest save is a lost checkpoint, once; a
deliberate rollback (after a diverging loss, or with a changed learning rate) loses nothing."""

from __future__ import annotations

import polars as pl
from timelines import Attempt, write_events, write_run

from clusterlab import Lab


def _lost(plan: list[Attempt], diverged_in: int | None = None) -> list[str]:
    with Lab(":memory:") as lab:
        write_run(lab.con, "r", 8, plan)
        if diverged_in is not None:
            write_events(lab.con, [{"t": plan[diverged_in - 1].end_s - 5, "host": "h-001", "kind": "loss_nonfinite",
                                    "source": "megatron",
                                    "failure_mode": "loss_divergence", "text": "lm loss: nan"}],
                         run="r", attempt=diverged_in, name="train.log")
        return lab.incidents("r").filter(pl.col("kind") == "checkpoint_lost")["incident_id"].to_list()


def test_a_resume_from_an_older_step_than_the_newest_save_is_a_lost_checkpoint_once() -> None:
    plan = [Attempt(0, 10, [5.0] * 120, saves={50: 3.0, 100: 3.0}),
            Attempt(900, 10, [5.0] * 30, first_step=51, load_step=50, saves={60: 3.0}),
            # the next resume goes back to 60, the newest save of the branch it continues: nothing more is lost
            Attempt(1_200, 10, [5.0] * 20, first_step=61, load_step=60)]
    assert _lost(plan) == ["r:2:checkpoint-lost:100"]


def test_a_rollback_past_a_diverging_loss_is_not_a_lost_checkpoint() -> None:
    plan = [Attempt(0, 10, [5.0] * 120, saves={50: 3.0, 100: 3.0}),
            Attempt(900, 10, [5.0] * 20, first_step=51, load_step=50)]
    assert _lost(plan, diverged_in=1) == []


def test_a_rollback_with_a_changed_learning_rate_is_not_a_lost_checkpoint() -> None:
    plan = [Attempt(0, 10, [5.0] * 120, saves={50: 3.0, 100: 3.0}, lr=3e-4),
            Attempt(900, 10, [5.0] * 20, first_step=51, load_step=50, lr=1.5e-4)]
    assert _lost(plan) == []
    same = [Attempt(0, 10, [5.0] * 120, saves={50: 3.0, 100: 3.0}, lr=3e-4),
            Attempt(900, 10, [5.0] * 20, first_step=51, load_step=50, lr=3e-4)]
    assert _lost(same) == ["r:2:checkpoint-lost:100"]
