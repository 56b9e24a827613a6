"""Relaunch backends, one module each behind `base.Backend`.

A Kubernetes backend fits the same interface: `command` a Job manifest applied with `kubectl apply -f -`
(node affinity `NotIn` the excluded hosts, the resume checkpoint in the pod environment), `drain_command`
`kubectl cordon <node>`, `state` from `kubectl get job`.
"""

from __future__ import annotations

from clusterlab.relaunch.backends.base import Backend, Launch, LaunchSpec, run_argv
from clusterlab.relaunch.backends.slurm import SlurmBackend
from clusterlab.relaunch.backends.torchrun import TorchrunBackend

BACKENDS: dict[str, type[Backend]] = {"slurm": SlurmBackend, "torchrun": TorchrunBackend}

__all__ = ["BACKENDS", "Backend", "Launch", "LaunchSpec", "get_backend", "run_argv"]


def get_backend(name: str) -> Backend:
    """A backend by name (ValueError naming the known ones otherwise)."""
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}") from None
