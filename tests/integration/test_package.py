"""The Debian packages (debian/, `make deb`): their version is rlockd's and their Build-Depends name
every library the Makefile builds with; they build, writing nothing outside the build tree; each
holds its files with their modes and no others; rlockd's configuration is a conffile and its
maintainer scripts create the user and enable the service (not the socket); the dependencies are
declared; librlock0 is named for and holds its soname and lists its symbols, at package versions;
unpacked into a scratch root the programs run, the man page names the packaged paths and
protocol.md ships, a program links against the library (dynamically, and statically with the
README's line); the configuration is made 0640 root:rlockd at installation; lintian finds no error.

The packages are built by `make deb BUILD=<temp dir>` (without the unit tests: DEB_BUILD_OPTIONS=
nocheck), or taken from RLOCKD_DEBS=<dir> when set (e.g. build/deb after `make deb`).
"""

import difflib
import glob
import os
import re
import subprocess

from harness import Skip, TempDir, assert_eq, which

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PACKAGES = ("rlockd", "librlock0", "librlock-dev", "rlock", "python3-rlockd")
PY_SRC = os.path.join(ROOT, "clients", "python", "rlockd")
DIST_PACKAGES = "usr/lib/python3/dist-packages/"
COMPLETION_SRC = os.path.join(ROOT, "cli", "rlock.bash-completion")
COMPLETION = "usr/share/bash-completion/completions/rlock"


def makefile_value(name):
    with open(os.path.join(ROOT, "Makefile")) as f:
        m = re.search(r"^%s\s*=[ \t]*(.*?)\s*$" % name, f.read(), re.M)
    assert m, "%s not found in the Makefile" % name
    return m.group(1)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=kw.pop("timeout", 60), **kw)


def expected_tree(multiarch):
    """Package -> ({regular file: mode}, {symlink: target})."""
    so_version, soname = makefile_value("RLOCK_SO_VERSION"), makefile_value("RLOCK_SONAME")
    lib = "usr/lib/%s/" % multiarch

    def docs(p):
        return {"usr/share/doc/%s/copyright" % p: 0o644, "usr/share/doc/%s/changelog.gz" % p: 0o644}

    rlock_files = {"usr/bin/rlock": 0o755, "usr/share/man/man1/rlock.1.gz": 0o644}
    if os.path.exists(COMPLETION_SRC):
        rlock_files[COMPLETION] = 0o644
    return {
        "rlockd": (dict(docs("rlockd"), **{
            "usr/sbin/rlockd": 0o755,
            "etc/rlockd/rlockd.ini": 0o644,
            "lib/systemd/system/rlockd.service": 0o644,
            "lib/systemd/system/rlockd.socket": 0o644,
            "usr/lib/sysusers.d/rlockd.conf": 0o644,
            "usr/share/man/man8/rlockd.8.gz": 0o644,
            "usr/share/doc/rlockd/protocol.md": 0o644}), {}),
        "librlock0": (dict(docs("librlock0"), **{lib + "librlock.so." + so_version: 0o644}),
                      {lib + soname: "librlock.so." + so_version}),
        "librlock-dev": (dict(docs("librlock-dev"), **{
            "usr/include/rlock.h": 0o644,
            lib + "librlock.a": 0o644,
            lib + "pkgconfig/rlock.pc": 0o644}), {lib + "librlock.so": soname}),
        "rlock": (dict(docs("rlock"), **rlock_files), {}),
        # and the dist-info directory dh-python writes (check_python_package)
        "python3-rlockd": (dict(docs("python3-rlockd"), **{
            DIST_PACKAGES + "rlockd/" + f: 0o644 for f in os.listdir(PY_SRC) if f.endswith(".py")}), {}),
    }


def mode_of(perms):
    """'-rwxr-xr-x' -> 0o755 (no set-id or sticky bits expected)."""
    assert re.fullmatch(r"[-dl][-r][-w][-x][-r][-w][-x][-r][-w][-x]", perms), "unexpected mode %s" % perms
    return int("".join("0" if c == "-" else "1" for c in perms[1:]), 2)


