"""Codex CLI (openai/codex, codex-rs/core/src/compact.rs): how ctxviz does it.

- `compaction.py`: the local auto-compaction (`codex-compaction`): its limit, its bytes / 4
  estimate and the compacted history; `plan_records` step by step.
- `compaction_columns.py`: the same decided in columns (what `plan` runs).
- `history.py`: what Codex holds and rebuilds (truncate.rs, user messages, initial context, item counts).
- `stand_in.py`: the stand-in summary of the live messages a compaction request holds, its reading kept per session.
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_codex.py, tests/test_codex_columns.py, tests/test_codex_stand_in.py; replays in tests/test_replay_edits.py.
"""
