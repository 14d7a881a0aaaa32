#!/usr/bin/env bash
# tob-sim's command-line contract: exit codes, usage errors naming the flag, the --deliveries
# trace format (checked by an independent script), and the replay hint on a violation.
set -euo pipefail
sim=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $*"; }
bad() { failed=$((failed + 1)); echo "FAILED: $*"; }

if "$sim" --nodes 4 --cycles 100 --fault-rate 0.2 --seed 3 --deliveries "$tmp/d.txt" >"$tmp/out" &&
   grep -q '^result: PASS' "$tmp/out"; then ok "a run inside the hypothesis passes"; else bad "run failed"; cat "$tmp/out"; fi

if [ -s "$tmp/d.txt" ] && python3 "$here/check_deliveries.py" "$tmp/d.txt"; then
  ok "--deliveries trace passes the independent checker"
else bad "--deliveries trace"; fi

set +e
"$sim" --bogus 1 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "unknown flag '--bogus'" "$tmp/out"; then ok "unknown flag: exit 2, named"; else bad "unknown flag rc=$rc"; fi

set +e
"$sim" --nodes 2 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q -- "--nodes" "$tmp/out"; then ok "--nodes 2 refused, named"; else bad "--nodes 2 rc=$rc"; fi

set +e
"$sim" --loss 1.5 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q -- "--loss" "$tmp/out"; then ok "--loss 1.5 refused, named"; else bad "--loss rc=$rc"; fi

set +e
"$sim" --order paxos >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "unknown ordering engine 'paxos'" "$tmp/out"; then ok "unknown engine refused"; else bad "--order rc=$rc"; fi

# A delay error every node shares: the run reports the rate corrections, centred; one that would
# leave a negative configured delay is refused.
if "$sim" --nodes 4 --cycles 1500 --drift-ppm 200 --clock-delay-error-ns 6000 --seed 3 >"$tmp/out" 2>&1 &&
   grep -q '^result: PASS' "$tmp/out" &&
   grep -Eq '^rates: .*mean [+-][0-9]{1,2}\.[0-9] ppm; delay error 6000 ns; [1-9][0-9]* windows counted' "$tmp/out"; then
  ok "--clock-delay-error-ns: rates reported, their mean within 100 ppm (the bound: 400)"
else bad "--clock-delay-error-ns run"; cat "$tmp/out"; fi
set +e
"$sim" --clock-delay-error-ns -100000 --drift-ppm 100 >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "delay error" "$tmp/out"; then ok "a delay error below the delay refused"; else bad "delay error rc=$rc"; fi

# otfp: same flags, same --deliveries file; 5% loss on every link holds on every seed.
if "$sim" --order otfp --nodes 4 --cycles 300 --loss 0.05 --seeds 50 --quiet >"$tmp/out" 2>&1 &&
   grep -q '^result: PASS' "$tmp/out"; then ok "otfp at 5% loss passes 50 seeds"; else bad "otfp loss run"; cat "$tmp/out"; fi
if "$sim" --order otfp --nodes 4 --cycles 200 --loss 0.05 --fault-rate 0.2 --seed 7 --deliveries "$tmp/o.txt" >"$tmp/out" &&
   python3 "$here/check_deliveries.py" --no-fifo "$tmp/o.txt"; then
  ok "otfp --deliveries trace passes the independent checker (integrity, total order)"
else bad "otfp --deliveries trace"; cat "$tmp/out"; fi
# otfp mixes: the whole scenario from the seed, the other scenario flags refused.
if "$sim" --mix hard --seeds 20 --quiet >"$tmp/out" 2>&1 && grep -q '^result: PASS' "$tmp/out" &&
   grep -q '^totals: 20 runs, [0-9]* crashes' "$tmp/out"; then ok "--mix hard passes 20 seeds, with totals"
else bad "--mix hard"; cat "$tmp/out"; fi
if "$sim" --mix liveness --seed 7 >"$tmp/out" 2>&1 && grep -q '^mix: [4-7] nodes' "$tmp/out" &&
   grep -q '  liveness  *ok' "$tmp/out"; then ok "--mix liveness on one seed prints the drawn mix and judges liveness"
