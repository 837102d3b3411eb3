"""/proc and /sys formats, modprobe.d, Xid lines, os-release, systemctl show."""
import pytest

from gpuconform.parsers import kernel, kmod, systemd


def test_proc_modules_real_lines():
    text = ("nvidia_uvm 4673536 2 - Live 0x0000000000000000 (POE)\n"
            "nvidia 54300672 67 nvidia_modeset,nvidia_uvm, Live 0x0000000000000000 (POE)\n"
            "nvidia_uvm2 1830912 - - Live 0xffffffffc080c000 (O)\n")
    mods = kmod.parse_proc_modules(text)
    assert mods["nvidia"].deps == ("nvidia_modeset", "nvidia_uvm") and mods["nvidia"].refcount == 67
    assert mods["nvidia_uvm"].taints == "POE" and mods["nvidia_uvm2"].refcount is None


@pytest.mark.parametrize("wanted, present", [
    ("module.sig_enforce=0", True), ("rd.driver.blacklist=nouveau", True), ("quiet", True),
    ("module.sig_enforce=1", False), ("lockdown", False),
])
def test_cmdline_has(wanted, present):
    params = kernel.parse_cmdline('BOOT_IMAGE=(hd0,gpt2)/vmlinuz ro quiet module.sig_enforce=0 '
                                  'rd.driver.blacklist=nouveau,radeon console="ttyS0,115200"')
    assert kernel.cmdline_has(params, wanted) is present


def test_cmdline_last_value_wins():
    assert not kernel.cmdline_has(kernel.parse_cmdline("module.sig_enforce=0 module.sig_enforce=1"),
                                  "module.sig_enforce=0")


@pytest.mark.parametrize("text, mode", [("[none] integrity confidentiality", "none"),
                                        ("none [integrity] confidentiality", "integrity"), ("", None)])
def test_lockdown(text, mode):
    assert kernel.parse_lockdown(text) == mode


def test_modprobe_grep_drops_comments():
    text = ("/etc/modprobe.d/blacklist-nouveau.conf:blacklist nouveau\n"
            "/etc/modprobe.d/blacklist-nouveau.conf:# options nouveau modeset=1\n"
            "/etc/modprobe.d/blacklist-nouveau.conf:options nouveau modeset=0  # article\n")
    assert [w for _, w in kernel.parse_modprobe_grep(text)] == [["blacklist", "nouveau"],
                                                               ["options", "nouveau", "modeset=0"]]


def test_xids():
    text = ("[  123.456] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
            "[    3.447677] NVRM: Persistence mode is deprecated\n")
    assert kernel.parse_xids(text) == [kernel.Xid(79, "[  123.456] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, "
                                                      "name=python, GPU has fallen off the bus.", 123.456)]


@pytest.mark.parametrize("text, family", [
    ('ID="redos"\nID_LIKE="rhel fedora"\n', "rhel"), ("ID=ubuntu\nID_LIKE=debian\n", "debian"),
    ("ID=rocky\n", "rhel"), ("ID=alpine\n", None)])
def test_os_family(text, family):
    assert kernel.os_family(kernel.parse_os_release(text)) == family


def test_systemctl_show_blocks():
    text = ("Id=nvidia-persistenced.service\nLoadState=loaded\nActiveState=active\nSubState=running\n"
            "UnitFileState=enabled\n\nId=nvidia-fabricmanager.service\nLoadState=not-found\n"
            "ActiveState=inactive\nSubState=dead\nUnitFileState=\n")
    units = systemd.parse_show(text)
    assert units["nvidia-persistenced.service"].active_state == "active"
    assert units["nvidia-fabricmanager.service"].load_state == "not-found"
