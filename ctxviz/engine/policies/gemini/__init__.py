"""Gemini CLI (google-gemini/gemini-cli at 5411f11): how ctxviz does it.

- `history.py`: a session's history as Gemini CLI holds it (`Content` objects), their
  JSON.stringify lengths and Gemini CLI's token estimate.
- `compression.py`: the chat compression (`gemini-cli-compression`).
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_gemini_cli.py; replays in tests/test_replay_edits.py.
"""
