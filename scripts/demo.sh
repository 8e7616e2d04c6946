#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, and runs proctor's main job on an
# embedded default (no downloads).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh >/dev/null
build_dir=${PROCTOR_BUILD_DIR:-build}
exec "$build_dir/proctor" demo "$@"
