"""Plots: matplotlib figures drawn from frames the analysis made; they compute nothing of their own."""