def contents(deb):
    """dpkg-deb -c: ({file: mode}, {symlink: target}, {directory: mode}), owners checked."""
    r = run(["dpkg-deb", "-c", deb])
    assert_eq(r.returncode, 0, "dpkg-deb -c %s: %s" % (deb, r.stderr))
    files, links, dirs = {}, {}, {}
    for line in r.stdout.splitlines():
        perms, owner, _size, _date, _time, name = line.split(None, 5)
        assert_eq(owner, "root/root", "owner of %s in %s" % (name, os.path.basename(deb)))
        name = name[2:] if name.startswith("./") else name
        if perms[0] == "l":
            name, target = name.split(" -> ")
            links[name] = target
        elif perms[0] == "d":
            dirs[name.rstrip("/")] = mode_of(perms)
        else:
            files[name] = mode_of(perms)
    return files, links, dirs


def field(deb, name):
    r = run(["dpkg-deb", "-f", deb, name])
    assert_eq(r.returncode, 0, "dpkg-deb -f %s %s: %s" % (deb, name, r.stderr))
    return r.stdout.strip()


def control_files(deb, into):
    os.makedirs(into)
    r = run(["dpkg-deb", "-e", deb, into])
    assert_eq(r.returncode, 0, "dpkg-deb -e %s: %s" % (deb, r.stderr))
    found = {}
    for name in os.listdir(into):
        with open(os.path.join(into, name)) as f:
            found[name] = f.read()
    return found


STUBS = ("systemd-sysusers", "deb-systemd-helper", "deb-systemd-invoke", "systemctl", "dpkg-statoverride")


def run_script(scratch, pkg, name, *args):
    """Runs pkg's maintainer script name with only stub commands on PATH; their calls, in order.
    The stub deb-systemd-helper answers as on a first installation: was-enabled yes (the
    default), debian-installed no."""
    stubs = os.path.join(scratch, "stubs")
    log = os.path.join(scratch, "calls")
    if not os.path.isdir(stubs):
        os.makedirs(stubs)
        for tool in STUBS:
            with open(os.path.join(stubs, tool), "w") as f:
                f.write('#!/bin/sh\necho "%s $*" >> "$STUB_LOG"\n'
                        '[ "$1" = debian-installed ] && exit 1\n'
                        '[ "$1" = --list ] && exit 1\nexit 0\n' % tool)
            os.chmod(os.path.join(stubs, tool), 0o755)
    if os.path.exists(log):
        os.remove(log)
    script = os.path.join(scratch, "control", pkg, name)
    env = {"PATH": stubs, "STUB_LOG": log}
    r = run(["/bin/sh", script] + list(args), env=env)
    assert_eq(r.returncode, 0, "%s.%s %s: %s%s" % (pkg, name, " ".join(args), r.stdout, r.stderr))
    assert "not found" not in r.stderr, "%s.%s runs a command that is not stubbed: %s" % (pkg, name, r.stderr)
    if not os.path.exists(log):
        return []
    with open(log) as f:
        return [line.replace("'", "").strip() for line in f]


def require_build_tools():
    missing = [t for t in ("dpkg-buildpackage", "dpkg-checkbuilddeps", "dpkg-architecture", "dh")
               if not which(t)]
    if missing:
        raise Skip("%s not found: the packages cannot be built here "
                   "(apt-get install dpkg-dev debhelper)" % ", ".join(missing))
    r = run(["dpkg-checkbuilddeps", "-Pnocheck"], cwd=ROOT)
    if r.returncode != 0:
        raise Skip("the packages' build dependencies are missing: %s" % r.stderr.strip())


def written_by_a_package_build():
    """What dpkg-buildpackage writes outside the tree it builds, by place: its
    packages, .changes and .buildinfo next to the tree (only those: other
    programs write to a shared parent such as /tmp too), and its work files
    in the tree and in debian/."""
    ours = tuple("%s_" % p for p in PACKAGES + tuple(p + "-dbgsym" for p in PACKAGES))
    return {"next to the source tree": {f for f in os.listdir(os.path.dirname(ROOT)) if f.startswith(ours)},
            "in the source tree": set(os.listdir(ROOT)),
            "in debian/": set(os.listdir(os.path.join(ROOT, "debian")))}


