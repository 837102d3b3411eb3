"""GPU health: ECC on, no retired pages pending, no row-remap failure."""
from gpuconform.checks import check

RMA = "drain the node, run `nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER`, reset the GPU; if it persists, RMA"


@check("node.gpu.ecc_enabled", "ECC is enabled on every GPU",
       fix="nvidia-smi -i <gpu> -e 1, then reset the GPU or reboot",
       needs=["node.smi.runs"], evidence=["smi_gpus"])
def test_ecc_enabled(node, expected):
    """ecc.mode.current is Enabled on every GPU (when the profile requires ECC)."""
    if expected.gpu.ecc != "enabled":
        return
    off = [f"GPU {g.index}: {g.ecc_mode_current or 'not supported'}" for g in node.gpus
           if g.ecc_mode_current != "Enabled"]
    assert not off, f"ECC is not enabled: {'; '.join(off)}"


@check("node.gpu.retired_pages", "No retired memory pages are pending", fix=RMA,
       needs=["node.smi.runs"], evidence=["smi_health"])
def test_no_retired_pages_pending(node):
    """retired_pages.pending is not Yes on any GPU (N/A on GPUs that remap rows instead)."""
    bad = [str(g.index) for g in node.gpu_health if (g.retired_pages_pending or "").lower() == "yes"]
    assert not bad, f"retired pages pending a reset on GPU {', '.join(bad)}"


@check("node.gpu.row_remap", "No row-remap failure or pending row remap", fix=RMA,
       needs=["node.smi.runs"], evidence=["smi_health"])
def test_no_row_remap_failure(node):
    """remapped_rows.failure and remapped_rows.pending are not Yes on any GPU."""
    bad = [f"GPU {g.index}: " + ", ".join(name for name, value in (("failure", g.remapped_rows_failure),
                                                                   ("pending", g.remapped_rows_pending))
                                        if (value or "").lower() == "yes")
           for g in node.gpu_health
           if "yes" in ((g.remapped_rows_failure or "").lower(), (g.remapped_rows_pending or "").lower())]
    assert not bad, f"row remapping problem: {'; '.join(bad)}"
