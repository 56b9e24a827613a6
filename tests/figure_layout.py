"""Checks on a drawn matplotlib figure that a person would otherwise catch by eye: labels that overlap each
other, and text cut off at the figure's edge."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.text import Text


def _texts(fig: Figure) -> list[Text]:
    """Every visible, non-empty text of the figure: titles, tick labels, annotations, legend entries."""
    drawn_ticks = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            # NOTE: an axis keeps label objects for ticks outside its view too; only these are drawn
            for tick in axis._update_ticks():
                drawn_ticks |= {id(tick.label1), id(tick.label2)}
    tick_labels = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                   for t in axis.get_majorticklabels() + axis.get_minorticklabels()}
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()
            and (id(t) not in tick_labels or id(t) in drawn_ticks)]


def layout_problems(fig: Figure, pad_px: float = 1.0) -> list[str]:
    """What is wrong with the figure's text as drawn: pairs that overlap, and texts past the figure's edge."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # a Figure made without pyplot has no renderer of its own
    canvas.draw()
    renderer = canvas.get_renderer()
    edge = fig.bbox
    boxes = []
    for t in _texts(fig):
        box = t.get_window_extent(renderer)
        if box.width <= 0 or box.height <= 0:
            continue
        boxes.append((t.get_text(), box.padded(-pad_px)))
    problems = [f"{text!r} is cut off at the figure's edge" for text, b in boxes
                if b.x0 < edge.x0 - 1 or b.y0 < edge.y0 - 1 or b.x1 > edge.x1 + 1 or b.y1 > edge.y1 + 1]
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1:]:
            if a.overlaps(b):
                problems.append(f"{ta!r} overlaps {tb!r}")
    return problems
