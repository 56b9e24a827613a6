"""The what-if's one error, below both the policies and the provider comparison that raise it."""


class PolicyError(ValueError):
    """A policy the run's evidence cannot price, or a policy spec that does not parse."""


class Thin(str):
    """An assumption that says the saving rests on too little exposure: its interval does not support a verdict.

    A pricer returns it among its assumptions; the pricing then says "too little exposure to tell" in its
    verdict (and the week's table) instead of a bare saving."""
