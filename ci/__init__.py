"""The nightly's script and the baseline fetcher, shipped as the package data ``gpuconform.ci``
(setup.py): ``gpuconform nightly`` and ``gpuconform fetch-baseline`` run them (gpuconform/nightly.py)."""
