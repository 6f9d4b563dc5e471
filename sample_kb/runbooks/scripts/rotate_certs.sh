#!/usr/bin/env bash
# rotate_certs.sh - rotate a TLS certificate for an internal service or a Kestrel Edge appliance.
#
# Used by runbooks/certificate_rotation.md (procedures B and D). Owner: Jonah Pierce (SRE).
#
# Usage:
#   ./runbooks/scripts/rotate_certs.sh internal <service>
#       Force the Vault agent of <service> to re-issue its mTLS certificate (30-day lifetime).
#   ./runbooks/scripts/rotate_certs.sh edge <cert.pem> <key.pem>
#       Install a customer-supplied certificate on a Kestrel Edge appliance and reload.
#
# The edge mode refuses certificates valid for fewer than MIN_VALID_DAYS (30) days and
# key/certificate pairs that do not match.

set -euo pipefail

MIN_VALID_DAYS=30
EDGE_TLS_DIR=/etc/kestrel/tls
GATEWAY_PIDFILE=/run/kestrel/gateway.pid

die() { echo "rotate_certs: $*" >&2; exit 1; }

rotate_internal() {
  local service="$1"
  local ns
  ns="$(kestrelctl service namespace "$service")" || die "unknown service $service"
  echo "Re-issuing mTLS certificate for $service in namespace $ns"
  kubectl -n "$ns" rollout restart "deploy/$service"
  kubectl -n "$ns" rollout status "deploy/$service" --timeout=10m
  kestrelctl mtls check --service "$service" --window 10m
}

rotate_edge() {
  local cert="$1" key="$2"
  [[ -r "$cert" && -r "$key" ]] || die "cannot read $cert or $key"

  # Certificate and key must match (compare public key hashes).
  local cert_pub key_pub
  cert_pub="$(openssl x509 -in "$cert" -noout -pubkey | openssl sha256)"
  key_pub="$(openssl pkey -in "$key" -pubout | openssl sha256)"
  [[ "$cert_pub" == "$key_pub" ]] || die "private key does not match certificate"

  # Must be valid for at least MIN_VALID_DAYS days.
  if ! openssl x509 -in "$cert" -noout -checkend $(( MIN_VALID_DAYS * 86400 )) >/dev/null; then
    die "certificate expires in fewer than $MIN_VALID_DAYS days; refusing to install"
  fi

  local ts
  ts="$(date -u +%Y%m%dT%H%M%SZ)"
  mkdir -p "$EDGE_TLS_DIR/backup"
  cp -p "$EDGE_TLS_DIR/server.crt" "$EDGE_TLS_DIR/backup/server.crt.$ts" 2>/dev/null || true
  cp -p "$EDGE_TLS_DIR/server.key" "$EDGE_TLS_DIR/backup/server.key.$ts" 2>/dev/null || true

  if [[ "$(realpath "$cert")" != "$(realpath "$EDGE_TLS_DIR/server.crt")" ]]; then
    install -m 0644 "$cert" "$EDGE_TLS_DIR/server.crt"
    install -m 0600 "$key" "$EDGE_TLS_DIR/server.key"
  fi

  # SIGHUP makes the gateway reload TLS material without dropping connections.
  kill -HUP "$(cat "$GATEWAY_PIDFILE")"
  sleep 2
  echo | openssl s_client -connect 127.0.0.1:8443 2>/dev/null | openssl x509 -noout -subject -enddate
  echo "Edge certificate rotated; backup saved with suffix $ts"
}

case "${1:-}" in
  internal) [[ $# -eq 2 ]] || die "usage: $0 internal <service>"; rotate_internal "$2" ;;
  edge)     [[ $# -eq 3 ]] || die "usage: $0 edge <cert.pem> <key.pem>"; rotate_edge "$2" "$3" ;;
  *)        die "usage: $0 {internal <service> | edge <cert.pem> <key.pem>}" ;;
esac
