"""The lane pictures' shared geometry: a horizontal scale, an axis, and the two-part frame.

A picture is two SVGs side by side: the lane names, which stay put, and the
lanes, which scroll sideways inside their box when they are wider than the
page (``.lanes`` in the stylesheet). Every shape carries a class, never a
style attribute (the page's policy allows no inline style); the stylesheet
gives the classes their colours.
"""

from __future__ import annotations

from dataclasses import dataclass

from fencepost.report.page import text

#: Height of one lane, and of the axis above the lanes, in pixels.
LANE_HEIGHT = 22
AXIS_HEIGHT = 20

#: The width the lanes get when everything fits: a short run is stretched to it.
FIT_WIDTH = 880

#: Widest the lanes may be, in pixels; past it the scale shrinks (a 10^4-step run stays a few screens wide).
MAX_WIDTH = 60_000

#: Pictures wider than this, in pixels, are cut at the page's edge when printed rather than shrunk to a sliver.
PRINT_WIDE = 1600

#: Width of the lane-name column, in pixels per character of the longest name, and at most.
NAME_PX_PER_CHAR, MAX_NAME_WIDTH = 7.5, 150

#: Room left and right of the lanes, in pixels, for the first and last tick labels and marks.
PAD = 14

#: Aim for at least this many pixels between two labelled axis ticks.
TICK_SPACING = 70


@dataclass(frozen=True)
class Scale:
    """``x(t)`` in pixels for a time (or event position) ``t`` from ``first``."""

    first: int
    last: int
    px: float  # pixels per unit

    @classmethod
    def fitting(cls, first: int, last: int, typical: float = 1.0, min_typical_px: float = 12.0) -> Scale:
        """A scale over ``[first, last]``: ``FIT_WIDTH`` wide when ``typical`` lengths still
        get ``min_typical_px`` that way, else wider (up to ``MAX_WIDTH``)."""
        units = max(1, last - first)
        px = FIT_WIDTH / units
        if typical * px < min_typical_px:
            px = min(min_typical_px / max(typical, 1e-9), MAX_WIDTH / units)
        return cls(first, last, px)

    @property
    def width(self) -> float:
        return max(1, self.last - self.first) * self.px + 2 * PAD

    def x(self, t: float) -> float:
        """The pixel for ``t``, to a tenth, an int when whole (``20``, not ``20.0``: a big page is mostly numbers)."""
        value = round((t - self.first) * self.px + PAD, 1)
        return int(value) if value.is_integer() else value


def ticks(scale: Scale) -> list[int]:
    """Round values between ``first`` and ``last``, about ``TICK_SPACING`` pixels apart."""
    units = max(1, scale.last - scale.first)
    step = 1
    while step * scale.px < TICK_SPACING:
        step = step * 5 // 2 if str(step)[0] == "2" else step * 2
    first = -(-scale.first // step) * step
    return list(range(first, scale.last + 1, step))[: units + 1]


def axis(scale: Scale, height: float, unit: str) -> str:
    """The axis along the top of the lanes, and faint grid lines down through ``height``."""
    parts = []
    for value in ticks(scale):
        x = scale.x(value)
        parts.append(f'<line class="grid" x1="{x}" y1="{AXIS_HEIGHT - 4}" x2="{x}" y2="{height}"/>'
                     f'<text class="tick" x="{x}" y="{AXIS_HEIGHT - 7}">{value}</text>')
    return f'<g class="axis"><title>{text(unit)}</title>{"".join(parts)}</g>'


def figure(names: list[str], lanes_svg: str, width: float, label: str, caption: str, legend: str = "") -> str:
    """The names column and the scrolling lanes, in a figure with a caption and a legend."""
    height = AXIS_HEIGHT + LANE_HEIGHT * len(names) + 4
    name_width = min(MAX_NAME_WIDTH, 16 + NAME_PX_PER_CHAR * max((len(n) for n in names), default=2))
    rows = "".join(
        f'<text class="lane-name" x="{name_width - 6}" y="{AXIS_HEIGHT + LANE_HEIGHT * i + 15}">{text(_cut(n))}'
        f"<title>{text(n)}</title></text>"
        for i, n in enumerate(names)
    )
    stripes = "".join(
        f'<rect class="stripe" x="0" y="{AXIS_HEIGHT + LANE_HEIGHT * i}" width="{width:.0f}" height="{LANE_HEIGHT}"/>'
        for i in range(1, len(names), 2)
    )
    wide = width > PRINT_WIDE
    cut = '<span class="print-only">Printed: the start of the picture, as wide as the page; on screen it scrolls.</span>' if wide else ""
    return (
        f'<figure class="picture{" wide" if wide else ""}"><div class="lanes-row">'
        f'<svg class="names" width="{name_width:.0f}" height="{height}" viewBox="0 0 {name_width:.0f} {height}" '
        f'aria-hidden="true">{rows}</svg>'
        f'<div class="lanes" tabindex="0" role="img" aria-label="{text(label)}">'
        f'<svg width="{width:.0f}" height="{height}" viewBox="0 0 {width:.0f} {height}">{stripes}{lanes_svg}</svg>'
        f"</div></div><figcaption>{caption}{legend}{cut}</figcaption></figure>"
    )


#: Characters of a lane name shown; the whole name is in its tooltip.
NAME_SHOWN = 18


def _cut(name: str) -> str:
    return name if len(name) <= NAME_SHOWN else name[: NAME_SHOWN - 1] + "…"


#: Pictures of more items than this are drawn compact: one path per lane and kind instead of an
#: element per item (a browser paints tens of thousands of elements slowly), with no per-item
#: tooltip or click; the table below has every item, and the few marks that matter stay elements.
DETAILED_UP_TO = 1500


class Paths:
    """Shapes gathered into one ``<path>`` per class: the compact drawing of a big picture."""

    def __init__(self) -> None:
        self._parts: dict[str, list[str]] = {}

    def rect(self, cls: str, x: float, y: float, width: float, height: float) -> None:
        self._parts.setdefault(cls, []).append(f"M{x} {y}h{width}v{height}h{-width}z")

    def tick(self, cls: str, x: float, y: float, height: float) -> None:
        """A vertical stroke: a mark at one time (an expiry, a completion)."""
        self._parts.setdefault(cls, []).append(f"M{x} {y}v{height}")

    def dot(self, cls: str, x: float, y: float, r: float) -> None:
        self._parts.setdefault(cls, []).append(f"M{x - r} {y}a{r} {r} 0 1 0 {2 * r} 0a{r} {r} 0 1 0 {-2 * r} 0")

    def svg(self) -> str:
        return "".join(f'<path class="{cls}" d="{"".join(parts)}"/>' for cls, parts in self._parts.items())


def lane_y(lane: int) -> int:
    """The top of lane ``lane`` (0-based)."""
    return AXIS_HEIGHT + LANE_HEIGHT * lane
