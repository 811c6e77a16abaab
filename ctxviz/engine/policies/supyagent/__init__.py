"""supyagent (the seeds' page 001, policies.md section 2): how ctxviz does it.

- `context_manager.py`: ContextManager.build_messages_for_llm (`supyagent`) step by step
  (`plan_records`), and its compaction.
- `context_manager_columns.py`: the same build decided in columns (what every plan uses): what it
  reads of a session kept per session, the fill one binary search, reasons built on demand.
- `messages.py`: what both read: its counter (cl100k_base, 4 per message plus every string field,
  765 per image), the context limit table, the summary message and the summary trigger.
- `summary_input.py`: what its summariser is shown (the transcript generate_summary writes, cut to
  the first 2 x limit characters once the prompt is over 80 % of the limit), which the offline
  stand-in summary reads; carried from one summary to the next.
- `replay.py`: its incremental replayer, with the summary message's count carried.

Tests: tests/test_supyagent.py, tests/test_supyagent_columns.py (columns = step by step), tests/test_supyagent_summary_input.py
(supyagent's own prompts, tests/golden/supyagent); replays in tests/test_replay_incremental.py.
"""
