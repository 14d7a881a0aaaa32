#!/usr/bin/env bash
# tob-sim --ic's command-line contract: the one-line summary, exit codes, usage errors naming the
# flag, the --published file (checked by an independent script, which must also catch a changed
# value), and the replay hint when f + 1 liars break the guarantees.
set -euo pipefail
sim=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }

if "$sim" --ic --nodes 4 --liars 1 --seed 3 --published "$tmp/p4.txt" >"$tmp/out" &&
   grep -q '^result: PASS' "$tmp/out" &&
   grep -Eq '^ic-summary: seed 3 nodes 4 f 1 liars 1 .* periods 20 published [1-9][0-9]* reads-ok [1-9][0-9]* reads-failed [0-9]+ reductions-failed 0 violations 0$' "$tmp/out"; then
  ok "N = 4 with a liar passes; one-line summary"
else bad "N = 4 liar run"; cat "$tmp/out"; fi

if python3 "$here/check_published.py" "$tmp/p4.txt"; then ok "--published (N = 4) passes the independent checker"; else bad "--published N = 4"; fi

if "$sim" --ic --nodes 7 --liars 1 --omitters 1 --ic-period 2 --seed 9 --published "$tmp/p7.txt" --quiet >"$tmp/out" &&
   grep -q '^result: PASS' "$tmp/out" && python3 "$here/check_published.py" "$tmp/p7.txt"; then
  ok "N = 7 with a liar and an omitter passes; --published passes the checker"
else bad "N = 7 run"; cat "$tmp/out"; fi

# The independent checker must fail when one node's value differs.
awk 'BEGIN{done=0} !/^#/ && $2==1 && $4 ~ /^0x/ && !done {sub(/^0x../, "0x5a", $4); done=1} {print}' "$tmp/p4.txt" >"$tmp/bad.txt"
set +e
python3 "$here/check_published.py" "$tmp/bad.txt" >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 1 ] && grep -q 'published different values' "$tmp/out"; then ok "the checker catches a changed value"; else bad "checker rc=$rc"; cat "$tmp/out"; fi

if "$sim" --ic --nodes 4 --crashers 1 --seeds 50 --quiet >"$tmp/out" 2>&1 && grep -q '^result: PASS (50 seeds' "$tmp/out"; then
  ok "50 seeds with a crashed node pass"
else bad "crasher seeds"; cat "$tmp/out"; fi

set +e
"$sim" --ic --bogus 1 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "unknown flag '--bogus'" "$tmp/out"; then ok "unknown flag: exit 2, named"; else bad "unknown flag rc=$rc"; fi

set +e
"$sim" --ic --nodes 6 --f 2 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "N > 3f" "$tmp/out"; then ok "--f 2 with 6 nodes refused, names N > 3f"; else bad "--f rc=$rc"; cat "$tmp/out"; fi

set +e
"$sim" --ic --nodes 4 --liars 3 --omitters 2 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q -- "--liars" "$tmp/out"; then ok "more faulty nodes than nodes refused"; else bad "roles rc=$rc"; cat "$tmp/out"; fi

# f + 1 = 2 colluding liars of 4: the guarantees break; exit 1 with a replay command that fails again.
set +e
"$sim" --ic --nodes 4 --liars 2 --seeds 5 --quiet >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 1 ] && grep -q 'replay: tob-sim --ic .* --seed [0-9]*' "$tmp/out"; then
  ok "f + 1 liars: exit 1 with a replay command"
  seed=$(grep -m1 -o 'seed [0-9]*: FAIL' "$tmp/out" | awk '{print $2}' | tr -d :)
  set +e
  "$sim" --ic --nodes 4 --liars 2 --seed "$seed" >"$tmp/one" 2>&1; rc=$?
  set -e
  if [ $rc -eq 1 ] && grep -q VIOLATED "$tmp/one" && grep -q "violations [1-9]" "$tmp/one"; then
    ok "the failing seed replays exactly"
  else bad "replay of seed $seed rc=$rc"; fi
else bad "f + 1 liars rc=$rc"; cat "$tmp/out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
