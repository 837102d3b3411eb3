"""The probe's package lines: dpkg's states (installed, removed but not purged, merely known) and
rpm's installed versions."""
from gpuconform.parsers import host, systemd

# `dpkg-query -W -f 'dpkg ${db:Status-Abbrev} ${Package} ${Version}\n'` as the probe asks it. The un
# line's trailing blank (no version) is dpkg 1.21's real output (Debian 12: `un  acl `); rc and ii as
# dpkg-query(1) documents db:Status-Abbrev (want letter, status letter, error flag: a blank).
DPKG = ("dpkg rc  nvidia-fabricmanager-570 570.172.08-1\n"
        "dpkg un  nvidia-fabricmanager-575 \n"
        "dpkg ii  nvidia-fabricmanager-580 580.95.05-1\n"
        "dpkg iHR nvidia-fabricmanager-590 590.10-1\n")


def test_dpkg_states():
    pkgs = {p.name: p for p in host.parse_packages(DPKG)}
    assert [(p.state, p.version, p.installed) for p in pkgs.values()] == [
        ("config-files", "570.172.08-1", False), ("not-installed", "", False),
        ("installed", "580.95.05-1", True), ("half-installed", "590.10-1", False)]
    assert pkgs["nvidia-fabricmanager-575"].describe() == "nvidia-fabricmanager-575 (no version) (not-installed)"


def test_rpm_lists_each_installed_version():
    text = "rpm nvidia-fabric-manager 580.95.05\nrpm nvidia-fabric-manager 570.172.08\n"
    assert [(p.version, p.installed) for p in host.parse_packages(text)] == [("580.95.05", True), ("570.172.08", True)]


def test_lines_of_neither_tool_are_not_packages():
    assert host.parse_packages("nvidia-fabric-manager 580.95.05\ndpkg ii\n") == ()


def test_a_unit_systemd_cannot_find_says_so():
    unit = systemd.parse_show("Id=nvidia-fabricmanager.service\nLoadState=not-found\nActiveState=inactive\n"
                              "SubState=dead\nUnitFileState=\n")["nvidia-fabricmanager.service"]
    assert unit.describe() == "inactive (dead), not-found"
