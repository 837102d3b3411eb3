#!/bin/sh
# Blacklists nouveau as the article does, rebuilds the running kernel's initramfs when nouveau is
# in it (dracut --force on the RHEL family, update-initramfs -u on Debian/Ubuntu), and says a
# reboot is required while nouveau is still loaded.
# Fixes: node.nouveau.blacklisted, node.nouveau.not_in_initramfs, node.nouveau.not_loaded (reboot)
# Usage: blacklist-nouveau.sh [--apply]
. "$(dirname "$0")/lib.sh"
F=/etc/modprobe.d/blacklist-nouveau.conf
for line in "blacklist nouveau" "blacklist lbm-nouveau" "options nouveau modeset=0" \
            "alias nouveau off" "alias lbm-nouveau off"; do
  ensure_line "$F" "$line"
done
kver=$(in_root uname -r)
if has dracut; then
  image=/boot/initramfs-$kver.img list="lsinitrd $image" rebuild="dracut --force $image $kver"
else
  image=/boot/initrd.img-$kver list="lsinitramfs $image" rebuild="update-initramfs -u -k $kver"
fi
# a new blacklist must reach the image too: dracut copies modprobe.d into it
if [ "$CHANGED" = 1 ] || in_root $list 2>/dev/null | grep -q 'nouveau\.ko'; then
  [ "$APPLY" = 1 ] && backup "$image"
  run $rebuild
fi
if grep -q '^nouveau ' "$ROOT/proc/modules" 2>/dev/null; then
  reboot_required "nouveau is loaded; the blacklist takes effect at the next boot"
fi
finish
