"""Claude Code (closed source; its published source map, mirrored publicly): how ctxviz does it.

- `auto_compact.py`: the auto-compact (`claude-code`): its trigger, its token count with
  estimation, and the summary that replaces everything before.
- `replay.py`: its incremental replayer.

Tests: tests/test_policy_claude_code.py; replays in tests/test_replay_edits.py.
"""
