"""mnesis (the seeds' page 004, policies.md section 4): how ctxviz does it.

- `context_builder.py`: ContextBuilder.build (`mnesis`) step by step (`plan_records`), its
  tiktoken counter, and its compaction (soft and hard thresholds, the deterministic fallback summary).
- `context_builder_columns.py`: the same build decided in columns (what every plan uses): what it
  reads of a session kept per session, the fill one binary search over mnesis' units, a sent
  message rendered only when its request form is read, reasons built on demand.
- `messages.py`: what both read: the model table, how a message renders (a call and its output in
  one ToolPart), TokenEstimator.estimate_message and the ToolParts' share of each count.
- `replay.py`: its incremental replayer (pair safety carried too).

Tests: tests/test_mnesis.py, tests/test_mnesis_golden.py (goldens from mnesis itself in
tests/golden/mnesis), tests/test_mnesis_columns.py (columns = step by step); replays in tests/test_replay_incremental.py,
with pair safety in tests/test_replay_pair_safe_seeds.py.
"""
