"""Anthropic API context editing (beta `context-management-2025-06-27`): how ctxviz does it.

- `context_editing.py`: the clear_tool_uses_20250919 and clear_thinking_20251015 edits
  (`anthropic-clear-tool-uses`, `anthropic-clear-thinking`), each request judged afresh.
- `replay.py`: the incremental replayers of both.

Tests: tests/test_policy_anthropic_editing.py; replays in tests/test_replay_edits.py.
"""
