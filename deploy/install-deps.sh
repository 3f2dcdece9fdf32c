#!/usr/bin/env bash
# Installs the Debian packages ktune needs to build, test and run, only those missing (fast when all are
# there). Debian 12; run as root, or as a user with sudo.
set -euo pipefail

packages=(
  cmake make gcc pkg-config gzip python3 python3-jsonschema clang-format git
  libmicrohttpd-dev libjansson-dev libpq-dev zlib1g-dev libcmocka-dev libopenblas-dev
  libxgboost-dev libcurl4-openssl-dev
  postgresql
  chromium
  python3-yaml
  wrk nginx-light
  iproute2 util-linux
  clang libclang-rt-14-dev
  dataset-fashion-mnist
  python3-pyopencl pocl-opencl-icd
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian postgresql package starts a system cluster; ktune runs its own private one and needs none.
if command -v pg_lsclusters >/dev/null && [[ " ${missing[*]} " == *" postgresql "* ]]; then
  $sudo pg_ctlcluster --skip-systemctl-redirect 15 main stop 2>/dev/null || true
fi
