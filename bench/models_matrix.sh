#!/usr/bin/env bash
# Issue 46: every offline model x the sample questions and the first ten of two development
# folders (bench/heldout11/make_folder.sh, bench/heldout/make_folder.sh first), both answer
# policies side by side (the bundled model: the harness only). Results: bench/out/models_*.json;
# the table: .venv/bin/python bench/models_table.py
cd "$(dirname "$0")/.."
M15=~/.cache/kbagent/eval-models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
M05=~/.cache/kbagent/eval-models/qwen2.5-coder-0.5b-instruct.gguf
for model in 15b 05b bundled; do
  case $model in 15b) mp=$M15; pol=harness,model;; 05b) mp=$M05; pol=harness,model;; bundled) mp=""; pol=harness;; esac
  for set in sample proftpd git; do
    case $set in
      sample) q=tests/data/sample_questions.jsonl; kb=sample_kb;;
      proftpd) q=bench/heldout11/questions.jsonl; kb=bench/out/heldout11/proftpd-doc;;
      git) q=bench/heldout/questions.jsonl; kb=bench/out/heldout/git-doc;;
    esac
    lim=""; [[ $set != sample ]] && lim="--limit 10"
    out=bench/out/models_${set}_${model}.json
    [[ -f $out ]] && continue
    echo "=== $(date -u +%H:%M:%S) $model $set load $(cut -d' ' -f1-3 /proc/loadavg)"
    .venv/bin/python bench/bench_agent.py --modes auto --policy $pol \
      --questions $q --kb-dir $kb ${mp:+--model $mp} $lim --out $out --resume > bench/out/models_${set}_${model}.log 2>&1
    echo "=== $(date -u +%H:%M:%S) done $model $set rc $? load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
done
