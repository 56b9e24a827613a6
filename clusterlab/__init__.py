"""clusterlab: where did the GPU-hours go, whose fault was it, and what now."""

from clusterlab.lab import Lab, connect

__all__ = ["Lab", "connect"]
__version__ = "0.1.0"
