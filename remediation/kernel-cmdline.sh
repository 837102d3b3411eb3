#!/usr/bin/env bash
# Puts the article's kernel parameters on every boot entry and drops lockdown.
# Fixes: node.kernel.cmdline_required, node.kernel.cmdline_forbidden, node.signing.enforcement,
#        node.signing.lockdown (after the reboot it asks for)
# Usage: kernel-cmdline.sh [--apply]   (ADD="module.sig_enforce=0 rd.driver.blacklist=nouveau" REMOVE=lockdown)
. "$(dirname "$0")/lib.sh"
ADD=${ADD:-"module.sig_enforce=0 rd.driver.blacklist=nouveau"}
REMOVE=${REMOVE:-lockdown}
cmdline=$(cat "$ROOT/proc/cmdline" 2>/dev/null || true)
missing=""; for p in $ADD; do case " $cmdline " in *" $p "*) ;; *) missing="$missing $p";; esac; done
present=""; for p in $REMOVE; do case " $cmdline " in *" $p="*|*" $p "*) present="$present $p";; esac; done
if [ -z "$missing$present" ]; then finish; exit 0; fi
if command -v grubby >/dev/null 2>&1 || [ -z "$(command -v update-grub)" ]; then
  [ -n "$missing" ] && run grubby --update-kernel=ALL --args="${missing# }"
  [ -n "$present" ] && run grubby --update-kernel=ALL --remove-args="${present# }"
  run grub2-mkconfig -o /boot/grub2/grub.cfg
else
  plan "edit GRUB_CMDLINE_LINUX in /etc/default/grub: add${missing:- nothing}, remove${present:- nothing}"
  if [ "$APPLY" = 1 ]; then
    backup /etc/default/grub
    for p in $missing; do sed -i "s|^GRUB_CMDLINE_LINUX=\"|&$p |" "$ROOT/etc/default/grub"; done
    for p in $present; do sed -i -E "/^GRUB_CMDLINE_LINUX=/s/ ?$p(=[^ \"]*)?//g" "$ROOT/etc/default/grub"; done
  fi
  CHANGED=1
  run update-grub
fi
say "reboot the host for the new command line to take effect"
finish
