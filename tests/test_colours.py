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


#: A category colour this close to a decision colour reads as that decision beside it (the table's
#: category swatch next to its decision, the strip over the decision column): for normal vision a
#: clear step more than DISTINCT, and apart still for deuteranopes and protanopes.
APART_NORMAL, APART_CVD = 20, 12


@pytest.mark.parametrize("vision", ["normal", "deuteranopia", "protanopia"])
def test_no_category_colour_reads_as_a_decision_colour(vision: str) -> None:
    """System was summarised's sky blue, Dialog replaced's blue, Tool output truncated's orange and
    Internal kept's green: on the Overview a Tool output bar read as a truncation."""
    least = APART_NORMAL if vision == "normal" else APART_CVD
    for category, colour in CATEGORY_COLORS.items():
        for decision, other in DECISION_COLORS.items():
            distance = closest_pair({category: colour, decision: other}, vision)[0]
            assert distance >= least, f"{category} {colour} and {decision} {other} look alike with {vision} ({distance:.1f})"


@pytest.mark.parametrize("background", ["#ffffff", "#16181c"])  # the light and the dark theme's chart background
def test_each_category_colour_stands_out_from_both_themes_backgrounds(background: str) -> None:
    for vision in ("normal", "deuteranopia", "protanopia"):
        for category, colour in CATEGORY_COLORS.items():
            assert closest_pair({category: colour, "background": background}, vision)[0] >= 25, (category, vision)


def test_the_donuts_own_parts_stay_apart_from_every_category() -> None:
    """A part that is not a category (memory, learnings, the history) never looks like one."""
    from ctxviz.gui.theme import CONVERSATION_COLOR, PART_COLORS

    for vision in ("normal", "deuteranopia", "protanopia"):
        for k, part in enumerate([*PART_COLORS, CONVERSATION_COLOR]):
            distance, a, b = closest_pair({**CATEGORY_COLORS, f"part{k}": part}, vision)
            assert f"part{k}" not in (a, b) or distance >= DISTINCT, (vision, a, b, distance)