else bad "--mix liveness"; cat "$tmp/out"; fi
for args in "--mix hard --loss 0.1" "--mix nasty" "--torn-tail 0.5 --order otfp" "--order mars --liveness-cycles 10" \
            "--fsync-ns 10-5 --order otfp" "--restart-cycles 0-3"; do
  set +e
  # shellcheck disable=SC2086
  "$sim" $args >"$tmp/out" 2>&1; rc=$?
  set -e
  if [ $rc -eq 2 ] && grep -q "Try 'tob-sim --help'" "$tmp/out"; then ok "refused: $args ($(head -1 "$tmp/out" | cut -c1-70))"
  else bad "not refused: $args rc=$rc"; cat "$tmp/out"; fi
done

# Scenario files over the real engine: one passes; a wrong expectation fails with its line.
if "$sim" --script "$here/testdata/otfp/minority_of_deciding_quorum.txt" >"$tmp/out" 2>&1 &&
   grep -q '^result: PASS ([0-9]* steps, [0-9]* expectations)' "$tmp/out"; then ok "--script runs a scenario file"
else bad "--script"; cat "$tmp/out"; fi
printf 'cluster nodes=4\nrun to 6\nsubmit 1\nrun 4\nexpect decided 6 on=all value=0,1\n' >"$tmp/wrong.txt"
set +e
"$sim" --script "$tmp/wrong.txt" >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 1 ] && grep -q "wrong.txt:5: node 0 decided instance 6 as 1, not 0,1" "$tmp/out"; then ok "a failing scenario names its line"
else bad "failing scenario rc=$rc"; cat "$tmp/out"; fi
set +e
"$sim" --script "$tmp/nonexistent.txt" >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 2 ] && grep -q "cannot read" "$tmp/out"; then ok "a missing scenario file: exit 2"; else bad "missing script rc=$rc"; fi
# A mars scenario file (first line `mars ...`) runs the mars engine.
if "$sim" --script "$here/testdata/mars/total_outage_reform.txt" >"$tmp/out" 2>&1 &&
   grep -q '^formed: {0,1,2,3} at every node from cycle 27' "$tmp/out" &&
   grep -q '^result: PASS ([0-9]* steps, [0-9]* expectations)' "$tmp/out"; then ok "--script runs a mars scenario file"
else bad "--script mars"; cat "$tmp/out"; fi

# Outside the fault hypothesis mars gives up properties: a link that stays dead makes its
# receiver shut down and rejoin for ever, so after the drain the membership has not formed
# (membership-reformed). tob-sim must exit 1 and print the seed and how to replay it. (This used
# 20% loss per copy until the rejoin fix of issue 17: the seeds that failed there were that
# livelock, and 2000 seeds now pass.)
set +e
"$sim" --nodes 5 --cycles 60 --drain 20 --fault link-down:3:1@20 --seeds 3 --quiet >"$tmp/out" 2>&1; rc=$?
set -e
if [ $rc -eq 1 ] && grep -q 'replay: tob-sim .* --seed [0-9]* --trace trace.txt' "$tmp/out"; then
  ok "violation: exit 1 with a replay command"
  seed=$(grep -m1 -o 'seed [0-9]*: FAIL' "$tmp/out" | awk '{print $2}' | tr -d :)
  set +e
  "$sim" --nodes 5 --cycles 60 --drain 20 --fault link-down:3:1@20 --seed "$seed" --trace "$tmp/trace.txt" >"$tmp/one" 2>&1; rc=$?
  set -e
  if [ $rc -eq 1 ] && grep -q VIOLATED "$tmp/one" && [ -s "$tmp/trace.txt" ]; then
    ok "the failing seed replays exactly"
  else bad "replay of seed $seed rc=$rc"; fi
else bad "violation run rc=$rc"; cat "$tmp/out"; fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
