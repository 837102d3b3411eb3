"""nvidia-smi machine formats and /proc/driver/nvidia/version, from real captures."""
import pytest

from gpuconform.parsers import nvidia_smi

FIELDS = ("index", "name", "persistence_mode", "mig.mode.current", "mig.mode.pending")


def test_query_rows_and_not_available_values():
    text = ("0, NVIDIA H100 80GB HBM3, Enabled, Disabled, Disabled\n"
            "1, NVIDIA GeForce RTX 4070 Laptop GPU, Disabled, [N/A], [N/A]\n")
    rows = nvidia_smi.parse_query(text, FIELDS)
    assert rows[0]["name"] == "NVIDIA H100 80GB HBM3" and rows[0]["mig.mode.current"] == "Disabled"
    assert rows[1]["mig.mode.current"] is None and rows[1]["persistence_mode"] == "Disabled"


def test_query_deprecated_is_not_a_value():
    rows = nvidia_smi.parse_query("0, [Requested functionality has been deprecated]", ("index", "display_mode"))
    assert rows == [{"index": "0", "display_mode": None}]


def test_query_wrong_width_is_an_error():
    with pytest.raises(ValueError, match="expected 5 CSV values"):
        nvidia_smi.parse_query("0, NVIDIA H200", FIELDS)


def test_list_with_mig_devices():
    text = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-b4895dbf-9350-2524-a89b-98161ddd9fe4)\n"
            "  MIG 3g.40gb     Device  0: (UUID: MIG-7089d0f3-293f-58c9-8f8c-5ea666eedbde)\n"
            "  MIG 1g.10gb     Device  1: (UUID: MIG-9d14fb21-4ae1-546f-a636-011582899c39)\n"
            "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-00000000-0000-0000-0000-000000000000)\n")
    gpus = nvidia_smi.parse_list(text)
    assert [g.index for g in gpus] == [0, 1]
    assert [m.profile for m in gpus[0].mig] == ["3g.40gb", "1g.10gb"] and gpus[1].mig == ()
    # read by key as well, the way the report and the cluster layer read it
    assert gpus[0]["mig"][1]["uuid"] == "MIG-9d14fb21-4ae1-546f-a636-011582899c39"


def test_typed_gpu_rows():
    text = ("0, NVIDIA H200, GPU-0f1e, 00000000:18:00.0, 0x233510DE, 580.159.04, Enabled, [N/A], [N/A], Enabled\n"
            "1, NVIDIA H200, GPU-0f1f, 00000000:2A:00.0, 0x233510DE, 580.159.04, Disabled, Enabled, Disabled, Enabled\n")
    rows = nvidia_smi.parse_gpus(text)
    assert [(r.index, r.mig_mode_current, r.mig_mode_pending, r.persistence_mode) for r in rows] == [
        (0, None, None, "Enabled"), (1, "Enabled", "Disabled", "Disabled")]
    assert rows[1]["pci.bus_id"] == "00000000:2A:00.0" and rows[0].get("no.such.field", "-") == "-"


def test_typed_gpu_rows_need_a_numeric_index():
    with pytest.raises(ValueError, match="GPU index"):
        nvidia_smi.parse_health("[N/A], No, No, No")


@pytest.mark.parametrize("text, version, flavour", [
    ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
     "GCC version:  gcc version 15.3.0 (GCC)", "580.159.04", "open"),
    ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Tue Sep 23 09:37:05 UTC 2025\n", "580.95.05", "proprietary"),
])
def test_proc_version(text, version, flavour):
    info = nvidia_smi.parse_proc_version(text)
    assert (info.version, info.flavour) == (version, flavour)


def test_proc_version_garbage():
    assert nvidia_smi.parse_proc_version("no driver here") is None
