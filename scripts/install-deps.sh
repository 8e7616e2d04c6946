#!/usr/bin/env bash
# Installs the Debian packages proctor builds and tests with. Idempotent: installs only what is
# missing, and needs root (or sudo) only when something is missing.
#   --demo   only what building the proctor executable needs (scripts/demo.sh): no test,
#            benchmark, clang or Python packages
set -euo pipefail

# What the proctor executable builds and runs with.
packages=(
  build-essential cmake ninja-build pkg-config ccache
  libhwy-dev nlohmann-json3-dev libfmt-dev libcli11-dev libssl-dev
  libpcre2-dev libutf8proc-dev libcpp-httplib-dev libsqlite3-dev bubblewrap
)
if [[ "${1:-}" != --demo ]]; then
  # Tests, benchmarks, the clang fuzz build, format and tidy checks, the oracles' Python, gnuplot
  # (which `proctor report` runs; its error says to install it) and the browser the report page
  # is tested in.
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    clang libclang-rt-14-dev clang-format clang-tidy
    python3 python3-numpy python3-jinja2 python3-venv xz-utils
    gnuplot-nox chromium
    # The language profiles `proctor eval ifeval` detects languages with (langdetect's own data).
    python3-langdetect
    # The one-node Slurm cluster the `proctor slurm` test submits to (tools/slurm/local_cluster.sh;
    # the packages' own services are not used).
    slurmctld slurmd slurm-client munge
  )
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
# A mirror that does not answer fails in seconds, not after minutes of retries.
apt_options=(-o Acquire::Retries=1 -o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20)
if ! "${sudo_cmd[@]}" apt-get "${apt_options[@]}" update -qq; then
  echo "install-deps: apt-get update failed (the Debian mirror did not answer?)" >&2
  exit 1
fi
if ! "${sudo_cmd[@]}" apt-get "${apt_options[@]}" install -y -qq --no-install-recommends \
    "${missing[@]}"; then
  echo "install-deps: apt-get could not install ${missing[*]}" >&2
  exit 1
fi
