"""The Node package's own tests (clients/node/test, node's built-in test
runner) against this build's rlockd, with the ioredis that
scripts/install-npm-deps.sh puts under build/npm (NODE_PATH).

A missing node or ioredis is a SKIP naming what to install, never a pass.
"""

import glob
import os
import subprocess

from harness import node_with, rlockd_bin

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PACKAGE = os.path.join(ROOT, "clients", "node")


def test_node_package_suite():
    node, env = node_with("ioredis")
    env["RLOCKD_BIN"] = rlockd_bin()
    # the test files, not test/helper.js (node --test would count it as one)
    files = sorted(glob.glob(os.path.join(PACKAGE, "test", "*.test.js")))
    assert files, "no tests in %s/test" % PACKAGE
    r = subprocess.run([node, "--test", "--test-reporter=tap"] + files, cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=180)
    lines = r.stdout.strip().splitlines()
    summary = [l for l in lines if l.startswith("# ") and l.split()[1] in ("tests", "pass", "fail", "skipped")]
    assert r.returncode == 0, "node --test clients/node/test failed (%d):\n%s\n%s" % (
        r.returncode, "\n".join(lines[-80:]), r.stderr[-2000:])
    print("    node package: " + ", ".join(l[2:] for l in summary))
