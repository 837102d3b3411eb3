"""GPU health: ECC on, no retired pages pending, no row-remap failure, memory error counters, the
PCIe link, clock limiters and NVLink."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import gpu_health
from gpuconform.node.facts import CannotTell


@check("node.gpu.ecc_enabled", **gpu_health.GPU_ECC_ENABLED, needs=["node.smi.runs"])
def test_ecc_enabled(node, expected):
    """ecc.mode.current is Enabled on every GPU (when the profile requires ECC)."""
    if expected.gpu.ecc != "enabled":
        return
    off = [f"GPU {g.index}: {g.ecc_mode_current or 'not supported'}" for g in node.gpus
           if g.ecc_mode_current != "Enabled"]
    assert not off, f"ECC is not enabled: {'; '.join(off)}"


@check("node.gpu.retired_pages", **gpu_health.GPU_RETIRED_PAGES, needs=["node.smi.runs"])
def test_no_retired_pages_pending(node):
    """retired_pages.pending is not Yes on any GPU (N/A on GPUs that remap rows instead)."""
    bad = [str(g.index) for g in node.gpu_health if (g.retired_pages_pending or "").lower() == "yes"]
    assert not bad, f"retired pages pending a reset on GPU {', '.join(bad)}"


@check("node.gpu.row_remap", **gpu_health.GPU_ROW_REMAP, needs=["node.smi.runs"])
def test_no_row_remap_failure(node):
    """remapped_rows.failure and remapped_rows.pending are not Yes on any GPU."""
    bad = [f"GPU {g.index}: " + ", ".join(name for name, value in (("failure", g.remapped_rows_failure),
                                                                   ("pending", g.remapped_rows_pending))
                                        if (value or "").lower() == "yes")
           for g in node.gpu_health
           if "yes" in ((g.remapped_rows_failure or "").lower(), (g.remapped_rows_pending or "").lower())]
    assert not bad, f"row remapping problem: {'; '.join(bad)}"


@check("node.gpu.pcie_link", **gpu_health.GPU_PCIE_LINK, needs=["node.smi.runs"])
def test_pcie_link(node, expected):
    """pcie.link.width.current equals .max, and gen.current equals gen.max unless the GPU is idle
    (nvidia-smi: the generation "may be reduced when the GPU is not in use")."""
    if expected.health.pcie_link == "any":
        pytest.skip("the profile does not check the PCIe link (health.pcie_link: any)")
    rows = node.gpu_pcie
    unknown = [str(g.index) for g in rows if None in (g.pcie_link_width_current, g.pcie_link_width_max)]
    if unknown:
        raise CannotTell(f"nvidia-smi gives no PCIe link width for GPU {', '.join(unknown)} (a VM may hide it)")
    bad = [f"GPU {g.index}: x{g.pcie_link_width_current} of x{g.pcie_link_width_max}" for g in rows
           if g.pcie_link_width_current != g.pcie_link_width_max]
    bad += [f"GPU {g.index}: Gen{g.pcie_link_gen_current} of Gen{g.pcie_link_gen_max} while busy" for g in rows
            if not g.idle and None not in (g.pcie_link_gen_current, g.pcie_link_gen_max)
            and g.pcie_link_gen_current != g.pcie_link_gen_max]
    assert not bad, f"PCIe link below its maximum: {'; '.join(bad)}"


@check("node.gpu.clock_events", **gpu_health.GPU_CLOCK_EVENTS, needs=["node.smi.runs"])
def test_clock_events(node, expected):
    """No clock limiter among HW slowdown, HW thermal, HW power brake and SW thermal is Active
    (those the profile tolerates aside)."""
    bad = [f"GPU {g.index}: {', '.join(active)}" for g in node.gpu_clocks
           if (active := [e for e in g.active() if e not in expected.health.clock_events_allowed])]
    assert not bad, f"clock limiters engaged: {'; '.join(bad)}"


@check("node.gpu.memory_errors", **gpu_health.GPU_MEMORY_ERRORS, needs=["node.smi.runs"])
def test_memory_errors(node, expected):
    """Rows remapped for uncorrectable errors and SRAM ECC errors (aggregate) per GPU at most the
    profile's limits (Azure NHC's H100 thresholds by default); N/A on a GPU without them is not counted."""
    h = expected.health
    limits = (("remapped_rows_uncorrectable", "uncorrectable remapped rows", h.remapped_rows_uncorrectable_max),
              ("ecc_errors_uncorrected_aggregate_sram", "uncorrectable SRAM errors", h.sram_uncorrectable_max),
              ("ecc_errors_corrected_aggregate_sram", "correctable SRAM errors", h.sram_correctable_max))
    bad = [f"GPU {g.index}: {value} {what} (at most {limit})" for g in node.gpu_memory_errors
           for field, what, limit in limits
           if limit is not None and (value := getattr(g, field)) is not None and value.isdigit() and int(value) > limit]
    assert not bad, "; ".join(bad)


@check("node.gpu.nvlink", **gpu_health.GPU_NVLINK, needs=["node.smi.runs"])
def test_nvlink(node, expected):
    """Each GPU has the profile's number of NVLinks active, and no link's Recovery/Replay/CRC
    counter is above its limit."""
    h = expected.health
    if h.nvlinks_per_gpu is None:
        pytest.skip("the profile does not check NVLink (health.nvlinks_per_gpu unset)")
    links = node.nvlinks
    up = {g.index: sum(1 for link in links if link.gpu == g.index and link.speed) for g in node.gpus}
    bad = [f"GPU {gpu}: {n} of {h.nvlinks_per_gpu} links up" for gpu, n in up.items() if n < h.nvlinks_per_gpu]
    limits = {"Recovery": h.nvlink_recovery_errors_max, "Replay": h.nvlink_replay_errors_max, "CRC": h.nvlink_crc_errors_max}
    bad += [f"GPU {link.gpu} link {link.link}: {n} {name} errors (at most {limits[name]})" for link in links
            for name, n in link.errors if limits.get(name) is not None and n > limits[name]]
    assert not bad, "; ".join(bad)


@check("node.gpu.dcgm_diag", **gpu_health.GPU_DCGM_DIAG, needs=["node.smi.runs"])
def test_dcgm_diag(node, expected):
    """With health.dcgm_diag set: dcgmi is installed and no test of `dcgmi diag -r <level>` Fails."""
    level = expected.health.dcgm_diag
    if level == "off":
        pytest.skip("the profile does not ask for DCGM diagnostics (health.dcgm_diag: off)")
    results = node.dcgm_diag
    assert results is not None, f"dcgmi is not installed, but the profile asks for DCGM diagnostics (health.dcgm_diag: {level})"
    failed = [f"{r.test}{'' if r.gpu is None else f' GPU {r.gpu}'}: {r.info or r.status}" for r in results
              if r.status.lower() == "fail"]
    assert not failed, f"dcgmi diag -r {level}: {len(failed)} failed: {'; '.join(failed)}"
    assert results, f"dcgmi diag -r {level} reported no test"
