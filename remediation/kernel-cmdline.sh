#!/bin/sh
# Puts the required kernel parameters on every boot entry and drops the forbidden ones: grubby on
# the RHEL family, GRUB_CMDLINE_LINUX in /etc/default/grub + update-grub on Debian/Ubuntu. The
# running command line changes only at the next boot, so a pending change asks for a reboot.
# Fixes: node.kernel.cmdline_required, node.kernel.cmdline_forbidden, node.signing.enforcement,
#        node.signing.lockdown (after the reboot)
# Usage: [ADD="module.sig_enforce=0 rd.driver.blacklist=nouveau"] [REMOVE=lockdown] kernel-cmdline.sh [--apply]
. "$(dirname "$0")/lib.sh"
ADD=${ADD-"module.sig_enforce=0 rd.driver.blacklist=nouveau"}
REMOVE=${REMOVE-lockdown}
G=/etc/default/grub
# what the next boot gets
if has grubby; then
  configured=$(in_root grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p' | tr '\n' ' ')
elif [ -f "$ROOT$G" ]; then
  configured=$(sed -n 's/^GRUB_CMDLINE_LINUX="\(.*\)"$/\1/p' "$ROOT$G")
else
  fail "neither grubby nor $G on the target: set the kernel command line by hand"
fi
missing="" present=""
for p in $ADD; do case " $configured " in *" $p "*) ;; *) missing="$missing $p" ;; esac; done
for p in $REMOVE; do case " $configured " in *" $p="*|*" $p "*) present="$present $p" ;; esac; done
if [ -n "$missing$present" ]; then
  if has grubby; then
    if [ "$APPLY" = 1 ]; then  # grubby edits the boot entries (BLS) and /etc/default/grub
      for f in "$ROOT"/boot/loader/entries/*.conf "$ROOT$G"; do [ -f "$f" ] && backup "${f#"$ROOT"}"; done
    fi
    [ -n "$missing" ] && run grubby --update-kernel=ALL --args="${missing# }"
    [ -n "$present" ] && run grubby --update-kernel=ALL --remove-args="${present# }"
    if [ -f "$ROOT/boot/grub2/grub.cfg" ] && has grub2-mkconfig; then  # the article's step, for non-BLS menus
      [ "$APPLY" = 1 ] && backup /boot/grub2/grub.cfg
      run grub2-mkconfig -o /boot/grub2/grub.cfg
    fi
  else
    # $G is shell, sourced by update-grub: a parameter it cannot hold between double quotes stops the fix
    for p in $missing; do case $p in *[\"\\\$\`]*) fail "kernel parameter $p: a quote, backslash, \$ or \` cannot go into GRUB_CMDLINE_LINUX in $G" ;; esac; done
    plan "edit GRUB_CMDLINE_LINUX in $G: add${missing:- nothing}, remove${present:- nothing}"
    CHANGED=1
    if [ "$APPLY" = 1 ]; then
      backup "$G"
      for p in $missing; do sed -i "s|^GRUB_CMDLINE_LINUX=\"|&$(sed_repl "$p") |" "$ROOT$G"; done
      for p in $present; do sed -i -E "/^GRUB_CMDLINE_LINUX=/s/ ?$(sed_re "$p")(=[^ \"]*)?//g" "$ROOT$G"; done
    fi
    run update-grub
  fi
fi
# the running kernel still has the old command line until the next boot
running=$(cat "$ROOT/proc/cmdline" 2>/dev/null || true)
stale=""
for p in $ADD; do case " $running " in *" $p "*) ;; *) stale="$stale +$p" ;; esac; done
for p in $REMOVE; do case " $running " in *" $p="*|*" $p "*) stale="$stale -$p" ;; esac; done
[ -z "$stale" ] || reboot_required "the kernel command line changes at the next boot (+added, -removed):$stale"
finish
