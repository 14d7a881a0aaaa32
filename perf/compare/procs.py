"""Processes the comparison starts: each in a namespace, in a session of its own, logged to a
file, stopped by its PID only (SIGTERM, then SIGKILL after a grace period); and Debian packages
installed on demand."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path


class Unavailable(RuntimeError):
    """A system cannot run on this machine (a package that does not install, a build that fails);
    the comparison reports it and goes on with the others."""


def ensure_packages(packages: list[str]) -> None:
    """apt-get install the Debian packages not installed yet (root, Debian 12)."""
    missing = []
    for p in packages:
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], text=True, capture_output=True)
        if "install ok installed" not in q.stdout:
            missing.append(p)
    if not missing:
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # The packages' services (corosync, etcd) must not start on the host: the comparison runs
    # its own, in its namespaces. policy-rc.d refuses every start during the installation.
    policy = Path("/usr/sbin/policy-rc.d")
    own_policy = not policy.exists()
    if own_policy:
        policy.write_text("#!/bin/sh\n# perf/compare: no service starts while it installs packages\nexit 101\n")
        policy.chmod(0o755)
    try:
        r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env,
                           text=True, capture_output=True, timeout=900)
        if r.returncode != 0:  # an old package index: refresh it once
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, timeout=600)
            r = subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], env=env,
                               text=True, capture_output=True, timeout=900)
    finally:
        if own_policy:
            policy.unlink(missing_ok=True)
    if r.returncode != 0:
        raise Unavailable(f"apt-get install {' '.join(missing)} failed: {r.stderr.strip()[-500:]}")


def start(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start cmd in a session of its own (the comparison's terminal signals do not reach it),
    stdout and stderr appended to log."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)


def stop(procs: list[subprocess.Popen], grace_s: float = 5.0, sig: int = signal.SIGTERM) -> None:
    """Signal every process (by PID), wait up to grace_s for all of them, SIGKILL the rest."""
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, sig)
            except ProcessLookupError:
                pass
    end = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.kill(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


def kill9(p: subprocess.Popen) -> None:
    """kill -9 of one process (a crash as its peers see it)."""
    if p.poll() is None:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait(timeout=10)


def need_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise Unavailable(f"{name} not found")
    return path
