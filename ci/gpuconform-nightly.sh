#!/bin/sh
# gpuconform-nightly: the nightly conformance run, one path for the in-cluster Job (the image's
# entrypoint), GitLab CI and GitHub Actions (their templates call it).
#
# Runs the suite (the three layers by default) once: <profile>-<UTC>.html, .json and
# junit-<profile>-<UTC>.xml in GPUCONFORM_REPORT_DIR; compares with the last accepted run when a
# baseline is given; keeps this run's JSON as the next baseline only when the run is ACCEPTED
# (exit 0); exits with the suite's exit code (0 ACCEPTED, 1 REJECTED, 2 interrupted, 4 bad input).
#
# Environment (nothing here is printed but paths and the markers):
#   GPUCONFORM_PROFILE       the profile (required)
#   GPUCONFORM_REPORT_DIR    where the reports go (default: reports)
#   GPUCONFORM_MARKERS       pytest -m expression (default: node or cluster or kubeflow)
#   GPUCONFORM_HOSTS         --hosts for the node checks (default: the profile's hosts:)
#   GPUCONFORM_KUBECONFIG    kubeconfig (default: $KUBECONFIG, else the in-cluster ServiceAccount,
#                            else ~/.kube/config: gpuconform/cluster/connect.py)
#   GPUCONFORM_BASELINE      the last accepted run's JSON (default: <report dir>/baseline-<profile
#                            name>.json: one baseline per profile, keyed by its `name:`);
#                            missing or empty: no baseline (the first run)
#   GPUCONFORM_BASELINE_OUT  where an accepted run's JSON is kept (default: the same file)
#   GPUCONFORM_ARGS          more pytest arguments (split on blanks)
#   GPUCONFORM_PYTHON        the Python that has gpuconform installed (`gpuconform nightly`, which
#                            runs this script as shipped in the package, sets its own; else python3);
#                            one without gpuconform is refused, never run
#
# The checks are those shipped in the package (`gpuconform run`): no source tree is needed.
set -u

