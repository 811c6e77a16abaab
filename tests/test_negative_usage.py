"""A negative token count in a session's reported usage is left out, with a note naming it.

`"prompt_tokens": -500` loaded silently: `info` said the last call "had -460 tokens in the
window" and the plan's fill figure read it as a real call. The session still loads (a real log
stays readable for the rest), the message's usage is dropped and a note names the message and figure.
"""

import json

from ctxviz.cli import main
from ctxviz.io.loaders import load_session

NEGATIVE = {"model": "gpt-4o", "messages": [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello", "usage": {"prompt_tokens": 40, "completion_tokens": 3}},
    {"role": "user", "content": "again"},
    {"role": "assistant", "content": "ok", "usage": {"prompt_tokens": -500, "completion_tokens": 3}},
]}
NOTE = ("1 message reports a negative token count in its usage (#3 (m3): input_tokens -500): no call sends fewer "
        "than 0 tokens, so that usage is left out")


def test_negative_usage_is_left_out_with_a_note(tmp_path, capsys):
    path = tmp_path / "negative.json"
    path.write_text(json.dumps(NEGATIVE), encoding="utf-8")
    session = load_session(str(path))
    assert [m.usage is not None for m in session.messages] == [False, True, False, False]
    assert NOTE in session.notes
    assert main(["info", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"    - {NOTE}\n" in out
    assert "reported usage: on 1 message; the last call (#1) had 40 tokens in the window" in out
    assert main(["plan", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert NOTE in doc["notes"] and "-500" not in json.dumps(doc.get("reported"))


def test_many_negative_figures_are_named_three_at_a_time(tmp_path):
    messages = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}",
                 **({"usage": {"input_tokens": 10, "output_tokens": -k}} if k % 2 else {})} for k in range(10)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    note = next(n for n in load_session(str(path)).notes if "negative" in n)
    assert note.startswith("5 messages report a negative token count in their usage (#1 (m1): output_tokens -1; "
                           "#3 (m3): output_tokens -3; #5 (m5): output_tokens -5; and 2 more)")
