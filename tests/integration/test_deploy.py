"""The Kubernetes sidecar kit (deploy/): the image recipe and the sample Pod agree with rlockd and
with each other: every RLOCKD_ variable they set is a key rlockd -t accepts on the packaged
configuration; the probes ask /healthz and /readyz on the port rlockd's HTTP endpoint listens on;
the Unix socket of the packaged configuration lies in the emptyDir both containers mount, where
the application's RLOCK_ADDR points; the user is fixed, non-root, and the root filesystem read-only.
Building and running the image needs podman and a Debian base image: not done here (README.md,
deploy/README.md say why)."""

import os
import re
import subprocess

from harness import Skip, assert_eq, rlockd_bin

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEPLOY = os.path.join(ROOT, "deploy")


def _dockerfile():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        text = re.sub(r"\\\n", " ", f.read())
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _image_env():
    env = {}
    for line in _dockerfile():
        if line.startswith("ENV "):
            env.update(re.findall(r"(\w+)=(\S+)", line))
    return env


def _pod():
    try:
        import yaml
    except ImportError:
        raise Skip("python3-yaml not installed")
    with open(os.path.join(DEPLOY, "pod.yaml")) as f:
        return yaml.safe_load(f)


def _installed_conf():
    """conf/rlockd.ini as make install and the package write it: the service's Unix socket."""
    with open(os.path.join(ROOT, "conf", "rlockd.ini")) as f:
        text = f.read()
    return re.sub(r"(?m)^unix_socket =.*$", "unix_socket = /run/rlockd/rlockd.sock", text, count=1)


def _check(env, tmp):
    path = os.path.join(tmp, "rlockd.ini")
    with open(path, "w") as f:
        f.write(_installed_conf())
    # no stray RLOCKD_ setting of ours; RLOCKD_REAL_BIN is no setting: make valgrind's wrapper needs it
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RLOCKD_") or k == "RLOCKD_REAL_BIN"}
    r = subprocess.run([rlockd_bin(), "-t", "-c", path], capture_output=True, text=True, timeout=10,
                       env=dict(clean, **env))
    assert_eq(r.returncode, 0, "rlockd -t with %s: %s" % (sorted(env), r.stderr))
    return r.stdout


def test_image_recipe_is_bookworm_slim_non_root_with_valid_settings():
    lines = _dockerfile()
    assert_eq(lines[0], "FROM debian:bookworm-slim", "the base image")
    user = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert user and re.fullmatch(r"[1-9]\d*:[1-9]\d*", user[-1]), "USER must be a numeric non-root uid:gid: %r" % user
    assert any("apt-get install" in line and ".deb" in line for line in lines), "the image installs the .debs"
    assert any(line.startswith("ENTRYPOINT") and "/usr/sbin/rlockd" in line for line in lines), "ENTRYPOINT"
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = _check(_image_env(), tmp)
    for var in _image_env():
        assert re.search(r"^rlockd: %s sets " % var, out, re.M), "rlockd -t does not take %s: %r" % (var, out)


def test_sample_pod_probes_socket_and_security_agree_with_the_image():
    pod = _pod()
    spec = pod["spec"]
    sidecar = next(c for c in spec["initContainers"] if c["name"] == "rlockd")
    app = spec["containers"][0]
    assert_eq(sidecar.get("restartPolicy"), "Always", "rlockd is a native sidecar")
    image_env = _image_env()
    pod_env = {e["name"]: e.get("value", "placeholder") for e in sidecar["env"]}
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        out = _check(dict(image_env, **pod_env), tmp)
    for var in pod_env:
        assert re.search(r"^rlockd: %s sets " % var, out, re.M), "rlockd -t does not take %s" % var
    http_port = int(image_env["RLOCKD_SERVER_HTTP_LISTEN"].rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in sidecar["ports"]}
    assert_eq(ports["http"], http_port, "the http port vs. RLOCKD_SERVER_HTTP_LISTEN")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
        get = sidecar[probe]["httpGet"]
        assert_eq((get["path"], ports.get(get["port"], get["port"])), (path, http_port), probe)
    assert sidecar["lifecycle"]["preStop"]["exec"]["command"], "preStop"
    # the socket: in the emptyDir both mount, where RLOCK_ADDR points
    volume = next(v for v in spec["volumes"] if "emptyDir" in v)
    mounts = [next(m["mountPath"] for m in c["volumeMounts"] if m["name"] == volume["name"]) for c in (sidecar, app)]
    assert_eq(mounts, ["/run/rlockd", "/run/rlockd"], "where each container mounts the shared emptyDir")
    socket_path = re.search(r"(?m)^unix_socket = (.*)$", _installed_conf()).group(1)
    assert_eq(os.path.dirname(socket_path), "/run/rlockd", "the packaged unix_socket's directory")
    assert_eq({e["name"]: e["value"] for e in app["env"]}.get("RLOCK_ADDR"), "unix:" + socket_path,
              "the application's RLOCK_ADDR")
    uid = next(line.split()[1] for line in _dockerfile() if line.startswith("USER ")).split(":")
    ctx = sidecar["securityContext"]
    assert_eq((str(ctx["runAsUser"]), str(ctx["runAsGroup"]), str(spec["securityContext"]["fsGroup"])),
              (uid[0], uid[1], uid[1]), "the Pod's user and fsGroup vs. the image's USER")
    assert_eq((ctx["readOnlyRootFilesystem"], ctx["allowPrivilegeEscalation"], spec["securityContext"]["runAsNonRoot"]),
              (True, False, True), "read-only root, no privilege escalation, non-root")
