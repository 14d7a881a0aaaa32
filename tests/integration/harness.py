"""What the netns integration tests share: one list of results, `check` to record a case, and
`run_suite` to run a test's steps so that a broken step fails the test instead of hanging or
leaving a cluster behind, ending with the `N passed, M failed` line scripts/test.sh counts."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from tobclient import FILE_PREFIX, NETNS_PREFIX  # noqa: E402

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> bool:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}: {name}{(' -- ' + detail) if detail else ''}", flush=True)
    return ok


def secondary(node: int, program: Path, *args: str) -> list[str]:
    """The command line of a DPDK secondary process attached to cluster node `node`."""
    return ["ip", "netns", "exec", f"{NETNS_PREFIX}{node}", str(program), "--proc-type=secondary",
            f"--file-prefix={FILE_PREFIX}{node}", "--no-pci", "--log-level=lib.eal:error", "--", *args]


def run_suite(name: str, run_dir: Path, body: Callable[[], None], teardown: Callable[[], None]) -> int:
    """Runs body (needs root), always tears down, prints the summary line; the exit status."""
    if os.geteuid() != 0:
        print(f"{name}: needs root")
        print("0 passed, 1 failed")
        return 1
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        body()
    except Exception as e:  # noqa: BLE001 - a broken step fails the test, never hangs
        check(f"{name} run completed", False, f"{type(e).__name__}: {e}")
    finally:
        teardown()
    passed = sum(1 for _, ok, _ in results if ok)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1
