#!/bin/sh
set -eu

log() {
  echo "[deploy] $1"
}

deploy_service() {
  log "deploying $1"
}

deploy_service api
