"""The demo scenario: the story that `clusterlab demo`, the notebooks and the golden tests tell.

    from clusterlab.simulator.demo import write_demo
    write_demo("data_samples/bundle")          # or: clusterlab simulate --scenario demo --out DIR

Unlike the random fleet (`clusterlab.simulator.simulate`), every incident here is placed by hand
(story.py) so that a reader can follow it; the files are written by the simulator's own writers
(Sink, textlog, stamps, rank_steps, the sacct columns of scheduler). The same call gives the same
bytes: `random` seeded per concern from a fixed string, gzip with mtime 0, no clock.
"""

from __future__ import annotations

import time
from pathlib import Path

from clusterlab.simulator.bundle import SimulationResult
from clusterlab.simulator.demo import kernel, megatron, single_node, slurm, titan, truth
from clusterlab.simulator.demo.files import Files
from clusterlab.simulator.demo.story import build_story

__all__ = ["write_demo"]


def write_demo(out: Path | str) -> SimulationResult:
    """Write the demo bundle (and its truth.json) to `out`, replacing what is there."""
    began = time.perf_counter()
    story = build_story()
    files = Files(Path(out))
    truth.write_inventory(files)
    records = megatron.write_llama(files, story) + titan.write_mm(files, story)
    single_node.write_ds(files, story)
    single_node.write_hf(files, story)
    kernel.write_nodes(files, story)
    jobs = slurm.slurm_jobs(story)
    slurm.write_sacct(files, jobs)
    slurm.write_jobcomp(files, jobs)
    slurm.write_slurmctld(files, story, jobs)
    incidents = truth.write_truth(files, story)
    size = files.finish()
    attempts = len(story.llama) + len(story.mm) + 2
    return SimulationResult(Path(out), len(files.sink.paths), size, files.sink.text_bytes, 4, attempts, incidents,
                            records, time.perf_counter() - began)
