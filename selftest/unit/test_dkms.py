"""dkms status: every form met in the field."""
import pytest

from gpuconform.parsers import dkms

K = "6.12.21.red80.x86_64"


@pytest.mark.parametrize("line, expected", [
    (f"nvidia/580.95.05, {K}, x86_64: installed", ("nvidia", "580.95.05", K, "x86_64", "installed", "")),
    ("nvidia/580.95.05: added", ("nvidia", "580.95.05", None, None, "added", "")),
    (f"nvidia/580.95.05, {K}, x86_64: built", ("nvidia", "580.95.05", K, "x86_64", "built", "")),
    (f"nvidia/580.95.05, {K}, x86_64: broken", ("nvidia", "580.95.05", K, "x86_64", "broken", "")),
    (f"nvidia, 580.95.05, {K}, x86_64: installed", ("nvidia", "580.95.05", K, "x86_64", "installed", "")),
    ("nvidia, 580.95.05: added", ("nvidia", "580.95.05", None, None, "added", "")),
    (f"nvidia-open/570.86.15, {K}, x86_64: installed (WARNING! Diff between built and installed module!)",
     ("nvidia-open", "570.86.15", K, "x86_64", "installed", "WARNING! Diff between built and installed module!")),
    (f"nvidia/580.95.05, {K}, x86_64: installed-weak from 6.12.20.red80.x86_64",
     ("nvidia", "580.95.05", K, "x86_64", "installed-weak", "from 6.12.20.red80.x86_64")),
    (f"nvidia/580.95.05, {K}: installed", ("nvidia", "580.95.05", K, None, "installed", "")),
])
def test_status_line_forms(line, expected):
    (e,) = dkms.parse_status(line)
    assert (e.module, e.version, e.kernel, e.arch, e.state, e.note) == expected


def test_status_skips_warnings_and_keeps_several_kernels():
    text = ("Warning! Could not locate dkms.conf file.\n"
            "nvidia/580.95.05, 6.12.20.red80.x86_64, x86_64: installed\n"
            "\n"
            "nvidia/580.95.05, 6.12.21.red80.x86_64, x86_64: built\n")
    assert [(e.kernel, e.state) for e in dkms.parse_status(text)] == [
        ("6.12.20.red80.x86_64", "installed"), ("6.12.21.red80.x86_64", "built")]


@pytest.mark.parametrize("text, version", [("dkms-3.0.11", "3.0.11"), ("dkms: 2.8.1", "2.8.1"), ("", None)])
def test_version(text, version):
    assert dkms.parse_version(text) == version
