#!/usr/bin/env bash
# The test command of the README: installs what is missing, builds, runs every suite
# (unit, sim, fuzz corpus replay, integration, scheduler) and ends with the one line CI reads:
#   tests: N passed, N failed
# counting the test cases inside each suite (Catch2 cases, pytest tests, script checks).
# Exits non-zero when anything failed. `scripts/test.sh unit sim` runs only those suites.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${TOB_BUILD_DIR:-$repo/build}
cd "$repo"

bash scripts/setup.sh
echo "test: building"
TOB_BUILD_DIR=$build bash scripts/build.sh

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(unit sim fuzz integration scheduler)
args=()
for s in "${suites[@]}"; do args+=(--suite "$s"); done

set +e
meson test -C "$build" "${args[@]}" --print-errorlogs --num-processes 1
meson_rc=$?
set -e

# Count the cases inside each test from its output (testlog.json has one record per test).
summary=$(/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = 0
rows = []
with open(sys.argv[1]) as f:
    for line in f:
        t = json.loads(line)
        out = t.get("stdout", "") or ""
        ok = t["result"] in ("OK", "EXPECTEDFAIL", "SKIP")
        p = fl = None
        m = re.search(r"test cases:\s+(\d+)\s+\|\s+(\d+) passed\s+\|\s+(\d+) failed", out)
        if m:
            p, fl = int(m.group(2)), int(m.group(3))
        m = m or re.search(r"All tests passed \(\d+ assertions? in (\d+) test cases?\)", out)
        if m and p is None:
            p, fl = int(m.group(1)), 0
        if p is None:
            m = re.findall(r"=+ (.*) in [\d.]+s", out)
            if m:
                last = m[-1]
                p = sum(int(x) for x in re.findall(r"(\d+) passed", last))
                fl = sum(int(x) for x in re.findall(r"(\d+) (?:failed|error)", last))
        if p is None:
            m = re.findall(r"^(\d+) passed, (\d+) failed", out, re.M)
            if m:
                p, fl = int(m[-1][0]), int(m[-1][1])
        if p is None:
            p, fl = (1, 0) if ok else (0, 1)
        if not ok and fl == 0:
            fl = 1  # crashed or timed out after its last summary
        passed += p
        failed += fl
        rows.append(f"  {t['name']:<40} {p:>5} passed {fl:>3} failed  ({t['result']})")
print("\n".join(rows))
print(f"tests: {passed} passed, {failed} failed")
PY
)
echo "test: results per suite"
echo "$summary"
last=$(echo "$summary" | tail -n 1)
case "$last" in
  "tests: "*" passed, 0 failed") [ "$meson_rc" -eq 0 ] || exit 1 ;;
  *) exit 1 ;;
esac
