"""A recorded summary's `covers`, in `plan --json` and `simulate --json`, lists every message it covers.

The policies read `covers` as ids: a summary naming an id that two messages share covers both (the
plan marks both summarised). The JSON listed only the first of them, so a reader checking the plan
found a summarised message no summary claimed.
"""

import json

from ctxviz.cli import main
from tests.test_cli_options_info import SHARED_ID  # u1 twice, and a summary covering u1


def _json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_a_recorded_summary_covers_every_message_sharing_its_id(capsys, tmp_path):
    path = tmp_path / "shared.yaml"
    path.write_text(SHARED_ID, encoding="utf-8")
    doc = _json(capsys, "plan", str(path), "--policy", "missy", "--json")
    summarised = [m["index"] for m in doc["messages"] if m["decision"] == "summarized"]
    assert summarised == [0, 2]
    both = [{"index": 0, "id": "u1"}, {"index": 2, "id": "u1"}]
    assert doc["summaries"][1]["covers"] == both
    assert doc["summaries"][0]["covers"] == [{"index": None, "id": "old1"}]  # before the file: no message of it
    by_summary = {s["summary"]: s["covers"] for s in doc["context_sources"] if s["kind"] == "summary"}
    assert by_summary[1] == both
    claimed = sorted(ref["index"] for s in doc["summaries"] for ref in s["covers"] if ref["index"] is not None)
    assert claimed == summarised
    replay = _json(capsys, "simulate", str(path), "--policy", "missy", "--json")
    assert [s["covers"] for s in replay["summaries"] if s["source"] == "recorded"][1] == both
