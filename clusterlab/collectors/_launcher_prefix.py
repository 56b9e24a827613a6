"""The prefixes a launcher puts before each line it relays from a rank, as bytes for a collector's sniff.

A Ray actor's or task's `(RayTrainWorker pid=1234, ip=10.0.0.1) ` (SkyPilot's `(worker1, rank=1, pid=2, ip=...) `),
torchrun's tee `[rank3]: ` / `[default3]: ` (and `[3]: ` where the role name is empty), srun --label's `3: `.
"""

from __future__ import annotations

RANK_LINE = rb"\([\w.-]+,? (?:rank=\d+, )?pid=\d+(?:, ip=[\w.:]+)?\) |\[(?:rank|default)?\d{1,6}\]: ?|\d{1,6}: "
