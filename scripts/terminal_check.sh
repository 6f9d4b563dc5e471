#!/bin/bash
# Does a hostile document drive a real terminal through `kbagent search`? Runs the
# search inside tmux (set-clipboard on) over a KB whose document holds an OSC 52
# clipboard write, an OSC 2 title and ESC [2J, then prints the pane title, tmux's
# paste buffers and the pane. Safe output: title unchanged, no buffer, lines kept.
#   scripts/terminal_check.sh [TREE]     (TREE: the kbagent checkout to run; default .)
set -euo pipefail
TREE=$(cd "${1:-.}" && pwd)
PY=${PY:-python}
WORK=$(mktemp -d)
trap 'tmux kill-session -t kbagent_tcheck 2>/dev/null || true; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/docs"
"$PY" - "$WORK/docs" <<'PYEOF'
import sys
open(sys.argv[1] + "/evil\x1b]2;PWNED-NAME\x07.md", "w").write(
    "# Retry policy\n\nThe retry policy uses [bold]exponential backoff[/bold] "
    "\x1b]52;c;Q0xJUEJPQVJE\x1b\\ with a cap. \x1b]2;PWNED-TITLE\x1b\\ "
    "See [link=https://evil.test]runbook[/link].\n\x1b[2J\x1b[H\n")
PYEOF
(cd "$TREE" && PYTHONPATH="$TREE" "$PY" -m kbagent --home "$WORK/home" ingest "$WORK/docs" \
    --kb evil -q >/dev/null)
tmux -f /dev/null new-session -d -s kbagent_tcheck -x 200 -y 40 "bash --norc --noprofile"
tmux set-option -s set-clipboard on
tmux send-keys -t kbagent_tcheck "cd '$TREE'; echo BEFORE-MARKER; PYTHONPATH='$TREE' '$PY' -m \
kbagent --home '$WORK/home' search 'retry policy exponential backoff' --kb evil; \
echo AFTER-MARKER; sleep 60" Enter
for _ in $(seq 1 120); do
    sleep 1
    tmux capture-pane -p -t kbagent_tcheck | grep -q '^AFTER-MARKER' && break
done
echo "pane title: $(tmux display-message -p -t kbagent_tcheck '#{pane_title}')"
echo "paste buffers: $(tmux list-buffers 2>/dev/null | wc -l)"
tmux list-buffers 2>/dev/null | head -3
echo "--- pane:"
tmux capture-pane -p -t kbagent_tcheck | grep -v '^$'
