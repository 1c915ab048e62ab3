#!/usr/bin/env bash
# Fuzz every target listed in fuzz/Cargo.toml for SECONDS each (default 60): `make fuzz`.
#
# Uses cargo-fuzz (installed from crates.io when missing) with a nightly toolchain when one is
# installed, else with the stable one and RUSTC_BOOTSTRAP=1. If cargo-fuzz cannot build here,
# falls back to the time-boxed property tests of the crate (`cargo test -- --ignored fuzz_`),
# which check the same properties on random inputs: each target's twin there is an #[ignore]d
# test named `fuzz_<target>_time_boxed` that runs for STREAMFOLD_FUZZ_SECONDS.
set -euo pipefail
seconds="${1:-60}"
cd "$(dirname "$0")"

# Every [[bin]] of Cargo.toml is a target.
mapfile -t targets < <(awk '/^\[\[bin\]\]/ { bin = 1; next }
    bin && /^name *=/ { gsub(/^name *= *"|".*$/, ""); print; bin = 0 }' Cargo.toml)
if [ "${#targets[@]}" -eq 0 ]; then
    echo "fuzz/run.sh: no [[bin]] targets in fuzz/Cargo.toml" >&2
    exit 1
fi

fallback() {
    echo "fuzz/run.sh: cargo-fuzz is not usable here ($1); running the time-boxed property tests" >&2
    cd ..
    STREAMFOLD_FUZZ_SECONDS="$seconds" cargo test --release --lib -- --ignored fuzz_ --test-threads 1
    exit 0
}

if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked || fallback "cargo install cargo-fuzz failed"
fi
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    fuzz=(cargo +nightly fuzz)
else
    export RUSTC_BOOTSTRAP=1
    fuzz=(cargo fuzz)
fi

for target in "${targets[@]}"; do
    "${fuzz[@]}" build "$target" || fallback "building $target failed"
done
for target in "${targets[@]}"; do
    echo "== fuzzing $target for ${seconds}s"
    mkdir -p "corpus/$target"
    "${fuzz[@]}" run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1
done