def build_packages(build):
    """`make deb` into the temp dir build; checks it writes nothing outside it."""
    require_build_tools()
    before = written_by_a_package_build()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    env["DEB_BUILD_OPTIONS"] = "nocheck"   # the unit tests are `make unit`'s
    env["DEB_BUILD_PROFILES"] = "nocheck"  # and Check is not needed
    r = run(["make", "-s", "-C", ROOT, "BUILD=" + build, "deb"], env=env, timeout=300)
    assert r.returncode == 0, "make deb failed (%d):\n%s%s" % (r.returncode, r.stdout[-4000:], r.stderr[-4000:])
    after = written_by_a_package_build()
    for where, names in after.items():
        assert_eq(names - before[where], set(), "files make deb left %s" % where)
    assert not os.path.exists(os.path.join(build, "deb-src")), "make deb left its copy of the tree"
    return os.path.join(build, "deb")


def package_files(deb_dir):
    """Package name -> its .deb in deb_dir (exactly one each)."""
    debs = {}
    for pkg in PACKAGES:
        found = glob.glob(os.path.join(deb_dir, "%s_*.deb" % pkg))
        assert_eq(len(found), 1, "%s_*.deb in %s" % (pkg, deb_dir))
        debs[pkg] = found[0]
    return debs


# ------------------------------------------------------------------ the checks


def check_files_and_modes(debs, multiarch):
    for pkg, (want_files, want_links) in expected_tree(multiarch).items():
        files, links, dirs = contents(debs[pkg])
        if pkg == "python3-rlockd":
            files = {f: m for f, m in files.items() if not re.match(DIST_PACKAGES + r"rlockd-[\d.]+\.dist-info/", f)}
        assert_eq({path: oct(mode) for path, mode in files.items()},
                  {path: oct(mode) for path, mode in want_files.items()}, "files (with modes) of %s" % pkg)
        assert_eq(links, want_links, "symlinks of %s" % pkg)
        for d, mode in dirs.items():
            assert_eq(oct(mode), oct(0o755), "mode of directory %s in %s" % (d or ".", pkg))


def check_versions(debs):
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        version = re.match(r"rlockd \(([^)]+)\)", f.readline()).group(1)
    for pkg, deb in debs.items():
        assert_eq(field(deb, "Package"), pkg, "Package field of %s" % deb)
        assert_eq(field(deb, "Version"), version, "Version of %s (debian/changelog)" % pkg)
    for pkg in ("librlock0", "librlock-dev"):
        assert_eq(field(debs[pkg], "Multi-Arch"), "same", "Multi-Arch of %s" % pkg)


def check_dependencies(debs):
    depends = {pkg: [d.strip() for d in field(deb, "Depends").split(",")] for pkg, deb in debs.items()}
    version = field(debs["librlock0"], "Version")

    def needs(pkg, prefix):
        assert any(d.startswith(prefix) for d in depends[pkg]), \
            "%s does not depend on %s*: %s" % (pkg, prefix, depends[pkg])

    for lib in ("libuv1", "libhiredis", "libinih", "libsystemd0", "libssl", "libc6"):
        needs("rlockd", lib)
    # dh_installsysusers: the postinst runs systemd-sysusers.
    assert "systemd | systemd-standalone-sysusers | systemd-sysusers" in depends["rlockd"], depends["rlockd"]
    needs("librlock0", "libhiredis")
    needs("rlock", "libhiredis")
    assert "librlock0 (= %s)" % version in depends["librlock-dev"], depends["librlock-dev"]
    needs("librlock-dev", "libhiredis-dev")   # rlock.pc: Requires.private: hiredis


