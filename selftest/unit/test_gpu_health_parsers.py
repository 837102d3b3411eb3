"""The health queries' parsers on real outputs: the lent H200's (driver 580.159.04, captured
2026-12-04, ../shared/reference/real-gpu-host-h200.md "health"), NVLink in the format of NVIDIA's
own issue threads (NVIDIA/k8s-test-infra#371, NVIDIA/srt-slurm#307), the validator's files as
gpu-operator validator/main.go writes them."""
import pytest

from gpuconform.node import xid
from gpuconform.node.topics import validator
from gpuconform.parsers import kernel, nvidia_smi


def test_h200_pcie_clocks_and_memory_errors():
    # the H200's values for these fields, --format=csv,noheader
    pcie = nvidia_smi.parse_pcie("0, 5, 5, 16, 16, Active\n")[0]
    assert (pcie.pcie_link_gen_current, pcie.pcie_link_width_max, pcie.idle) == ("5", "16", True)
    clocks = nvidia_smi.parse_clocks("0, Not Active, Not Active, Not Active, Not Active\n")[0]
    assert clocks.active() == []
    assert nvidia_smi.parse_clocks("0, Active, Active, Not Active, Not Active\n")[0].active() == [
        "hw_slowdown", "hw_thermal_slowdown"]
    mem = nvidia_smi.parse_memory_errors("0, 0, 0, 0\n1, [N/A], [N/A], [N/A]\n")
    assert (mem[0].remapped_rows_uncorrectable, mem[1].ecc_errors_corrected_aggregate_sram) == ("0", None)


def test_nvlink_status_and_errors():
    status = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-d1b93026-6d5b-03bd-3a71-f85b47a61bde)\n"
              "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
              "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-39ac7bce-e3d6-b426-008e-fa47897c72d5)\n\t Link 0: 26.562 GB/s\n")
    errors = ("GPU 0: NVIDIA H100 80GB HBM3\n\t Link 0: Replay Errors: 0\n\t Link 0: Recovery Errors: 3\n"
              "\t Link 0: CRC Errors: 0\n\t Link 1: Replay Errors: 0\n")
    links = nvidia_smi.parse_nvlink(status, errors)
    assert [(link.gpu, link.link, link.speed) for link in links] == [(0, 0, "26.562 GB/s"), (0, 1, None), (1, 0, "26.562 GB/s")]
    assert links[0].errors == (("Replay", 0), ("Recovery", 3), ("CRC", 0)) and links[2].errors == ()
    assert nvidia_smi.parse_nvlink("", "") == []   # the H200 in its VM: no NVLink, nothing printed


def test_xid_window_and_classes():
    log = kernel.parse_kernel_log("source=dmesg\nuptime=90000.5\n"
                                  "[  100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', GPU has fallen off the bus.\n"
                                  "[89000.000000] NVRM: Xid (PCI:0000:18:00): 13, pid=1, name=python, Graphics Exception\n")
    assert log.uptime_s == 90000.5 and [x.code for x in log.within(None)] == [79, 13]
    assert [x.code for x in log.within(1)] == [13]          # 79 was 25 h ago
    assert xid.classify(79).name == "hardware, reboot" and xid.classify(13).name == "application"
    assert xid.classify(74) is xid.NVLINK and "catalogue" in xid.classify(999).action


def test_validator_files_cannot_pass_for_each_other():
    v = validator.parse_validations("ready driver-ready\nready toolkit-ready\ndriver IS_HOST_DRIVER=true\n"
                                    "driver NVIDIA_DRIVER_ROOT=/\n")
    assert v.ready == {"driver-ready", "toolkit-ready"} and v.driver == {"IS_HOST_DRIVER": "true", "NVIDIA_DRIVER_ROOT": "/"}


def test_dcgm_diag_json_of_both_generations():
    from gpuconform.parsers import dcgm
    v3 = ('{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Integration", "tests": [{"name": "PCIe", '
          '"results": [{"gpu_id": "0", "status": "Skip"}, {"gpu_id": "1", "status": "Fail", "info": "bandwidth low"}]}]}]}}')
    assert [(r.test, r.gpu, r.status, r.info) for r in dcgm.parse_diag(v3)] == [
        ("PCIe", "0", "Skip", ""), ("PCIe", "1", "Fail", "bandwidth low")]
    v4 = '{"DCGM Diagnostic": {"test_categories": [{"category": "Deployment", "tests": [{"name": "software", "test_summary": {"status": "Pass"}}]}]}}'
    assert [(r.test, r.gpu, r.status) for r in dcgm.parse_diag(v4)] == [("software", None, "Pass")]
    for text in ("Error: unable to connect to host engine", '{"other": 1}'):
        with pytest.raises(ValueError):
            dcgm.parse_diag(text)


def test_only_hosts_whose_profile_opts_in_get_the_dcgm_diagnostic():
    from pathlib import Path
    from gpuconform import profile
    from gpuconform.plugin.fixtures import probe_script
    script = probe_script(profile.load(Path(__file__).parents[2] / "profiles" / "seed-h100.yaml"))
    assert "GPUC_DCGM=1\n" in script("t", 60, "dcgm-good")
    for others in (script("t", 60, "gpu-1"), script("t", 60)):
        assert "GPUC_DCGM=" in others and "GPUC_DCGM=1" not in others and "GPUC_DCGM=2" not in others


def test_driver_container_root_only_where_the_validator_found_the_container():
    from gpuconform.node import probe
    from gpuconform.node.facts import NodeFacts

    def facts(validations: str | None) -> NodeFacts:
        return NodeFacts("h", {} if validations is None else {"validations": probe.Section(0, validations, "")})
    container = "ready driver-ready\ndriver IS_HOST_DRIVER=false\ndriver NVIDIA_DRIVER_ROOT=/run/nvidia/driver\n"
    assert facts(container).driver_container_root == "/run/nvidia/driver"
    assert facts("ready driver-ready\ndriver IS_HOST_DRIVER=true\ndriver NVIDIA_DRIVER_ROOT=/\n").driver_container_root is None
    assert facts("").driver_container_root is None       # no operator on the host
    assert facts(None).driver_container_root is None     # the probe never got there: nothing to add, not an error
