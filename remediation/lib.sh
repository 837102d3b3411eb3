# Shared by the remediation scripts (POSIX sh): plan first, act only with --apply, back up each
# file once before its first edit, act only on the target.
#   GPUCONFORM_ROOT  the target's root (default: / of the machine the script runs on). Every file
#                    is read and written below it and every command runs inside it (chroot), so a
#                    script never acts on the machine that runs it.
#   --apply          do it (default: print the plan and change nothing)
# Output lines the suite reads (gpuconform/node/remediation.py): "reboot required: <reason>",
# "nothing to do: ...", "fix failed: <reason>" (exit 1).
set -eu
ROOT=${GPUCONFORM_ROOT:-}
[ "$ROOT" = / ] && ROOT=
APPLY=0
for a in "$@"; do
  case "$a" in
    --apply) APPLY=1 ;;
    -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "${0##*/}: unknown option $a (use --apply or --help)" >&2; exit 2 ;;
  esac
done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
CHANGED=0
REBOOT=0
TOUCHED=" "

say()  { printf '%s\n' "$*"; }
plan() { if [ "$APPLY" = 1 ]; then say "+ $*"; else say "would: $*"; fi; }
fail() { say "fix failed: $*"; exit 1; }
reboot_required() { REBOOT=1; say "reboot required: $*"; }

# in_root CMD...: run CMD on the target (chroot into GPUCONFORM_ROOT when it is set)
in_root() { if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi; }
# has TOOL: TOOL is installed on the target
has() { in_root sh -c 'command -v "$1"' sh "$1" >/dev/null 2>&1; }

# backup FILE: before the first edit of FILE in this run, copy it to FILE.gpuconform-<stamp>.bak
backup() {
  case "$TOUCHED" in *" $1 "*) return 0 ;; esac
  TOUCHED="$TOUCHED$1 "
  [ -e "$ROOT$1" ] || { say "  new file: $1"; return 0; }
  cp -p "$ROOT$1" "$ROOT$1.gpuconform-$STAMP.bak"
  say "  backup: $1.gpuconform-$STAMP.bak"
}

# ensure_line FILE LINE: append LINE to FILE unless an identical line is there
ensure_line() {
  if [ -f "$ROOT$1" ] && grep -qxF -- "$2" "$ROOT$1"; then return 0; fi
  plan "add '$2' to $1"
  CHANGED=1
  [ "$APPLY" = 1 ] || return 0
  backup "$1"
  mkdir -p "$(dirname "$ROOT$1")"
  printf '%s\n' "$2" >>"$ROOT$1"
}

# sed_re TEXT / sed_repl TEXT: TEXT as a literal in an extended regular expression (sed -E) or in
# the replacement of s|…|…|, whatever its characters (a profile's kernel parameter: p=a|b&c)
sed_re()   { printf '%s\n' "$1" | sed 's#[][\/|.*+?(){}^$]#\\&#g'; }
sed_repl() { printf '%s\n' "$1" | sed 's#[\/|&]#\\&#g'; }

# run CMD...: a command that changes the target; only with --apply; a missing tool fails the fix
run() {
  plan "$*"
  CHANGED=1
  [ "$APPLY" = 1 ] || return 0
  has "$1" || fail "$1 is not installed on the target"
  in_root "$@" || fail "'$*' exited $?"
}

finish() {
  if [ "$CHANGED" = 0 ] && [ "$REBOOT" = 0 ]; then say "nothing to do: already in place"
  elif [ "$CHANGED" = 0 ]; then say "nothing to do until the reboot"
  elif [ "$APPLY" = 0 ]; then say "(dry run: nothing changed; run again with --apply)"; fi
}
