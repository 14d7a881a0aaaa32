#!/usr/bin/env bash
# Runs the scheduler's pytest suite in a cached venv. Extra arguments go to pytest.
#   scripts/scheduler-test.sh            # whole suite
#   scripts/scheduler-test.sh -k verify  # a subset
# The venv (TOB_VENV, default build/venv-sched) is created once with Debian's python3 and
# rebuilt only when scheduler/pyproject.toml changes; the package itself is reinstalled (no
# dependency resolution, a few seconds) only when its sources change. Exit code: pytest's.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv=${TOB_VENV:-$repo/build/venv-sched}
pkg=$repo/scheduler
python=/usr/bin/python3

log() { printf 'scheduler-test: %s\n' "$*" >&2; }

if ! "$python" -m venv --help >/dev/null 2>&1; then
  log "$python -m venv is not available; run scripts/setup.sh (installs python3-venv)"
  exit 1
fi

deps_hash=$(sha256sum "$pkg/pyproject.toml" | cut -d' ' -f1)
src_hash=$(cd "$pkg" && find pyproject.toml setup.py src -type f ! -name '*.pyc' ! -name '*.so' -print0 | LC_ALL=C sort -z \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)

if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.deps-hash" 2>/dev/null)" != "$deps_hash" ]; then
  log "creating venv $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "$pkg[test]"
  echo "$deps_hash" > "$venv/.deps-hash"
  echo "$src_hash" > "$venv/.src-hash"
elif [ "$(cat "$venv/.src-hash" 2>/dev/null)" != "$src_hash" ]; then
  log "sources changed: reinstalling tobsched"
  "$venv/bin/python" -m pip install --quiet --no-deps --force-reinstall "$pkg"
  echo "$src_hash" > "$venv/.src-hash"
fi

cd "$pkg"
set +e
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -p no:cacheprovider tests "$@"
rc=$?
set -e
exit "$rc"
