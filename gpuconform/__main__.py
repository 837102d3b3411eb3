"""``python -m gpuconform`` (also the ``gpuconform`` command): the suite and tools around it.

    gpuconform run [PYTEST ARGS]             the checks shipped in the package, under pytest
                                             (``gpuconform run -m node --hosts=… --profile=…``)
    gpuconform nightly                       the nightly run (ci/gpuconform-nightly.sh; its environment)
    gpuconform fetch-baseline gitlab|github OUT.json   the last accepted nightly's JSON (ci/fetch-baseline.py)
    gpuconform profile --explain [PROFILE]   every profile field: type, default, description
                                             (and what PROFILE sets, after validating it)
    gpuconform profile --markdown            the same as docs/profile-reference.md

In a checkout the checks run under pytest as well (``pytest -m node --profile=...``). Bad input is
one line on stderr and exit code 4, as for the suite.
"""
from __future__ import annotations

import argparse
import sys

from gpuconform import profile as profile_mod
from gpuconform import nightly, suite
from gpuconform.profile import reference

EXIT_BAD_INPUT = 4


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 4, as the suite's bad input
        print(f"ERROR: {self.prog}: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    passed_on = {"run": suite.run, "nightly": nightly.nightly, "fetch-baseline": nightly.fetch_baseline}
    if argv[:1] and argv[0] in passed_on:  # their arguments are theirs (argparse would read -m, -k … itself)
        return passed_on[argv[0]](argv[1:])
    parser = _Parser(prog="gpuconform", description="The gpuconform suite and tools around it.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    commands.add_parser("run", help="the checks shipped in the package, under pytest: every argument is pytest's "
                        "(-m node --hosts=… --profile=…; `gpuconform run --help` lists them); reports in ./reports")
    commands.add_parser("nightly", help="the nightly run: ci/gpuconform-nightly.sh with this environment's python "
                        "(configured by GPUCONFORM_* variables, ci/README.md)")
    commands.add_parser("fetch-baseline", help="gitlab|github OUT.json: the last accepted nightly's JSON from the "
                        "CI's artifacts (ci/fetch-baseline.py)")
    prof = commands.add_parser("profile", help="the platform profile: its fields, or one profile explained")
    what = prof.add_mutually_exclusive_group(required=True)
    what.add_argument("--explain", action="store_true", help="every field with its type, default and description")
    what.add_argument("--markdown", action="store_true", help="the reference as Markdown (docs/profile-reference.md)")
    prof.add_argument("path", nargs="?", metavar="PROFILE", help="a profile to validate and show beside the defaults")
    args = parser.parse_args(argv)

    loaded = None
    if args.path is not None:
        try:
            loaded = profile_mod.load(args.path)
        except profile_mod.ProfileError as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if args.markdown:
        sys.stdout.write(reference.markdown(profile_mod.Profile))
    else:
        if loaded is not None:
            print(f"# {loaded.path}: profile {loaded.name} (valid)\n")
        sys.stdout.write(reference.explain(profile_mod.Profile, loaded.profile if loaded else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
