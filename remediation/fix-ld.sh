#!/usr/bin/env bash
# Makes /usr/bin/ld a working linker again (the article's `/bin/ld: Permission denied` that
# left `dkms status` at `added`): /usr/bin/ld becomes a symlink to ld.bfd, then DKMS reinstalls.
# Fixes: node.toolchain.ld_runs (then node.dkms.nvidia_installed)
# Usage: fix-ld.sh [--apply]   (NVIDIA_VERSION=580.95.05 to also run dkms install)
. "$(dirname "$0")/lib.sh"
LD=/usr/bin/ld
BFD=$(ls "$ROOT"/usr/bin/ld.bfd "$ROOT"/usr/bin/*-ld.bfd 2>/dev/null | head -n 1 || true)
if [ -z "$BFD" ]; then say "no ld.bfd under /usr/bin: reinstall binutils (dnf reinstall binutils)"; exit 1; fi
BFD=${BFD#"$ROOT"}
if [ -L "$ROOT$LD" ] && [ "$(readlink "$ROOT$LD")" = "$(basename "$BFD")" ] && [ -x "$ROOT$BFD" ]; then
  :
else
  plan "replace $LD by a symlink to $(basename "$BFD")"
  CHANGED=1
  if [ "$APPLY" = 1 ]; then backup "$LD"; ln -sfn "$(basename "$BFD")" "$ROOT$LD"; fi
fi
if [ ! -x "$ROOT$BFD" ]; then
  plan "chmod 755 $BFD"; CHANGED=1
  [ "$APPLY" = 1 ] && chmod 755 "$ROOT$BFD"
fi
if [ "$CHANGED" = 1 ] && [ -n "${NVIDIA_VERSION:-}" ]; then
  run dkms install -m nvidia -v "$NVIDIA_VERSION" -k "$(uname -r)"
fi
finish