die() { echo "gpuconform-nightly: $*" >&2; exit 4; }
absolute() { case $1 in /*|'') printf '%s' "$1" ;; *) printf '%s/%s' "$PWD" "$1" ;; esac; }

python=${GPUCONFORM_PYTHON:-python3}
reports=${GPUCONFORM_REPORT_DIR:-reports}
markers=${GPUCONFORM_MARKERS:-node or cluster or kubeflow}
[ -n "${GPUCONFORM_PROFILE:-}" ] || die "GPUCONFORM_PROFILE is not set: the profile to judge the platform against"
[ -r "$GPUCONFORM_PROFILE" ] || die "GPUCONFORM_PROFILE=$GPUCONFORM_PROFILE is not a readable file"
profile=$(absolute "$GPUCONFORM_PROFILE")

"$python" -c 'import gpuconform.plugin.plugin' 2>/dev/null \
  || die "GPUCONFORM_PYTHON=$python has no gpuconform installed: run \`gpuconform nightly\` of the environment it is installed in, or set GPUCONFORM_PYTHON to that environment's python"

# The node layer without hosts would judge the machine the run is on (testinfra's local://): in a
# pod or on a CI runner that is never what is meant.
if [ -z "${GPUCONFORM_HOSTS:-}" ] && ! "$python" - "$profile" "$markers" <<'EOF_PY'
import sys
try:
    from _pytest.mark.expression import Expression
    from gpuconform.profile import load
    import itertools
    expr, extra = Expression.compile(sys.argv[2]), ("mig", "security", "disruptive")
    node = any(expr.evaluate(lambda name, **kw: name in {"node", *more})  # a node check with any other markers
               for n in range(len(extra) + 1) for more in itertools.combinations(extra, n))
    sys.exit(1 if node and not load(sys.argv[1]).profile.hosts else 0)
except Exception:  # noqa: BLE001 - a bad profile, -m expression or install: the suite says which
    sys.exit(0)
EOF_PY
then
  die "GPUCONFORM_MARKERS selects the node layer but no hosts are given: set GPUCONFORM_HOSTS (e.g. k8s-node:// hosts) or hosts: in the profile, or leave node out of GPUCONFORM_MARKERS"
fi
mkdir -p "$reports" || die "GPUCONFORM_REPORT_DIR=$reports cannot be created"
reports=$(cd "$reports" && pwd)
# One baseline per profile (its name: field; the file name when it cannot be read, the suite then
# says why): two profiles sharing a report folder never compare with each other's runs.
key=$("$python" -c 'import sys; from gpuconform.profile import load; print(load(sys.argv[1]).name)' \
  "$profile" 2>/dev/null) || key=
[ -n "$key" ] || { key=$(basename "$profile"); key=${key%.*}; }
key=$(printf '%s' "$key" | tr -c 'A-Za-z0-9._-' '_')
baseline=$(absolute "${GPUCONFORM_BASELINE:-$reports/baseline-$key.json}")
baseline_out=$(absolute "${GPUCONFORM_BASELINE_OUT:-$reports/baseline-$key.json}")
name=$(basename "$profile"); name=${name%.*}-$(date -u +%Y%m%dT%H%M%SZ)
json="$reports/$name.json"
junit="$reports/junit-$name.xml"

set -- -m "$markers" "--profile=$profile" "--report-dir=$reports" "--report-name=$name" \
  "--junitxml=$junit"
kubeconfig=$(absolute "${GPUCONFORM_KUBECONFIG:-}")
[ -n "$kubeconfig" ] && set -- "$@" "--kubeconfig=$kubeconfig"
[ -n "${GPUCONFORM_HOSTS:-}" ] && set -- "$@" "--hosts=$GPUCONFORM_HOSTS"
if [ -s "$baseline" ]; then
  set -- "$@" "--baseline=$baseline"
  echo "gpuconform-nightly: baseline (last accepted run): $baseline"
else
  echo "gpuconform-nightly: no baseline at $baseline (first run, or no accepted run yet)"
fi
# shellcheck disable=SC2086 # GPUCONFORM_ARGS is a list of words by design
set -- "$@" ${GPUCONFORM_ARGS:-}

if [ -z "$kubeconfig" ] && [ -z "${KUBECONFIG:-}" ] && [ -n "${KUBERNETES_SERVICE_HOST:-}" ]; then
  echo "gpuconform-nightly: cluster access: in-cluster ServiceAccount (https://$KUBERNETES_SERVICE_HOST:${KUBERNETES_SERVICE_PORT:-443})"
fi
echo "gpuconform-nightly: gpuconform run $*"
# In a pod this script is PID 1, which gets the SIGTERM of activeDeadlineSeconds or a deleted
# Job: it is passed on (as SIGTERM: a background child of sh ignores SIGINT), and the suite
# cleans up and writes the report of what finished (exit 2).
"$python" -m gpuconform run "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
wait "$child"; code=$?
while [ "$code" -gt 128 ] && kill -0 "$child" 2>/dev/null; do wait "$child"; code=$?; done
trap - TERM INT

[ -f "$json" ] || json=
[ -f "$junit" ] || junit=
case $code in
  0) verdict=ACCEPTED ;;
  1) verdict=REJECTED ;;
  2) verdict="REJECTED (interrupted)" ;;
  *) verdict="not judged (exit $code)" ;;
esac
# the run's most common cause in CI, said in one line: a runner that does not reach the API server
[ -n "$json" ] && "$python" - "$json" >&2 <<'EOF_PY'
import json, sys
for r in json.load(open(sys.argv[1], encoding="utf-8"))["results"]:
    if r["check_id"] == "cluster.api.reachable" and r["verdict"] != "pass":
        print(f"gpuconform-nightly: cluster.api.reachable {r['verdict']}: {(r['message'] or '').splitlines()[0][:400]}")
EOF_PY
echo "gpuconform-nightly: $verdict; JSON: ${json:-none}; JUnit: ${junit:-none}"
if [ "$code" -eq 0 ] && [ -n "$json" ]; then  # ACCEPTED: the next run's baseline
  mkdir -p "$(dirname "$baseline_out")" && cp "$json" "$baseline_out.tmp" && mv "$baseline_out.tmp" "$baseline_out" \
    && echo "gpuconform-nightly: kept as the next baseline: $baseline_out" \
    || echo "gpuconform-nightly: could not keep $json as $baseline_out" >&2
fi
exit "$code"
