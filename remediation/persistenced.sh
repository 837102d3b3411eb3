#!/usr/bin/env bash
# Enables and starts nvidia-persistenced.
# Fixes: node.persistenced.enabled, node.persistenced.active, node.persistenced.running,
#        node.gpu.persistence_mode
# Usage: persistenced.sh [--apply]
. "$(dirname "$0")/lib.sh"
U=nvidia-persistenced.service
if [ "$(systemctl is-enabled "$U" 2>/dev/null || true)" != enabled ] || ! systemctl --quiet is-active "$U" 2>/dev/null; then
  run systemctl enable --now "$U"
fi
finish
