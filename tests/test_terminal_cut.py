"""An error line cuts a long quoted value, and only a quoted value: the text between two short
quoted values (a plugin's name, then its long path, then the error's key) is the message itself."""

from __future__ import annotations

from ctxviz.terminal import one_line


def test_the_text_between_two_short_quoted_values_is_not_cut():
    path = "/tmp/pytest-of-root/pytest-1/popen-gw1/" + "a_long_folder_name/" * 8 + "raising.py"
    line = one_line(f"policy plugin 'raising' ({path}:POLICY): its plan raised KeyError: 'missing'")
    assert "its plan raised KeyError: 'missing'" in line and path in line and "characters)" not in line


def test_a_long_quoted_value_is_cut_to_its_start_and_end():
    value = "x" * 100 + "y" * 200
    line = one_line(f'field "text" holds "{value}" at line 3')
    assert line == f'field "text" holds "{"x" * 60}…{"y" * 20}" (300 characters) at line 3'
