"""The Python package's own pytest suite (clients/python/tests), run by
Debian's python3-pytest under /usr/bin/python3 (the interpreter that sees
python3-redis) against this build's rlockd; and its install with pip.

A missing pytest or redis-py is a SKIP naming what to install. Tests the
suite skips (the lock-lost channel's, on an rlockd without it) are
printed, so that they never pass unseen.
"""

import os
import shutil
import subprocess
import tempfile

from harness import rlockd_bin, system_python

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PACKAGE = os.path.abspath(os.path.join(ROOT, "clients", "python"))


def test_python_package_suite():
    python = system_python(("redis", "python3-redis"), ("pytest", "python3-pytest"))
    env = dict(os.environ, RLOCKD_BIN=rlockd_bin(), PYTHONDONTWRITEBYTECODE="1",
               RLOCKD_HARNESS_DIR=os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                        os.path.join(PACKAGE, "tests")],
                       cwd=PACKAGE, env=env, capture_output=True, text=True, timeout=300)
    lines = r.stdout.strip().splitlines()
    for line in lines:
        if line.startswith("SKIPPED"):
            print("    python package: " + line)
    assert r.returncode == 0, "pytest clients/python/tests failed (%d):\n%s\n%s" % (
        r.returncode, "\n".join(lines[-60:]), r.stderr[-2000:])
    print("    python package: " + (lines[-1] if lines else "no output"))


def test_python_package_installs_with_pip():
    """pip install ./clients/python, into a throw-away venv that sees the
    system's redis-py (offline: no build isolation, no downloads)."""
    python = system_python(("venv", "python3-venv"))
    with tempfile.TemporaryDirectory(prefix="rlockd-pip-") as tmp:
        # a copy: setuptools writes build/ and *.egg-info next to the sources
        source = os.path.join(tmp, "src")
        shutil.copytree(PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__", "tests"))
        venv = os.path.join(tmp, "venv")
        subprocess.run([python, "-m", "venv", "--system-site-packages", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-index",
                            source], capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"))
        assert r.returncode == 0, "pip install ./clients/python failed:\n%s" % r.stderr[-2000:]
        r = subprocess.run([py, "-c", "import rlockd, sys; print(rlockd.__file__); "
                            "print(rlockd.AsyncClient.__name__)"],
                           cwd=tmp, capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith(venv), (r.stdout, r.stderr)
