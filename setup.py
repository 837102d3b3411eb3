"""The packages of the wheel (the rest is in pyproject.toml).

manifests/, profiles/ and remediation/ stay at the top of the repository, where a reader looks for them, and
ship inside the package as ``gpuconform.manifests``, ``gpuconform.profiles`` and
``gpuconform.remediation`` (read through
importlib.resources, gpuconform/resources.py): one copy of each, in the wheel and in an editable
install alike. pyproject.toml cannot add mapped folders to the packages it finds, hence this file.
"""
from setuptools import find_packages, setup

DATA_PACKAGES = {"gpuconform.manifests": "manifests", "gpuconform.profiles": "profiles",
                 "gpuconform.remediation": "remediation"}

setup(packages=find_packages(include=["gpuconform", "gpuconform.*"]) + list(DATA_PACKAGES),
      package_dir=DATA_PACKAGES)
