"""The relaunch driver: from an incident to a running job again, without the bad nodes, from a real checkpoint.

`relaunch_plan(con, run)` is pure data; `execute(con, plan)` runs it through a backend (Slurm, torchrun),
records an audit row and is idempotent per incident.
"""

from __future__ import annotations

from clusterlab.relaunch.execute import Execution, execute
from clusterlab.relaunch.plan import Checkpoint, Exclusion, PlanSettings, RelaunchPlan, relaunch_plan
from clusterlab.relaunch.safety import UnsafeValueError, check_host, check_path

__all__ = ["Checkpoint", "Exclusion", "Execution", "PlanSettings", "RelaunchPlan", "UnsafeValueError", "check_host",
           "check_path", "execute", "relaunch_plan"]