def check_maintainer_scripts(debs, scratch):
    ctl = {pkg: control_files(deb, os.path.join(scratch, "control", pkg)) for pkg, deb in debs.items()}
    assert_eq(ctl["rlockd"].get("conffiles", "").split(), ["/etc/rlockd/rlockd.ini"], "rlockd's conffiles")
    for pkg in PACKAGES[1:]:
        assert "conffiles" not in ctl[pkg], "%s has conffiles: %s" % (pkg, ctl[pkg]["conffiles"])
        scripts = {"preinst", "postinst", "prerm", "postrm"} & set(ctl[pkg])
        if pkg == "python3-rlockd":  # dh_python3's: byte-compiles at installation, cleans at removal
            assert_eq(scripts, {"postinst", "prerm"}, "maintainer scripts of %s" % pkg)
            assert "py3compile -p python3-rlockd" in ctl[pkg]["postinst"], ctl[pkg]["postinst"]
            continue
        assert_eq(scripts, set(), "maintainer scripts of %s" % pkg)
    scripts = {"preinst", "postinst", "prerm", "postrm"} & set(ctl["rlockd"])
    assert_eq(scripts, {"postinst", "prerm", "postrm"}, "maintainer scripts of rlockd")
    for name in sorted(scripts):
        script = os.path.join(scratch, "control", "rlockd", name)
        r = run(["sh", "-n", script])
        assert_eq(r.returncode, 0, "sh -n rlockd.%s: %s" % (name, r.stderr))
    postinst, prerm = ctl["rlockd"]["postinst"], ctl["rlockd"]["prerm"]
    # Starting, stopping and purging happen only under systemd, or with
    # /usr/bin/deb-systemd-helper: read, not run.
    assert "deb-systemd-invoke $_dh_action 'rlockd.service'" in postinst, \
        "rlockd's postinst does not start rlockd.service:\n" + postinst
    assert not re.search(r"deb-systemd-invoke [^\n]*rlockd\.socket", postinst), \
        "rlockd's postinst starts rlockd.socket:\n" + postinst
    assert postinst.index("systemd-sysusers") < postinst.index("deb-systemd-invoke"), \
        "rlockd's postinst starts the service before it creates the user"
    for unit in ("rlockd.service", "rlockd.socket"):
        assert re.search(r"deb-systemd-invoke stop '?%s'?" % re.escape(unit), prerm), \
            "rlockd's prerm does not stop %s on removal:\n%s" % (unit, prerm)
    # The rest runs, against stub commands and nothing else on PATH.
    calls = run_script(scratch, "rlockd", "postinst", "configure")
    assert "systemd-sysusers rlockd.conf" in calls, "postinst configure did not create the user: %s" % calls
    assert "deb-systemd-helper enable rlockd.service" in calls, \
        "postinst configure did not enable rlockd.service: %s" % calls
    assert "deb-systemd-helper enable rlockd.socket" not in calls, \
        "postinst configure enabled rlockd.socket (it binds the service's addresses): %s" % calls
    assert calls.index("systemd-sysusers rlockd.conf") < calls.index("deb-systemd-helper enable rlockd.service"), \
        "postinst enables the service before it creates the user: %s" % calls
    # The configuration may hold passwords: 0640 root:rlockd, once the group exists.
    override = "dpkg-statoverride --update --add root rlockd 0640 /etc/rlockd/rlockd.ini"
    assert override in calls, "postinst configure does not make the configuration 0640 root:rlockd: %s" % calls
    assert calls.index("systemd-sysusers rlockd.conf") < calls.index(override), \
        "postinst sets the configuration's group before it creates it: %s" % calls
    calls = run_script(scratch, "rlockd", "postrm", "purge")
    assert "dpkg-statoverride --remove /etc/rlockd/rlockd.ini" not in calls, \
        "postrm purge removes an override that --list says is not there: %s" % calls
    for unit in ("rlockd.service", "rlockd.socket"):
        assert "deb-systemd-helper purge '%s'" % unit in ctl["rlockd"]["postrm"], \
            "rlockd's postrm does not purge %s's state:\n%s" % (unit, ctl["rlockd"]["postrm"])
    return ctl


