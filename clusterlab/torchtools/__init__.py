"""Torch tools: what runs beside or inside a training job: the step recorder, preflight, FLOPs and model shapes.

torch is imported only where a tool needs it, so `flops` and `model_shape` serve the analysis without it.
"""
