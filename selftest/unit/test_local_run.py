"""`pytest -m node --hosts=local://` on a machine without GPUs: clear verdicts, no traceback,
HTML and JSON reports written."""
import pytest


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    from runner import run_suite
    return run_suite("-m", "node", "--hosts=local://", report_dir=tmp_path_factory.mktemp("reports"))


def test_ends_with_failures_and_no_traceback(local_run):
    proc, results = local_run
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]


def test_reports_are_written(local_run, tmp_path_factory):
    proc, results = local_run
    html = [line for line in proc.stdout.splitlines() if "Generated html report" in line]
    assert html and results is not None and results["fingerprint"]["profile"] == "seed-h100"


def test_no_gpu_machine_verdicts(local_run):
    _, results = local_run
    by_id = {(r["check_id"], r["param"]): r for r in results["results"]}
    assert by_id[("node.reachable", None)]["verdict"] == "pass"
    assert by_id[("node.smi.runs", None)]["verdict"] in ("fail", "blocked")
    assert by_id[("node.gpu.count", None)]["verdict"] == "blocked"
    assert by_id[("node.gpu.count", None)]["message"].startswith("blocked by node.")
    assert all(r["verdict"] in ("pass", "fail", "error", "skip", "blocked") for r in results["results"])
    assert by_id[("node.driver.modules_loaded", None)]["verdict"] in ("fail", "error")
