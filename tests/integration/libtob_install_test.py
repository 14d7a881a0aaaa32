"""libtob as users install it (issue 20): `meson install` into a temporary prefix, then the
example application built out of the tree with nothing but
`cc tob_example.c $(pkg-config --cflags --libs libtob)`, run against a netns cluster.

Checks: the install holds tob.h, libtob.so -> libtob.so.<TOB_ABI_VERSION> (its soname) and
libtob.pc; the library exports tob.h's functions and nothing of the project's internals; the
application compiles and links with pkg-config alone (PKG_CONFIG_PATH naming the temporary
prefix), uses the installed libtob.so and no archive of the build tree; it attaches to node 1 of
a 3-node cluster, and its three messages come back delivered. Ends with `N passed, M failed`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
from tobclient import cluster  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import check, run_suite  # noqa: E402

BUILD = Path(os.environ.get("TOB_BUILD_DIR", REPO / "build"))
RUN = Path(os.environ.get("TOB_TEST_RUN_DIR", "/tmp/dpdk-tob-libtob"))
NET = "tlib"
NODES = 3
ENV = dict(os.environ, TOB_NET=NET, TOB_RUN_DIR=str(RUN), TOB_CYCLE_NS="100000000", TOB_BUILD_DIR=str(BUILD),
           TOB_STATUS_INTERVAL="2")


def abi_version() -> str:
    m = re.search(r"#define TOB_ABI_VERSION (\d+)", (REPO / "include/tob.h").read_text())
    assert m, "include/tob.h has no TOB_ABI_VERSION"
    return m.group(1)


def sh(cmd: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)


def body() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="tob-libtob-"))
    try:
        run_in(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_in(tmp: Path) -> None:
    dest = tmp / "root"
    inst = subprocess.run(["meson", "install", "-C", str(BUILD), "--destdir", str(dest), "--quiet"],
                          capture_output=True, text=True, timeout=600)
    check("meson install into a temporary prefix", inst.returncode == 0, (inst.stdout + inst.stderr).strip()[-300:])
    pcs = list(dest.rglob("libtob.pc"))
    headers = list(dest.rglob("include/tob.h"))
    abi = abi_version()
    libs = {p.name: p for p in dest.rglob("libtob.so*")}
    check("the install holds tob.h, libtob.pc and libtob.so -> libtob.so.ABI (a symlink chain to one file)",
          len(pcs) == 1 and len(headers) == 1 and "libtob.so" in libs and f"libtob.so.{abi}" in libs
          and libs["libtob.so"].is_symlink() and not any(p.suffix == ".a" for p in dest.rglob("libtob*")),
          f"pc {pcs}, headers {headers}, libs {sorted(libs)}")
    if not pcs or "libtob.so" not in libs:
        return
    so = libs["libtob.so"].resolve()
    dyn = sh(f"readelf -d {so}").stdout
    check(f"libtob.so's soname follows TOB_ABI_VERSION ({abi})", f"Library soname: [libtob.so.{abi}]" in dyn,
          next((line.strip() for line in dyn.splitlines() if "SONAME" in line), "no SONAME"))
    syms = sh(f"nm -D --defined-only {so}").stdout.split("\n")
    names = [line.split()[-1] for line in syms if line.strip()]
    check("libtob.so exports tob.h's functions and nothing of the project's internals",
          "tob_attach" in names and "tob_submit" in names and all(n.startswith("tob_") for n in names),
          f"{len(names)} symbols; not tob_*: {[n for n in names if not n.startswith('tob_')][:5]}")

    # An application outside the tree, built as its README says: pkg-config and nothing else.
    src = tmp / "app"
    src.mkdir()
    shutil.copy(REPO / "app/tob-example/tob_example.c", src / "tob_example.c")
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcs[0].parent))
    cc = sh("cc -o tob-example tob_example.c $(pkg-config --cflags --libs libtob)", env=env, cwd=src)
    check("cc tob_example.c $(pkg-config --cflags --libs libtob) builds the example out of the tree",
          cc.returncode == 0, (cc.stdout + cc.stderr).strip()[-400:])
    if cc.returncode != 0:
        return
    libdir = libs["libtob.so"].parent
    ldd = sh(f"LD_LIBRARY_PATH={libdir} ldd {src / 'tob-example'}").stdout
    check("the example uses the installed libtob.so, not the build tree",
          f"libtob.so.{abi} => {libdir}" in ldd and str(BUILD) not in ldd,
          next((line.strip() for line in ldd.splitlines() if "libtob" in line), "libtob not linked"))

    up = cluster(ENV, "up", str(NODES), check=False)
    check("a 3-node cluster is up", up.returncode == 0, (up.stdout + up.stderr).strip()[-300:])
    if up.returncode != 0:
        return
    run = subprocess.run(["ip", "netns", "exec", f"{NET}-n1", "env", f"LD_LIBRARY_PATH={libdir}",
                          str(src / "tob-example"), "--proc-type=secondary", f"--file-prefix={NET}-node1", "--no-pci",
                          "--log-level=lib.eal:error", "--", "--cluster", "netns", "--count", "3", "--seconds", "3"],
                         capture_output=True, text=True, timeout=60)
    own = [line for line in run.stdout.splitlines() if re.search(r"from node 1 client \d+: hello \d from node 1", line)]
    check("the out-of-tree example attaches to node 1 and its 3 messages are delivered",
          run.returncode == 0 and "attached to node 1" in run.stdout and len(own) == 3,
          f"exit {run.returncode}; {len(own)} own deliveries; {(run.stdout + run.stderr).strip()[-300:]}")


def teardown() -> None:
    cluster(ENV, "down", check=False)


if __name__ == "__main__":
    sys.exit(run_suite("libtob-install", RUN, body, teardown))
