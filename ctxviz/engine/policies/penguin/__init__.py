"""Penguin's ContextWindowManager, the category budgets (the seeds' page 002, policies.md section 3):
how ctxviz does it. The policy is named `categories`.

- `context_window.py`: the per-category budgets and trim order (`categories`), and the usage
  tables the manager prints.
- `replay.py`: its incremental replayer.

Tests: tests/test_categories.py; replays in tests/test_replay_incremental.py.
"""
