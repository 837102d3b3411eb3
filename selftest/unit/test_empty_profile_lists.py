"""A check parametrized over a profile list that is empty gives one result saying which field is
empty, never pytest's "got empty parameter set" (issue #25), in every layer (gpuconform/plugin/params.py)."""
import yaml

from gpuconform.resources import example_profile_path


def test_an_empty_profile_list_is_one_skip_naming_the_field(tmp_path):
    from runner import run_suite
    seed = yaml.safe_load(example_profile_path("seed-h100.yaml").read_text())
    seed["node"]["sysctl"] = {}
    seed["node"]["kernel"].update(cmdline_required=[], cmdline_forbidden=[])
    seed["kubeflow"].update(url=None, components={}, web_apps=[])
    profile = tmp_path / "empty-lists.yaml"
    profile.write_text(yaml.safe_dump(seed))
    proc, doc = run_suite("-m", "node or kubeflow", "--hosts=local://", f"--profile={profile}",
                          report_dir=tmp_path / "reports")
    assert doc is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not [r for r in doc["results"] if "empty parameter set" in (r["message"] or "")]
    none = {r["check_id"]: (r["verdict"], r["message"]) for r in doc["results"] if r["param"] == "<none>"}
    for check, field in (("node.sysctl", "sysctl"), ("node.kernel.cmdline_required", "kernel.cmdline_required"),
                         ("node.kernel.cmdline_forbidden", "kernel.cmdline_forbidden"),
                         ("kubeflow.components.available", "kubeflow.components"),
                         ("kubeflow.webapp.answers", "kubeflow.web_apps")):
        assert none.get(check) == ("skip", f"the profile lists nothing to check here ({field} is empty)"), (check, none)
