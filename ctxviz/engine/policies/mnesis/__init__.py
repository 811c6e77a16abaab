"""mnesis (the seeds' page 004, policies.md section 4): how ctxviz does it.

- `context_builder.py`: ContextBuilder.build (`mnesis`), its counter and model table, and its
  compaction (soft and hard thresholds, the deterministic fallback summary).
- `replay.py`: its incremental replayer.

Tests: tests/test_mnesis.py, tests/test_mnesis_golden.py (goldens from mnesis itself in
tests/golden/mnesis); replays in tests/test_replay_incremental.py.
"""
