"""The parameter form shows a whole number as one ("1,500", not "1500.000") and puts each slider
where its value is: LangChain's max_tokens of 1,500, chars_per_token of 4.0 and
extra_tokens_per_message of 3.0 all sat at the right end of 0-1 sliders."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from ctxviz.engine.policies import get_policy  # noqa: E402
from ctxviz.gui.widgets.param_form import ParamForm  # noqa: E402

CC = Path(__file__).resolve().parent / "data" / "real" / "claude_code" / "tugtool-compact-native.jsonl"
#: What the app passes for a session of 26 messages and about 30,000 tokens (gui/window/parameters.py).
LIMITS = {"messages": 26, "tokens": 30_000}
FORMS = ("langchain-trim", "strands-sliding-window", "strands-summarizing", "llamaindex-chat-memory-buffer",
         "llamaindex-chat-summary-memory-buffer", "gemini-cli-compression")


def form_for(qtbot, policy: str, values: dict | None = None) -> tuple[ParamForm, object]:  # type: ignore[no-untyped-def]
    p = get_policy(policy)
    params = p.make_params(values or {})
    form = ParamForm()
    qtbot.addWidget(form)
    form.build(params, None, p.trigger, p.keep, LIMITS)
    return form, params


def placed(form: ParamForm, name: str, value: float) -> bool:
    """The slider's handle lies where `value` lies: strictly inside the range, unless the value is an end."""
    slider, _spin = form.editors[name]
    scale = form.scales[name]
    if value in (scale.lo, scale.hi):
        return True
    return slider.minimum() < slider.value() < slider.maximum() and scale.lo < value < scale.hi


def test_langchain_max_tokens_is_a_whole_number_and_its_sliders_sit_where_their_values_are(qtbot) -> None:  # type: ignore[no-untyped-def]
    form, params = form_for(qtbot, "langchain-trim", {"max_tokens": 1500})
    slider, spin = form.editors["max_tokens"]
    assert spin.lineEdit().text() == "1,500" and "." not in spin.lineEdit().text()
    for name in ("max_tokens", "chars_per_token", "extra_tokens_per_message"):
        assert placed(form, name, getattr(params, name)), (name, form.editors[name][0].value(), form.scales[name].hi)
    # Moving the slider sends a whole number of tokens.
    seen: list[tuple[str, object]] = []
    form.valueChanged.connect(lambda name, value: seen.append((name, value)))
    slider.setValue(slider.value() + 1)
    assert seen and seen[-1][0] == "max_tokens" and isinstance(seen[-1][1], int)
    assert "." not in spin.lineEdit().text()


def test_a_fractional_max_tokens_keeps_its_decimals(qtbot) -> None:  # type: ignore[no-untyped-def]
    form, _ = form_for(qtbot, "langchain-trim", {"max_tokens": 1500.5})
    assert form.editors["max_tokens"][1].lineEdit().text() == "1500.500"
    assert placed(form, "max_tokens", 1500.5)


@pytest.mark.parametrize("policy", FORMS)
def test_every_slider_sits_where_its_value_is_at_the_defaults_and_at_set_values(qtbot, policy: str) -> None:  # type: ignore[no-untyped-def]
    form, params = form_for(qtbot, policy)
    numeric = [name for name, widgets in form.editors.items() if len(widgets) == 2]
    assert numeric
    for name in numeric:
        value = getattr(params, name)
        if value is not None:
            assert placed(form, name, value), (policy, name, value)
    # Set elsewhere (a preset, the command line): a value past a range ctxviz guessed moves the
    # range, not the handle to an end it is not at; a whole count is still shown whole.
    for name in numeric:
        value = getattr(params, name)
        scale = form.scales[name]
        if value is None or not scale.guessed[1]:
            continue
        bigger = type(value)(value * 3 if value else 5)
        try:
            changed = dataclasses.replace(params, **{name: bigger})
        except Exception:  # noqa: BLE001 (a value the policy refuses is not shown)
            continue
        form.set_values(changed)
        assert placed(form, name, bigger), (policy, name, bigger, scale.hi)
        if isinstance(bigger, int):
            assert "." not in form.editors[name][1].lineEdit().text()
        form.set_values(params)


def test_a_value_typed_past_a_guessed_range_widens_it_and_a_frameworks_bound_stays(qtbot) -> None:  # type: ignore[no-untyped-def]
    form, _ = form_for(qtbot, "langchain-trim")
    slider, spin = form.editors["chars_per_token"]
    spin.setValue(50.0)  # far past 4 x 4.0
    assert placed(form, "chars_per_token", 50.0)
    form, _ = form_for(qtbot, "gemini-cli-compression")
    scale = form.scales["compressionThreshold"]
    assert not scale.guessed[1] and scale.hi == 1.0  # Gemini CLI's own bound: a fraction of the limit


@pytest.fixture
def small_window(qtbot, tmp_path):  # type: ignore[no-untyped-def]
    """`small_window(policy)`: CC open at 1024x700 under `policy`, shut down after the test."""
    from tests.gui_windows import window_at

    windows = []

    def make(policy: str):  # type: ignore[no-untyped-def]
        win = window_at(qtbot, tmp_path, (1024, 700), CC, settled=False)
        windows.append(win)
        with qtbot.waitSignal(win.vm.planReady, timeout=30000):
            win.vm.set_policy(policy)
        qtbot.wait(100)
        return win

    yield make
    for win in windows:
        win.vm.shutdown()


def test_a_check_boxs_hint_is_as_tall_as_its_wrapped_lines_on_a_small_window(small_window) -> None:  # type: ignore[no-untyped-def]
    from ctxviz.gui.widgets.param_form import HintLabel

    win = small_window("llamaindex-chat-summary-memory-buffer")
    hints = [h for h in win.params.findChildren(HintLabel) if h.isVisible()]
    assert len(hints) >= 3
    # at 1024 px the eight lines of system_messages_in_memory had 63 of their 140 pixels
    tallest = max(hints, key=lambda h: h.heightForWidth(h.width()))
    assert tallest.heightForWidth(tallest.width()) >= 4 * tallest.fontMetrics().height()
    for hint in hints:
        assert hint.height() >= hint.heightForWidth(hint.width()), (hint.text()[:40], hint.height())


def test_a_long_class_name_in_the_policys_title_wraps_inside_the_panel(small_window) -> None:  # type: ignore[no-untyped-def]
    win = small_window("strands-sliding-window")
    title = win.policy_title
    assert "SlidingWindowConversationManager" in title.text().replace("\u200b", "")
    # Its longest unbreakable run fits the panel ("Strands SlidingWindowConversationManag" was cut).
    assert title.minimumSizeHint().width() <= title.width() <= win.params_panel.viewport().width()
