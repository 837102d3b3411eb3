"""MIG layout pictures: each GPU as its 7 compute slices with the MIG instances placed on them.

``nvidia-smi -L`` names the MIG devices of a GPU but not where they sit, so the placement is
reconstructed the way NVIDIA's placement tables allow (``nvidia-smi mig -lgipp``): largest
instances first, each at the lowest allowed start that is free. When the GPU model is in the
MIG catalog its own placements are used; otherwise the A100/H100 table below.
"""
from __future__ import annotations

from html import escape

from gpuconform.mig import catalog

COMPUTE_SLICES = 7
MEMORY_SLICES = 8
#: compute slices → (allowed starts in memory slices, memory slices used), GA100/GH100 layout.
_GENERIC = {1: ((0, 1, 2, 3, 4, 5, 6), 1), 2: ((0, 2, 4), 2), 3: ((0, 4), 4), 4: ((0,), 4), 7: ((0,), 8)}
_COLORS = {1: "#8ecae6", 2: "#90be6d", 3: "#f9c74f", 4: "#f8961e", 7: "#b5838d"}


def compute_slices(profile: str) -> int:
    """``3g.40gb`` → 3; anything unreadable → 1."""
    try:
        return max(1, min(COMPUTE_SLICES, int(profile.split("g.", 1)[0])))
    except ValueError:
        return 1


def _shape(profile: str, model) -> tuple[tuple[int, ...], int]:
    if model is not None:
        try:
            p = model.profile(profile)
            if p.placements and p.placement_size:  # a model whose start positions are published
                return p.placements, p.placement_size
        except KeyError:
            pass
    g = compute_slices(profile)
    return _GENERIC.get(g, ((0,), MEMORY_SLICES))


def model_for(gpu_name: str):
    """The catalog model whose nvidia-smi name is ``gpu_name``, else None."""
    return next((m for m in catalog.GPU_MODELS.values() if m.smi_name == gpu_name), None)


def smi_name(product: str | None) -> str | None:
    """The nvidia-smi name of a ``nvidia.com/gpu.product`` label's model (None when unknown)."""
    try:
        return catalog.gpu_model(product).smi_name if product else None
    except KeyError:
        return None


def place(profiles: list[str], gpu_name: str = "") -> tuple[list[tuple[str, int, int]], list[str]]:
    """([(profile, start slice, compute slices)], profiles that found no room).

    Largest first, each at the lowest allowed free start, backtracking when a later instance
    finds no room (``all-balanced`` needs the 3g instance moved to the upper half)."""
    model = model_for(gpu_name)
    order = sorted(profiles, key=lambda p: -_shape(p, model)[1])
    shapes = [_shape(p, model) for p in order]

    def search(i: int, used: frozenset[int]) -> list[int] | None:
        if i == len(order):
            return []
        starts, size = shapes[i]
        for start in starts:
            slots = frozenset(range(start, start + size))
            if max(slots) < MEMORY_SLICES and not slots & used:
                rest = search(i + 1, used | slots)
                if rest is not None:
                    return [start, *rest]
        return None

    found = search(0, frozenset())
    if found is not None:
        return sorted(((p, s, compute_slices(p)) for p, s in zip(order, found)), key=lambda x: x[1]), []
    used: set[int] = set()  # does not fit as a whole: place what fits, name the rest
    placed, unplaced = [], []
    for prof, (starts, size) in zip(order, shapes):
        start = next((s for s in starts if s + size <= MEMORY_SLICES and not set(range(s, s + size)) & used), None)
        if start is None:
            unplaced.append(prof)
        else:
            used |= set(range(start, start + size))
            placed.append((prof, start, compute_slices(prof)))
    return sorted(placed, key=lambda x: x[1]), unplaced


def gpu_svg(index: int, gpu_name: str, profiles: list[str]) -> str:
    """One GPU: a row of 7 compute slices, instances drawn over them."""
    cell, height, left = 54, 34, 56
    width = left + COMPUTE_SLICES * cell + 4
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="mig-gpu" width="{width}" height="{height + 4}" '
             f'role="img" aria-label="GPU {index} MIG layout">',
             f'<text x="2" y="{height // 2 + 6}" font-size="12" font-family="sans-serif">GPU {index}</text>']
    for s in range(COMPUTE_SLICES):
        parts.append(f'<rect x="{left + s * cell}" y="2" width="{cell - 2}" height="{height - 2}" '
                     f'fill="#f1f1f1" stroke="#bbb"/>')
    placed, unplaced = place(profiles, gpu_name)
    for prof, start, g in placed:
        g = min(g, COMPUTE_SLICES - start)
        x, w = left + start * cell, g * cell - 2
        parts.append(f'<g class="mig-instance" data-profile="{escape(prof)}"><rect x="{x}" y="2" width="{w}" '
                     f'height="{height - 2}" rx="4" fill="{_COLORS.get(compute_slices(prof), "#ccc")}" '
                     f'stroke="#333"/><title>{escape(prof)} at slice {start}</title>'
                     f'<text x="{x + w / 2:.0f}" y="{height // 2 + 6}" font-size="11" text-anchor="middle" '
                     f'font-family="sans-serif">{escape(prof)}</text></g>')
    parts.append("</svg>")
    extra = (f'<span class="mig-unplaced">does not fit: {escape(", ".join(unplaced))}</span>'
             if unplaced else "")
    return "".join(parts) + extra


def host_svgs(summary: dict, kind: str = "mig-host") -> str:
    """The MIG picture of a host (or of Kubernetes nodes: ``kind="mig-node"``), or '' when no GPU
    of it has MIG enabled."""
    gpus = [g for g in summary.get("gpus") or [] if g.get("mig_mode") == "Enabled" or g.get("mig_devices")]
    if not gpus:
        return ""
    rows = "".join(f'<div class="mig-row">{gpu_svg(g["index"], g["name"], g["mig_devices"])}</div>'
                   for g in gpus)
    return (f'<div class="{kind}"><h4>{escape(summary["host"])} <small>{escape(summary.get("gpu_model") or "")}'
            f'</small></h4>{rows}</div>')
