"""`make install` into a DESTDIR: the tree, the filled-in templates, the library as a user links it, the units, `make uninstall`."""

import os
import re
import stat
import subprocess

from harness import Skip, TempDir, assert_eq, which

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PREFIX = "/usr/local"

# Installed path -> mode.
TREE = {
    "usr/local/sbin/rlockd": 0o755,
    "usr/local/bin/rlock": 0o755,
    "usr/local/lib/librlock.so.0.5.0": 0o755,
    "usr/local/lib/librlock.a": 0o644,
    "usr/local/include/rlock.h": 0o644,
    "usr/local/lib/pkgconfig/rlock.pc": 0o644,
    "usr/local/lib/systemd/system/rlockd.service": 0o644,
    "usr/local/lib/systemd/system/rlockd.socket": 0o644,
    "usr/local/lib/sysusers.d/rlockd.conf": 0o644,
    "usr/local/share/man/man8/rlockd.8": 0o644,
    "usr/local/share/man/man1/rlock.1": 0o644,
    "usr/local/share/bash-completion/completions/rlock": 0o644,
    "usr/local/share/doc/rlockd/protocol.md": 0o644,
    "etc/rlockd/rlockd.ini": 0o640,  # it may hold passwords
}
LINKS = {"usr/local/lib/librlock.so.0": "librlock.so.0.5.0", "usr/local/lib/librlock.so": "librlock.so.0"}


def build_dir():
    b = os.environ.get("RLOCKD_BUILD")
    if not b:
        raise Skip("RLOCKD_BUILD not set (the Makefile's integration target sets it)")
    return b


def make(*targets, destdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    r = subprocess.run(["make", "-s", "-C", ROOT, "BUILD=" + build_dir(), "PREFIX=" + PREFIX,
                        "DESTDIR=" + destdir] + list(targets),
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, "make %s failed (%d):\n%s%s" % (" ".join(targets), r.returncode, r.stdout, r.stderr)
    return r.stdout


def installed_files(root):
    found = set()
    for d, _, files in os.walk(root):
        for f in files:
            found.add(os.path.relpath(os.path.join(d, f), root))
    return found


def test_install_puts_every_file_in_place_with_its_mode():
    with TempDir() as dest:
        make("install", destdir=dest)
        assert_eq(installed_files(dest), set(TREE) | set(LINKS), "installed files")
        for path, mode in TREE.items():
            st = os.lstat(os.path.join(dest, path))
            assert stat.S_ISREG(st.st_mode), "%s is not a regular file" % path
            assert_eq(oct(stat.S_IMODE(st.st_mode)), oct(mode), "mode of %s" % path)
        for path, target in LINKS.items():
            assert_eq(os.readlink(os.path.join(dest, path)), target, "symlink %s" % path)
        with open(os.path.join(dest, "usr/local/lib/systemd/system/rlockd.service")) as f:
            unit = f.read()
        assert "ExecStart=/usr/local/sbin/rlockd -c /etc/rlockd/rlockd.ini\n" in unit, unit
        assert not re.search(r"@[A-Z]+@", unit), "unfilled template placeholder in the unit"
        with open(os.path.join(dest, "etc/rlockd/rlockd.ini")) as f:
            conf = f.read()
        assert "\nunix_socket = /run/rlockd/rlockd.sock\n" in conf, "service socket path not set"
        assert conf.count("unix_socket = /run/rlockd/rlockd.sock") == 1, "[redis] unix_socket changed too"
        r = subprocess.run([os.path.join(dest, "usr/local/sbin/rlockd"), "-t", "-c",
                            os.path.join(dest, "etc/rlockd/rlockd.ini")], capture_output=True, text=True)
        assert_eq(r.returncode, 0, "rlockd -t on the installed config: %s" % r.stderr)


def test_install_keeps_an_existing_config_and_uninstall_leaves_only_it():
    with TempDir() as dest:
        make("install", destdir=dest)
        conf = os.path.join(dest, "etc/rlockd/rlockd.ini")
        with open(conf, "w") as f:
            f.write("[lock]\nwatchdog_timeout_ms = 12345\n")
        out = make("install", destdir=dest)
        assert "keeping existing" in out, out
        with open(conf) as f:
            assert_eq(f.read(), "[lock]\nwatchdog_timeout_ms = 12345\n", "config after a second install")
        make("uninstall", destdir=dest)
        assert_eq(installed_files(dest), {"etc/rlockd/rlockd.ini"}, "files left after uninstall")


def test_installed_library_links_through_pkg_config_and_runs():
    for tool, package in (("pkg-config", "pkg-config"), ("cc", "build-essential"), ("objdump", "binutils")):
        if not which(tool):
            raise Skip("%s not found (apt-get install %s, or scripts/install-deps.sh)" % (tool, package))
    with TempDir() as dest:
        make("install", destdir=dest)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(dest, "usr/local/lib/pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=dest)
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "rlock"], env=env,
                               capture_output=True, text=True)
        assert_eq(flags.returncode, 0, "pkg-config rlock: %s" % flags.stderr)
        src = os.path.join(dest, "t.c")
        with open(src, "w") as f:
            f.write('#include <rlock.h>\n#include <stdio.h>\n'
                    'int main(void) { puts(rlock_strerror(RLOCK_ENOTOWNER)); return 0; }\n')
        exe = os.path.join(dest, "t")
        # A sanitizer build's library needs the sanitizer runtime linked in (make asan says so).
        extra = os.environ.get("RLOCKD_TEST_LDFLAGS", "").split()
        cc = subprocess.run(["cc", "-o", exe, src] + flags.stdout.split() + extra, capture_output=True, text=True)
        assert_eq(cc.returncode, 0, "compiling against the installed library: %s" % cc.stderr)
        run = subprocess.run([exe], env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(dest, "usr/local/lib")),
                             capture_output=True, text=True)
        assert_eq(run.returncode, 0, "program linked with librlock: %s" % run.stderr)
        assert run.stdout.strip(), "rlock_strerror gave an empty text"
        dyn = subprocess.run(["objdump", "-p", exe], capture_output=True, text=True)
        assert_eq(dyn.returncode, 0, "objdump -p: %s" % dyn.stderr)
        assert re.search(r"NEEDED\s+librlock\.so\.0\n", dyn.stdout), \
            "the program does not load librlock by its soname:\n%s" % dyn.stdout


def test_installed_units_pass_systemd_analyze():
    script = os.path.join(ROOT, "tests", "service", "check-units.sh")
    with TempDir() as dest:
        make("install", destdir=dest)
        r = subprocess.run(["bash", script, dest], capture_output=True, text=True, timeout=120)
        if r.returncode == 77:
            raise Skip(r.stdout.strip() or r.stderr.strip())
        assert_eq(r.returncode, 0, "check-units.sh:\n%s%s" % (r.stdout, r.stderr))


def test_man_pages_pass_mandoc_lint():
    if not which("mandoc"):
        raise Skip("mandoc not found (apt-get install mandoc)")
    pages = [os.path.join(ROOT, "docs", p) for p in ("rlockd.8", "rlock.1")]
    r = subprocess.run(["mandoc", "-Tlint", "-W", "warning"] + pages, capture_output=True, text=True)
    assert_eq(r.returncode, 0, "mandoc -Tlint:\n%s%s" % (r.stdout, r.stderr))
