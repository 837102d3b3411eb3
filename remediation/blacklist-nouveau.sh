#!/usr/bin/env bash
# Blacklists nouveau as the article does and rebuilds the initramfs.
# Fixes: node.nouveau.blacklisted, node.nouveau.not_in_initramfs (node.nouveau.not_loaded after reboot).
# Usage: blacklist-nouveau.sh [--apply]
. "$(dirname "$0")/lib.sh"
F=/etc/modprobe.d/blacklist-nouveau.conf
for line in "blacklist nouveau" "blacklist lbm-nouveau" "options nouveau modeset=0" \
            "alias nouveau off" "alias lbm-nouveau off"; do
  ensure_line "$F" "$line"
done
if [ "$CHANGED" = 1 ]; then
  if command -v dracut >/dev/null 2>&1 || [ -z "$(command -v update-initramfs)" ]; then run dracut --force
  else run update-initramfs -u; fi
  say "reboot the host for nouveau to be unloaded"
fi
finish
