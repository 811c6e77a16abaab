"""Colours a colour-blind user can tell apart: every pair of category colours (and of decision
colours) stays distinct under simulated deuteranopia and protanopia, and each category has one
colour and one name wherever it is drawn."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.session import Category  # noqa: E402
from ctxviz.gui.theme import CATEGORY_COLORS, CATEGORY_LABELS, DECISION_COLORS  # noqa: E402

from .colorvision import closest_pair  # noqa: E402

#: CIE76 distance below which two flat colours start to look alike side by side.
DISTINCT = 15


@pytest.mark.parametrize("vision", ["normal", "deuteranopia", "protanopia"])
@pytest.mark.parametrize("palette", ["categories", "decisions"])
def test_colours_stay_distinct(vision: str, palette: str) -> None:
    colors = CATEGORY_COLORS if palette == "categories" else DECISION_COLORS
    distance, a, b = closest_pair(colors, vision)
    assert distance >= DISTINCT, f"{a} and {b} look alike with {vision} (distance {distance:.1f})"


def test_the_simulation_catches_a_palette_that_fails() -> None:
    # the previous category colours: purple context and blue dialog merge for protanopes
    old = {"context": "#9467bd", "dialog": "#1f77b4"}
    assert closest_pair(old, "protanopia")[0] < DISTINCT <= closest_pair(old, "normal")[0]


def test_every_category_has_one_colour_and_one_name() -> None:
    names = {c.value for c in Category}
    assert names <= set(CATEGORY_COLORS) and names <= set(CATEGORY_LABELS)
    assert len(set(CATEGORY_COLORS.values())) == len(CATEGORY_COLORS)


@pytest.mark.parametrize("vision", ["normal", "deuteranopia", "protanopia"])
@pytest.mark.parametrize("text", ["#000000", "#e6e6e6"])  # the light and the dark theme's text colour
def test_the_timelines_series_stay_distinct(vision: str, text: str) -> None:
    """Tokens sent, budget, trigger, what the provider reported, and the tokens not sent (in the
    theme's text colour: a purple of their own merged with the blue of the tokens sent for protanopes)."""
    from ctxviz.gui.widgets.timeline import SERIES_COLORS

    distance, a, b = closest_pair({**SERIES_COLORS, "tokens not sent": text}, vision)
    assert distance >= DISTINCT, f"{a} and {b} look alike with {vision} (distance {distance:.1f})"