def check_library_matches_its_soname(debs, ctl, root, multiarch):
    so_version, soname = makefile_value("RLOCK_SO_VERSION"), makefile_value("RLOCK_SONAME")
    # Debian policy 8.1: librlock.so.0 goes in librlock0.
    m = re.fullmatch(r"lib(\w+)\.so\.(\d+)", soname)
    assert m and "lib%s%s" % m.groups() == "librlock0", "soname %s does not name librlock0" % soname
    lib = os.path.join(root, "usr/lib", multiarch, "librlock.so." + so_version)
    dyn = run(["objdump", "-p", lib])
    assert_eq(dyn.returncode, 0, "objdump -p: %s" % dyn.stderr)
    assert re.search(r"SONAME\s+%s\n" % re.escape(soname), dyn.stdout), "SONAME of %s:\n%s" % (lib, dyn.stdout)
    assert_eq(ctl["librlock0"].get("shlibs", "").split(), ["librlock", "0", "librlock0", "(>=",
              "%s)" % field(debs["librlock0"], "Version")], "librlock0's shlibs")
    symbols = ctl["librlock0"].get("symbols", "")
    assert symbols.startswith("%s librlock0 " % soname), "librlock0's symbols file:\n" + symbols
    listed = set(re.findall(r"^ (\w+)@Base ", symbols, re.M))
    nm = run(["nm", "-D", "--defined-only", lib])
    assert_eq(nm.returncode, 0, "nm -D: %s" % nm.stderr)
    exported = {line.split()[-1] for line in nm.stdout.splitlines() if line.split()[1:2] == ["T"]}
    assert_eq(listed, exported, "functions in librlock0's symbols file vs. those the library exports")
    # dpkg compares these with librlock0's versions: none may be above the package's.
    version = field(debs["librlock0"], "Version")
    for sym, v in re.findall(r"^ (\w+)@Base (\S+)", symbols, re.M):
        r = run(["dpkg", "--compare-versions", v, "le", version])
        assert_eq(r.returncode, 0, "%s's version %s in the symbols file vs. the package's %s" % (sym, v, version))
    assert "activate-noawait ldconfig" in ctl["librlock0"].get("triggers", ""), "librlock0 does not run ldconfig"


def check_programs_run(root):
    conf = os.path.join(root, "etc/rlockd/rlockd.ini")
    with open(conf) as f:
        shipped = f.read().splitlines()
    with open(os.path.join(ROOT, "conf", "rlockd.ini")) as f:
        source = f.read().splitlines()
    # What `make install` writes: conf/rlockd.ini with [server] unix_socket set.
    want, section = [], None
    for line in source:
        section = line if line.startswith("[") else section
        want.append("unix_socket = /run/rlockd/rlockd.sock"
                    if section == "[server]" and line.startswith("unix_socket =") else line)
    diff = list(difflib.unified_diff(want, shipped, "conf/rlockd.ini as installed", "the shipped one", lineterm=""))
    assert not diff, "the shipped configuration is not conf/rlockd.ini as make install writes it:\n" + \
        "\n".join(diff[:40])
    assert_eq(shipped.count("unix_socket = /run/rlockd/rlockd.sock"), 1, "unix_socket lines set in the shipped config")
    with open(os.path.join(root, "lib/systemd/system/rlockd.service")) as f:
        unit = f.read()
    assert "ExecStart=/usr/sbin/rlockd -c /etc/rlockd/rlockd.ini\n" in unit, unit
    assert not re.search(r"@[A-Z]+@", unit), "unfilled template placeholder in the unit"
    r = run([os.path.join(root, "usr/sbin/rlockd"), "-t", "-c", conf])
    assert_eq(r.returncode, 0, "rlockd -t on the shipped config: %s" % r.stderr)
    r = run([os.path.join(root, "usr/sbin/rlockd"), "-V"])
    assert_eq(r.returncode, 0, "rlockd -V: %s" % r.stderr)
    r = run([os.path.join(root, "usr/bin/rlock"), "-h"])
    assert_eq(r.returncode, 0, "rlock -h: %s" % r.stderr)
    assert "rlock" in r.stdout and "NAME" in r.stdout, "rlock -h printed:\n" + r.stdout
    r = run([os.path.join(root, "usr/bin/rlock"), "--version"])
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        version = re.match(r"rlockd \(([^)-]+)", f.readline()).group(1)
    assert_eq(r.stdout, "rlock %s (librlock %s)\n" % (version, makefile_value("RLOCK_SO_VERSION")),
              "rlock --version: its own version and librlock's")


