#!/bin/sh
# Makes /usr/bin/ld a working linker again (the article's `/bin/ld: Permission denied` that
# left `dkms status` at `added`): /usr/bin/ld becomes a symlink to ld.bfd. DKMS then needs
# `dkms install` for the running kernel (dkms-install.sh).
# Fixes: node.toolchain.ld_runs (then node.dkms.nvidia_installed through dkms-install.sh)
# Usage: fix-ld.sh [--apply]
. "$(dirname "$0")/lib.sh"
LD=/usr/bin/ld
BFD=$(ls "$ROOT"/usr/bin/ld.bfd "$ROOT"/usr/bin/*-ld.bfd 2>/dev/null | head -n 1 || true)
[ -n "$BFD" ] || fail "no ld.bfd under /usr/bin: reinstall binutils (dnf reinstall binutils / apt-get install --reinstall binutils)"
BFD=${BFD#"$ROOT"}
if [ ! -x "$ROOT$BFD" ]; then
  plan "chmod 755 $BFD"; CHANGED=1
  if [ "$APPLY" = 1 ]; then backup "$BFD"; chmod 755 "$ROOT$BFD"; fi
fi
if ! { [ -L "$ROOT$LD" ] && [ "$(readlink "$ROOT$LD")" = "${BFD##*/}" ]; }; then
  plan "replace $LD by a symlink to ${BFD##*/}"
  CHANGED=1
  if [ "$APPLY" = 1 ]; then backup "$LD"; rm -f "$ROOT$LD"; ln -s "${BFD##*/}" "$ROOT$LD"; fi
fi
finish
