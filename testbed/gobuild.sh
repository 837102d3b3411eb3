# Sourced by the test beds' build.sh: builds Go programs from the Go module proxy into
# ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<key>/ once, and reuses them after.
#   gobuild_begin LABEL KEY BIN...   exits 0 when every BIN (a program, or a file or folder kept
#                                    beside them) is cached (or prints the folder with
#                                    --print-dir in "$@" of the caller: pass it as GOBUILD_ARG)
#   gobuild_step WHAT DIR ARGS...    `go build` ARGS inside tools module DIR, into "$tmp"
#   gobuild_end                      moves the new binaries into the cache
#   k8s_version_ldflags VERSION      the -X flags that make a k8s.io/kubernetes binary report VERSION
set -euo pipefail

export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=${CGO_ENABLED:-0}

gobuild_begin() {
    label=$1 key=$2; shift 2
    bins=("$@")
    bindir="${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/$key"
    if [[ "${GOBUILD_ARG:-}" == "--print-dir" ]]; then
        echo "$bindir"
        exit 0
    fi
    local b missing=0
    for b in "${bins[@]}"; do [[ -e "$bindir/$b" ]] || missing=1; done
    if [[ $missing == 0 ]]; then
        echo "$label: reusing $bindir"
        exit 0
    fi
    command -v go >/dev/null || { echo "$label: go not found (looked in PATH and /usr/local/go/bin)" >&2; exit 1; }
    mkdir -p "$bindir"
    tmp="$(mktemp -d "$bindir/.build.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    gobuild_start=$SECONDS
}

gobuild_step() {
    local what=$1 dir=$2 t0=$SECONDS; shift 2
    echo "$label: building $what"
    (cd "$dir" && nice go build -trimpath "$@")
    echo "$label: $what built in $((SECONDS - t0))s"
}

gobuild_end() {
    local b
    for b in "${bins[@]}"; do mv -f "$tmp/$b" "$bindir/$b"; done
    echo "$label: built ${bins[*]} in $((SECONDS - gobuild_start))s -> $bindir"
}

# /version and --version must report the built release, not v0.0.0: the variables upstream's
# hack/lib/version.sh sets (kube::version::ldflags), for both packages that hold them.
k8s_version_ldflags() {
    local version=$1 minor pkg flags=()
    minor="${version#v1.}"; minor="${minor%%.*}"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=(-X "$pkg.gitVersion=$version" -X "$pkg.gitMajor=1" -X "$pkg.gitMinor=$minor"
                -X "$pkg.gitTreeState=clean" -X "$pkg.buildDate=1970-01-01T00:00:00Z")
    done
    echo "${flags[*]}"
}
