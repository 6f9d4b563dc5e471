#!/usr/bin/env bash
# Real-terminal check of `kbagent tui`, as a person would do it: start the app in tmux
# with the bundled model on sample_kb, type a question, wait for the answer, capture
# the pane. Usage: scripts/tui_tmux_check.sh [OUT_FILE] [QUESTION]
#   PYTHON (default: python) runs kbagent; KBAGENT_HOME (default: a temp dir, where
#   sample_kb is ingested first) holds the KBs; WIDTH/HEIGHT size the terminal.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-bench/out/tui_capture.txt}
QUESTION=${2:-"Which GPU model does the Kestrel Edge appliance use?"}
PYTHON=${PYTHON:-python}
WIDTH=${WIDTH:-110}
HEIGHT=${HEIGHT:-40}
SESSION=kbagent-tui-check-$$
export KBAGENT_HOME=${KBAGENT_HOME:-$(mktemp -d)}
mkdir -p "$(dirname "$OUT")"
command -v tmux >/dev/null || { echo "tmux is not installed" >&2; exit 2; }

if ! "$PYTHON" -m kbagent kbs --json | grep -q '"name": "sample"'; then
  echo "ingesting sample_kb into $KBAGENT_HOME ..." >&2
  "$PYTHON" -m kbagent ingest sample_kb --kb sample --quiet >&2
fi

cleanup() { tmux kill-session -t "$SESSION" 2>/dev/null || true; }
trap cleanup EXIT
tmux new-session -d -s "$SESSION" -x "$WIDTH" -y "$HEIGHT" \
  "env KBAGENT_HOME='$KBAGENT_HOME' PYTHONPATH='${PYTHONPATH:-}' TERM=xterm-256color \
   '$PYTHON' -m kbagent tui --kb sample"

wait_for() {  # wait_for TEXT SECONDS
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    if tmux capture-pane -p -t "$SESSION" | grep -qF -- "$1"; then return 0; fi
    sleep 0.5
  done
  echo "timed out waiting for: $1" >&2
  tmux capture-pane -p -t "$SESSION" >&2
  return 1
}

wait_for "KBs: sample" 120          # the header, once the KB is open
wait_for "(loading)" 5 || true
tmux send-keys -t "$SESSION" -l "$QUESTION"
tmux send-keys -t "$SESSION" Enter
wait_for "mode " 300                # the status line under a finished answer
sleep 1
tmux capture-pane -p -t "$SESSION" > "$OUT"
echo "captured to $OUT" >&2
cat "$OUT"
# the question shown above the answer is the one typed: no key was lost on the way
if ! grep -qF -- "❯ $QUESTION" "$OUT"; then
  echo "the question shown is not the one typed (keys lost?): $QUESTION" >&2
  exit 1
fi
