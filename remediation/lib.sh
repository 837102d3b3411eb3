# Shared by the remediation scripts: plan first, act only with --apply, back up every edit.
#   GPUCONFORM_ROOT  prefix for every file touched (default: /), e.g. a chroot being fixed
#   --apply          do it (default: print the plan and change nothing)
set -euo pipefail
ROOT=${GPUCONFORM_ROOT:-}
APPLY=0
for a in "$@"; do
  case "$a" in
    --apply) APPLY=1 ;;
    -h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "$(basename "$0"): unknown option $a (use --apply or --help)" >&2; exit 2 ;;
  esac
done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CHANGED=0

say()  { printf '%s\n' "$*"; }
plan() { if [ "$APPLY" = 1 ]; then say "+ $*"; else say "would: $*"; fi; }

# backup FILE: copy FILE to FILE.gpuconform-<stamp>.bak once per run before editing it
backup() {
  local f="$ROOT$1"
  [ -e "$f" ] || return 0
  [ -e "$f.gpuconform-$STAMP.bak" ] || cp -a "$f" "$f.gpuconform-$STAMP.bak"
  say "  backup: $1.gpuconform-$STAMP.bak"
}

# ensure_line FILE LINE: append LINE to FILE unless an identical line is there
ensure_line() {
  local f="$ROOT$1" line="$2"
  if [ -f "$f" ] && grep -qxF -- "$line" "$f"; then return 0; fi
  plan "add '$line' to $1"
  if [ "$APPLY" = 1 ]; then backup "$1"; mkdir -p "$(dirname "$f")"; printf '%s\n' "$line" >>"$f"; fi
  CHANGED=1
}

# run CMD...: a command that changes the host; only with --apply, and only if it exists
run() {
  plan "$*"
  CHANGED=1
  [ "$APPLY" = 1 ] || return 0
  if ! command -v "$1" >/dev/null 2>&1; then say "  skipped: $1 is not installed here"; return 0; fi
  "$@"
}

finish() {
  if [ "$CHANGED" = 0 ]; then say "nothing to do: already in place"; 
  elif [ "$APPLY" = 0 ]; then say "(dry run: nothing changed; run again with --apply)"; fi
}
