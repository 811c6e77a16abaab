"""bench/run.py's harness, without measuring anything: its README writer changes only the text
between the bench markers and replaces the file atomically, its command line parses, and its
table shows a row that was not measured as not met, with the reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)

import readme_table  # noqa: E402
from common import Row, compound  # noqa: E402

README = """# ctxviz\r\n\nIntro with a | pipe.\n\n## Benchmarks\n\nProse before.\n\n<!-- bench:start -->\nLast run: old.\n\n| old | table |\n<!-- bench:end -->\n\nWhat the rows say: after.\n"""


def test_the_writer_replaces_only_what_lies_between_the_markers(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "README.md")
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(README)
    readme_table.write_readme(path, "Last run: new.\n\n| new | table |\n")
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    before, after = README.split("<!-- bench:start -->")[0], README.split("<!-- bench:end -->")[1]
    assert text == f"{before}<!-- bench:start -->\nLast run: new.\n\n| new | table |\n<!-- bench:end -->{after}"
    assert "\r\n" in text  # the rest of the file byte for byte, its line ends included
    readme_table.write_readme(path, "Last run: newer.\n")
    with open(path, encoding="utf-8", newline="") as f:
        again = f.read()
    assert again.startswith(before) and again.endswith(after) and "new | table" not in again


@pytest.mark.parametrize("text", ["no markers at all\n", "<!-- bench:end -->\nx\n<!-- bench:start -->\n",
                                  "<!-- bench:start -->\n<!-- bench:end -->\n<!-- bench:start -->\n<!-- bench:end -->\n"])
def test_without_one_ordered_pair_of_markers_nothing_is_written(tmp_path: object, text: str) -> None:
    path = os.path.join(str(tmp_path), "README.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    with pytest.raises(readme_table.MarkersError):
        readme_table.write_readme(path, "table")
    with open(path, encoding="utf-8") as f:
        assert f.read() == text
    assert os.listdir(str(tmp_path)) == ["README.md"]


def test_the_readme_is_replaced_atomically(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """The new text goes to a temporary file in the same folder, moved over the README in one
    os.replace; a failure before the move leaves the README whole and no temporary file behind."""
    path = os.path.join(str(tmp_path), "README.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(README)
    moves: list[tuple[str, str]] = []
    real_replace = os.replace

    def spy(src: str, dst: str) -> None:
        moves.append((src, dst))
        with open(src, encoding="utf-8") as f:
            assert "| new |" in f.read()  # complete before it is moved
        real_replace(src, dst)

    monkeypatch.setattr(readme_table.os, "replace", spy)
    readme_table.write_readme(path, "| new |")
    assert len(moves) == 1 and moves[0][1] == path and os.path.dirname(moves[0][0]) == str(tmp_path)

    def fail(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(readme_table.os, "replace", fail)
    with open(path, encoding="utf-8") as f:
        kept = f.read()
    with pytest.raises(OSError):
        readme_table.write_readme(path, "| newer |")
    with open(path, encoding="utf-8") as f:
        assert f.read() == kept
    assert os.listdir(str(tmp_path)) == ["README.md"]


def test_run_py_parses_its_command_line() -> None:
    out = subprocess.run([sys.executable, os.path.join(BENCH, "run.py"), "--quick", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--write-readme" in out.stdout and "--quick" in out.stdout


def test_the_table_shows_an_unmeasured_row_as_not_met_with_its_reason() -> None:
    import run

    rows = [Row("a | b", [1.0, 2.0, 3.0], "<= 2x", True, group="one"),
            Row("langchain", [], ">= 20x", False, note="not measured: langchain-core is not importable", group="two"),
            compound("replay", [Row("e", [1.1, 1.0, 1.2], "<= n^1.15", True, unit="n^"), Row("r", [12.0, 11.0, 13.0], "<= 10x", False)], group="two")]
    text = run.table(rows)
    assert "**one**" in text and "**two**" in text and text.index("**one**") < text.index("**two**")
    assert "| a \\| b | 2.00x [1.00-3.00] | <= 2x | met |" in text
    assert "| langchain | not measured: langchain-core is not importable | >= 20x | **not met** |" in text
    assert "| replay | n^1.10 [1.00-1.20] / 12.00x [11.00-13.00] | <= n^1.15 / <= 10x | met / **not met** |" in text
