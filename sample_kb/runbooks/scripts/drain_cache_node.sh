#!/usr/bin/env bash
# drain_cache_node.sh - safely drain and remove one prompt-cache node (Valkey) from a region.
#
# Used by runbooks/cache_node_failure.md (step 5). Owner: Caching team (Ines Moreau).
#
# Usage:   ./runbooks/scripts/drain_cache_node.sh <region> <node> [--dry-run]
# Example: ./runbooks/scripts/drain_cache_node.sh eu-west cache-euw-04
#
# Safety checks (the script exits non-zero and changes nothing if any fails):
#   1. the node exists in the region;
#   2. the node's shard has at least one OTHER healthy member (never drain the last one);
#   3. no other node in the same shard is already draining;
#   4. every remaining node in the region uses maxmemory-policy allkeys-lfu
#      (added after the 2026-08-19 eu-west incident).
#
# Exit codes: 0 drained, 2 usage error, 3 safety check failed, 4 timeout while draining.

set -euo pipefail

DRAIN_TIMEOUT_SECONDS="${DRAIN_TIMEOUT_SECONDS:-120}"   # wait for client connections to move
POLL_INTERVAL_SECONDS=5
REQUIRED_POLICY="allkeys-lfu"

usage() {
  echo "usage: $0 <region> <node> [--dry-run]" >&2
  exit 2
}

[[ $# -lt 2 ]] && usage
REGION="$1"
NODE="$2"
DRY_RUN="${3:-}"

log() { printf '%s [drain %s/%s] %s\n' "$(date -u +%H:%M:%S)" "$REGION" "$NODE" "$*"; }

run() {
  if [[ "$DRY_RUN" == "--dry-run" ]]; then
    log "DRY RUN: $*"
  else
    "$@"
  fi
}

# 1. Node exists?
if ! kestrelctl cache nodes --region "$REGION" --output name | grep -qx "$NODE"; then
  log "node not found in region"
  exit 3
fi

SHARD="$(kestrelctl cache nodes --region "$REGION" --node "$NODE" --output shard)"
log "node belongs to shard $SHARD"

# 2. Another healthy member in the shard?
HEALTHY_PEERS="$(kestrelctl cache nodes --region "$REGION" --shard "$SHARD" --healthy --output name \
  | grep -vx "$NODE" | wc -l | tr -d ' ')"
if [[ "$HEALTHY_PEERS" -lt 1 ]]; then
  log "REFUSING: $NODE is the last healthy member of shard $SHARD. Escalate to the Caching EM."
  exit 3
fi

# 3. Nobody else draining in this shard?
if kestrelctl cache nodes --region "$REGION" --shard "$SHARD" --state draining --output name | grep -q .; then
  log "REFUSING: another node in shard $SHARD is already draining"
  exit 3
fi

# 4. Eviction policy check on the remaining nodes.
while read -r peer policy; do
  if [[ "$policy" != "$REQUIRED_POLICY" ]]; then
    log "REFUSING: $peer has maxmemory-policy=$policy (expected $REQUIRED_POLICY). Fix it first."
    exit 3
  fi
done < <(kestrelctl cache config --region "$REGION" --get maxmemory-policy --output pairs | grep -v "^$NODE ")

# If the node is a primary, promote its replica first.
ROLE="$(kestrelctl cache nodes --region "$REGION" --node "$NODE" --output role)"
if [[ "$ROLE" == "primary" ]]; then
  log "node is primary; failing over shard $SHARD before draining"
  run kestrelctl cache failover --region "$REGION" --shard "$SHARD"
fi

log "marking node as draining"
run kestrelctl cache set-state --region "$REGION" --node "$NODE" --state draining

deadline=$(( $(date +%s) + DRAIN_TIMEOUT_SECONDS ))
while true; do
  conns="$(kestrelctl cache stats --region "$REGION" --node "$NODE" --field connected_clients 2>/dev/null || echo 0)"
  [[ "$DRY_RUN" == "--dry-run" ]] && conns=0
  if [[ "$conns" -eq 0 ]]; then
    break
  fi
  if [[ $(date +%s) -ge $deadline ]]; then
    log "timeout: $conns clients still connected after ${DRAIN_TIMEOUT_SECONDS}s"
    exit 4
  fi
  log "$conns clients still connected; waiting"
  sleep "$POLL_INTERVAL_SECONDS"
done

log "removing node from cluster"
run kestrelctl cache remove-node --region "$REGION" --node "$NODE"
log "done. Next: kestrelctl cache replace-node --region $REGION --node $NODE"
