#!/usr/bin/env bash
# Regenerate the README's screenshots from the bundled samples (offscreen, no display needed).
#   bash docs/make_screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export QT_QPA_PLATFORM=offscreen
out=docs/screenshots
shot() { local name=$1; shift; python -m ctxviz gui "$@" --screenshot "$out/$name.png" 2>/dev/null; echo "$out/$name.png"; }

for theme in light dark; do
  shot "support_chat-$theme"           sample_sessions/support_chat.yaml --theme "$theme"
  shot "coding_agent-$theme"           sample_sessions/coding_agent.yaml --theme "$theme"
  shot "multimodal_review-$theme"      sample_sessions/multimodal_review.yaml --theme "$theme" \
                                       --config resources/presets/categories-later.yaml --set max_tokens=40000
  shot "claude_code_compaction-$theme" sample_sessions/claude_code_compaction.jsonl --theme "$theme"
done
# Every sample in both themes at the two sizes people review on (a 720p laptop and a 1080p monitor).
for sample in support_chat.yaml coding_agent.yaml multimodal_review.yaml claude_code_compaction.jsonl codex_rollout.jsonl gemini_cli_session.json; do
  for size in 1280x720 1920x1080; do
    for theme in light dark; do
      shot "${sample%%.*}-$size-$theme" "sample_sessions/$sample" --theme "$theme" --size "$size"
    done
  done
done
shot welcome-1280x720 --size 1280x720
shot coding_agent-supyagent-timeline sample_sessions/coding_agent.yaml --policy supyagent --tab 1 --size 1920x1080
shot claude_code_compaction-timeline sample_sessions/claude_code_compaction.jsonl --policy mnesis --tab 1
shot support_chat-supyagent-timeline sample_sessions/support_chat.yaml --policy supyagent --tab 1 --theme dark
shot coding_agent-compare            sample_sessions/coding_agent.yaml --tab 2 --compare missy --compare-set fresh_tail_count=40 --compare-set total=40000
