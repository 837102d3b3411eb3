"""The packages of the wheel (the rest is in pyproject.toml).

manifests/, profiles/, remediation/, the checks (tests/) and the nightly's scripts (ci/) stay at the
top of the repository, where a reader looks for them, and ship inside the package as
``gpuconform.manifests``, ``gpuconform.profiles``, ``gpuconform.remediation``, ``gpuconform.tests``
and ``gpuconform.ci`` (read through
importlib.resources, gpuconform/resources.py): one copy of each, in the wheel and in an editable
install alike. pyproject.toml cannot add mapped folders to the packages it finds, hence this file.

In the wheel the package's folder is the suite's folder, laid out as a checkout is: the checks
in ``tests/``, the example profiles in ``profiles/``, and pyproject.toml beside them, copied
from the checkout at build time, so that pytest run over the shipped checks (``gpuconform run``)
reads the same settings ([tool.pytest.ini_options]) as in a checkout.
"""
from pathlib import Path

from setuptools import find_namespace_packages, find_packages, setup
from setuptools.command.build_py import build_py

DATA_PACKAGES = {"gpuconform.manifests": "manifests", "gpuconform.profiles": "profiles",
                 "gpuconform.remediation": "remediation", "gpuconform.tests": "tests", "gpuconform.ci": "ci"}
#: the checks' layer folders (no __init__.py: pytest imports them as in a checkout)
CHECK_FOLDERS = [f"gpuconform.tests.{name}" for name in find_namespace_packages("tests", exclude=["*__pycache__*"])]


class BuildWithPytestSettings(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # the package's suite folder is then the checkout, pyproject.toml in it
            return
        self.copy_file("pyproject.toml", str(Path(self.build_lib, "gpuconform", "pyproject.toml")))


setup(packages=find_packages(include=["gpuconform", "gpuconform.*"]) + list(DATA_PACKAGES) + CHECK_FOLDERS,
      package_dir=DATA_PACKAGES, cmdclass={"build_py": BuildWithPytestSettings})
