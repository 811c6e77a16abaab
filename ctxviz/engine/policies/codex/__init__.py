"""Codex CLI (openai/codex, codex-rs/core/src/compact.rs): how ctxviz does it.

- `compaction.py`: the local auto-compaction (`codex-compaction`): its limit, its bytes / 4
  estimate and the compacted history.
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_codex.py; replays in tests/test_replay_edits.py.
"""
