"""Gemini CLI (google-gemini/gemini-cli at 5411f11): how ctxviz does it.

- `history.py`: a session's history as Gemini CLI holds it (`Content` objects), their
  JSON.stringify lengths and Gemini CLI's token estimate.
- `compression.py`: the chat compression (`gemini-cli-compression`); `plan_records` step by step.
- `compression_columns.py`: the same decided in columns (what `plan` runs), what the session and a
  character budget decide kept per session.
- `service.py`: ChatCompressionService's steps (split point, truncation, prompt count, stand-in summary).
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_gemini_cli.py, tests/test_gemini_columns.py; replays in tests/test_replay_edits.py,
tests/test_replay_gemini_compressed.py; the replayer's carried columns in tests/test_gemini_carried_contents.py.
"""
