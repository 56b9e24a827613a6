"""The what-if's one error, below both the policies and the provider comparison that raise it."""


class PolicyError(ValueError):
    """A policy the run's evidence cannot price, or a policy spec that does not parse."""