def check_docs(root):
    """The man page names the packaged paths, and the protocol it points to ships."""
    r = run(["sh", "-c", "zcat '%s'" % os.path.join(root, "usr/share/man/man8/rlockd.8.gz")])
    assert_eq(r.returncode, 0, "zcat rlockd.8.gz: %s" % r.stderr)
    assert "/usr/local" not in r.stdout, "the packaged rlockd.8 names /usr/local:\n" + \
        "\n".join(line for line in r.stdout.splitlines() if "/usr/local" in line)
    for path in ("/lib/systemd/system/rlockd.service", "/usr/lib/sysusers.d/rlockd.conf",
                 "/usr/share/doc/rlockd/protocol.md"):
        assert path in r.stdout, "the packaged rlockd.8 does not name %s" % path
        assert os.path.exists(root + path), "rlockd.8 names %s, which no package ships" % path


def check_library_links(root, multiarch):
    for tool in ("pkg-config", "cc", "objdump"):
        assert which(tool), "%s not found (a build dependency)" % tool
    libdir = os.path.join(root, "usr/lib", multiarch)
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir, "pkgconfig"), PKG_CONFIG_SYSROOT_DIR=root)
    flags = run(["pkg-config", "--cflags", "--libs", "rlock"], env=env)
    assert_eq(flags.returncode, 0, "pkg-config rlock: %s" % flags.stderr)
    assert "-L%s" % libdir in flags.stdout.split(), "pkg-config rlock --libs: %s" % flags.stdout
    src, exe = os.path.join(root, "t.c"), os.path.join(root, "t")
    with open(src, "w") as f:
        f.write('#include <rlock.h>\n#include <stdio.h>\n'
                'int main(void) { puts(rlock_strerror(RLOCK_ENOTOWNER)); return 0; }\n')
    cc = run(["cc", "-o", exe, src] + flags.stdout.split())
    assert_eq(cc.returncode, 0, "compiling against librlock-dev: %s" % cc.stderr)
    r = run([exe], env=dict(os.environ, LD_LIBRARY_PATH=libdir))
    assert_eq(r.returncode, 0, "program linked with librlock0: %s" % r.stderr)
    assert r.stdout.strip(), "rlock_strerror gave an empty text"
    dyn = run(["objdump", "-p", exe])
    assert re.search(r"NEEDED\s+librlock\.so\.0\n", dyn.stdout), "not linked by soname:\n" + dyn.stdout
    # The README's static line, as pasted (but for the source's name): no librlock at run time.
    with open(os.path.join(ROOT, "README.md")) as f:
        line = next(l.strip() for l in f if l.strip().startswith("cc -o lockdemo") and "# static" in l)
    r = run(["sh", "-c", line.split("#")[0].replace("lockdemo.c", src).replace("-o lockdemo", "-o " + exe)],
            env=env)
    assert_eq(r.returncode, 0, "the README's static link line: %s" % r.stderr)
    ldd = run(["ldd", exe])
    assert "librlock" not in ldd.stdout, "the README's static link line links librlock dynamically:\n" + ldd.stdout
    assert_eq(run([exe]).returncode, 0, "the statically linked program")


def check_python_package(debs, root):
    """python3-rlockd: Debian's python3-redis as its dependency, a dist-info of the package's
    version, and the module importable from where it is installed."""
    depends = field(debs["python3-rlockd"], "Depends")
    assert "python3-redis" in depends and re.search(r"(^|, )python3(:any)?( \(|,|$)", depends), \
        "python3-rlockd's Depends: %s" % depends
    assert_eq(field(debs["python3-rlockd"], "Architecture"), "all", "python3-rlockd's Architecture")
    version = field(debs["python3-rlockd"], "Version")
    files, _, _ = contents(debs["python3-rlockd"])
    assert any(f.startswith(DIST_PACKAGES + "rlockd-%s.dist-info/" % version) for f in files), \
        "no rlockd-%s.dist-info in python3-rlockd: %s" % (version, sorted(files))
    site = os.path.join(root, DIST_PACKAGES)
    # Debian's interpreter, which the package is for (its python3-redis too)
    r = run(["/usr/bin/python3", "-I", "-c", "import sys; sys.path.insert(0, %r); import rlockd; "
             "print(rlockd.__file__); print(rlockd.Client.__name__)" % site])
    assert_eq(r.returncode, 0, "import rlockd from python3-rlockd: %s" % r.stderr)
    assert r.stdout.startswith(os.path.join(site, "rlockd", "__init__.py")), \
        "rlockd imported from elsewhere: %s" % r.stdout


