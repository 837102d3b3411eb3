"""``python -m gpuconform profile --explain [PROFILE]``: the profile's reference from its models."""
import subprocess
import sys

from gpuconform import profile
from gpuconform.profile import reference
from runner import REPO


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpuconform", *args], capture_output=True, text=True,
                          timeout=60, cwd=REPO)


def test_explain_shows_every_field_with_its_default_and_description():
    proc = _cli("profile", "--explain")
    assert proc.returncode == 0, proc.stderr
    assert "runtime_binary  (string; default \"/usr/bin/nvidia-container-runtime\")" in proc.stdout
    assert "/usr/local/nvidia/toolkit/nvidia-container-runtime" in proc.stdout  # the description names it
    for row in reference.rows(profile.Profile):
        assert row.path.rsplit(".", 1)[-1] in proc.stdout and row.description in proc.stdout, row.path


def test_explain_a_profile_shows_what_it_sets():
    proc = _cli("profile", "--explain", "profiles/seed-h100.yaml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# profiles/seed-h100.yaml: profile seed-h100 (valid)")
    assert 'this profile: "rhel"' in proc.stdout and 'this profile: "580.95.05"' in proc.stdout


def test_explain_a_bad_profile_is_one_line_and_exit_4(tmp_path):
    bad = tmp_path / "p.yaml"
    bad.write_text("name: t\nnode:\n  driver: {version: latest}\n  gpu: {product: X, count: 1}\n")
    proc = _cli("profile", "--explain", str(bad))
    assert proc.returncode == 4 and proc.stdout == ""
    assert proc.stderr == f"ERROR: {bad}: node.driver.version: Value error, a driver version like 580.95.05, got 'latest'\n"


def test_a_bad_command_line_is_one_line_and_exit_4():
    proc = _cli("profile")
    assert proc.returncode == 4 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_reference_document_is_current():
    """docs/profile-reference.md is what the models say (regenerate: python -m gpuconform profile --markdown)."""
    assert (REPO / "docs" / "profile-reference.md").read_text() == reference.markdown(profile.Profile), (
        "docs/profile-reference.md is stale: python -m gpuconform profile --markdown > docs/profile-reference.md")


def test_explain_an_alias_bomb_is_one_line_and_exit_4(tmp_path):
    """Issue 28: aliases that expand to 2**30 strings, in a profile otherwise valid: refused by
    the one YAML loader in well under a second, not expanded by validation or printing."""
    bomb = tmp_path / "p.yaml"
    levels = "".join(f"x{i}: &x{i} [*x{i - 1}, *x{i - 1}]\n" for i in range(1, 30))
    bomb.write_text("name: t\nnode:\n  driver: {version: 580.95.05}\n  gpu: {product: X, count: 1}\n"
                    f"description: ok\nbomb:\n  x0: &x0 [a, b]\n" + "".join("  " + line for line in levels.splitlines(True)))
    proc = _cli("profile", "--explain", str(bomb))
    assert proc.returncode == 4 and proc.stdout == "", proc.stderr
    assert proc.stderr.startswith(f"ERROR: {bomb}: not valid YAML at line ") and \
        "aliases expand to more than 200000 nodes" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
