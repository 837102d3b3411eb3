"""The suite's folder, and ``gpuconform run``: pytest over the checks that ship in the package.

The suite's folder holds the checks (``tests/``), the example profiles (``profiles/``) and pytest's
settings (pyproject.toml): in a checkout, the checkout; in a wheel install, the package's own
folder, which setup.py lays out the same way. ``gpuconform run ARGS`` is ``pytest
<suite>/tests ARGS``: pytest finds the suite's settings beside the checks, the plugin knows the suite
by its folder."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import gpuconform

EXIT_BAD_INPUT = 4
PLUGIN = "gpuconform.plugin.plugin"
ALREADY_IMPORTED = "Module already imported so cannot be rewritten; gpuconform"


def is_suite(folder: Path) -> bool:
    """A suite's folder: its checks under tests/."""
    return (folder / "tests" / "node" / "test_reachable.py").is_file() and (folder / "tests" / "cluster").is_dir()


def folder() -> Path | None:
    """The suite of this installation of gpuconform: the package's folder (a wheel), or the
    checkout around it (an editable install); None when neither holds the checks."""
    package = Path(gpuconform.__file__).resolve().parent
    return next((f for f in (package, package.parent) if is_suite(f)), None)


class _OneLineUsage:
    """pytest's own option errors (an unknown option, a missing value) in one line, as the suite's
    other bad input: pytest prints its usage line and its settings' paths around them."""

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_parse(self, pluginmanager, args):
        try:
            return (yield)
        except pytest.UsageError as exc:
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            said = next((line for line in lines if ": error: " in line), lines[-1] if lines else "bad arguments")
            raise pytest.UsageError(f"gpuconform run: {said.split(': error: ', 1)[-1]}") from None


def run(args: list[str]) -> int:
    """``pytest ARGS`` over the checks of this installation; exit codes as the suite's."""
    suite = folder()
    if suite is None:
        print(f"ERROR: gpuconform run: no checks in this installation of gpuconform "
              f"({Path(gpuconform.__file__).parent}): install it from its wheel, or run pytest in a checkout",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    # gpuconform is imported already (this command): pytest cannot rewrite its asserts, nor needs to
    # (the checks are in tests/); the checks first: a last option missing its value must not take them
    return int(pytest.main(["-W", f"ignore:{ALREADY_IMPORTED}:pytest.PytestAssertRewriteWarning", "-p", PLUGIN,
                            str(suite / "tests"), *args], plugins=[_OneLineUsage()]))