def lintian_errors(debs):
    r = run(["lintian", "--fail-on", "error"] + [debs[p] for p in PACKAGES], timeout=120)
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert_eq((r.returncode, errors), (0, []), "lintian errors:\n%s%s" % (r.stdout, r.stderr))


def test_debian_changelog_names_the_daemons_version():
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        version = re.match(r"rlockd \(([^)-]+)", f.readline()).group(1)
    with open(os.path.join(ROOT, "server", "base", "version.h")) as f:
        daemon = re.search(r'#define RLOCKD_VERSION "([^"]+)"', f.read()).group(1)
    assert_eq(version, daemon, "debian/changelog's version vs. RLOCKD_VERSION")


def test_symbols_file_names_package_versions():
    """debian/librlock0.symbols gives, for each symbol, the librlock0 version that first shipped it:
    a package version (debian/changelog), never the library's own (RLOCK_SO_VERSION), or every
    program built against it would depend on a librlock0 no package provides."""
    if not which("dpkg"):
        raise Skip("dpkg not found")
    with open(os.path.join(ROOT, "debian", "changelog")) as f:
        version = re.match(r"rlockd \(([^)]+)\)", f.readline()).group(1)
    with open(os.path.join(ROOT, "debian", "librlock0.symbols")) as f:
        listed = re.findall(r"^ (\w+)@Base (\S+)", f.read(), re.M)
    assert listed, "no symbols in debian/librlock0.symbols"
    above = [(sym, v) for sym, v in listed
             if run(["dpkg", "--compare-versions", v, "le", version]).returncode != 0]
    assert_eq(above, [], "symbols whose version is above the package's %s" % version)


def test_build_depends_name_every_library_the_makefile_builds_with():
    """Each pkg-config module of the Makefile's PKGS (and check, for the unit tests the package
    build runs) comes from a package debian/control's Build-Depends names."""
    for tool in ("pkg-config", "dpkg"):
        if not which(tool):
            raise Skip("%s not found (apt-get install %s, or scripts/install-deps.sh)" % (tool, tool))
    with open(os.path.join(ROOT, "debian", "control")) as f:
        source = f.read().split("\n\n")[0]
    m = re.search(r"^Build-Depends:((?:.*\n)(?:[ \t].*\n)*)", source + "\n", re.M)
    build_depends = {re.split(r"[\s(<\[]", d.strip())[0] for d in m.group(1).split(",") if d.strip()}
    for module in makefile_value("PKGS").split() + ["check"]:
        pcdir = run(["pkg-config", "--variable=pcfiledir", module])
        if pcdir.returncode != 0:
            raise Skip("pkg-config module %s not installed (make deps)" % module)
        owner = run(["dpkg", "-S", os.path.join(pcdir.stdout.strip(), module + ".pc")])
        assert_eq(owner.returncode, 0, "dpkg -S %s.pc: %s" % (module, owner.stderr))
        package = owner.stdout.split(":")[0]
        assert package in build_depends, "%s.pc comes from %s, which debian/control's Build-Depends " \
            "does not name: %s" % (module, package, sorted(build_depends))


def test_packages_build_and_hold_what_they_should():
    for tool in ("dpkg-deb", "dpkg-architecture"):
        if not which(tool):
            raise Skip("%s not found (apt-get install dpkg-dev)" % tool)
    multiarch = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
    with TempDir() as scratch:
        deb_dir = os.environ.get("RLOCKD_DEBS") or build_packages(os.path.join(scratch, "build"))
        debs = package_files(deb_dir)
        check_files_and_modes(debs, multiarch)
        check_versions(debs)
        check_dependencies(debs)
        ctl = check_maintainer_scripts(debs, scratch)
        root = os.path.join(scratch, "root")
        for deb in debs.values():
            r = run(["dpkg-deb", "-x", deb, root])
            assert_eq(r.returncode, 0, "dpkg-deb -x %s: %s" % (deb, r.stderr))
        check_library_matches_its_soname(debs, ctl, root, multiarch)
        check_programs_run(root)
        check_docs(root)
        check_python_package(debs, root)
        check_library_links(root, multiarch)
        if not which("lintian"):
            raise Skip("every other check passed, but lintian is not installed (apt-get install lintian)")
        lintian_errors(debs)
