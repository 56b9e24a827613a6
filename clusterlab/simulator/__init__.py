"""A synthetic fleet in the evidence-bundle layout, in real log formats, with its ground truth.

    from clusterlab.simulator import simulate
    result = simulate("sim", seed=1, nodes_per_cluster=8, days=0.5, failure_scale=50)

See docs/simulate.md for the failure model, the files written and truth.json. The demo bundle
(data_samples/bundle/) is the hand-placed scenario `clusterlab.simulator.demo.write_demo`.
"""

from clusterlab.simulator.bundle import SimulationResult, simulate

__all__ = ["SimulationResult", "simulate"]
