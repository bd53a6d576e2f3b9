"""Shared helpers of the end-to-end suites: a coords-relay process on loopback and the CLI."""
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("COORDS_BIN_DIR", os.path.join(ROOT, "Apps", ".build", "debug"))
QUEUED = 75  # EX_TEMPFAIL: work queued in the outbox


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Relay:
    """`coords-relay` on a fixed loopback port; its output goes to `log_path` (a pipe nobody
    reads would fill up with access-log lines and stall the relay)."""

    def __init__(self, data_dir, port=None, args=(), log_path=None):
        """A relay keeping its data in `data_dir`, on `port` (a free loopback port when None).
        `with Relay(...) as relay:` starts it and stops it when the block ends."""
        self.data_dir, self.port, self.args, self.process = data_dir, port or free_port(), list(args), None
        self.log_path = log_path or (str(data_dir).rstrip("/") + ".log")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        command = [os.path.join(BIN, "coords-relay"), "--port", str(self.port)]
        command += self.args if "--memory" in self.args else ["--data-dir", str(self.data_dir)] + self.args
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log, text=True)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"relay exited with {self.process.returncode}: {self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("relay did not start")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            assert self.process.wait(timeout=10) == 0
        self.process = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


class Nginx:
    """Debian's nginx running deploy/nginx/coords-relay.conf exactly as shipped, except that its
    listen address and the relay addresses of its upstreams are the test's loopback ports.
    Everything (configuration, pid, logs, temporary files) lives in a temporary directory.
    `with Nginx([relay.port]) as proxy:` starts it and stops it when the block ends. With
    `tls=(certificate, key)` (PEM files) it listens with TLS instead, as the file's comment says
    to do for the Internet, and `url` is `https://localhost:PORT`."""

    SITE = os.path.join(ROOT, "deploy", "nginx", "coords-relay.conf")
    SERVERS = "    server 127.0.0.1:8081 max_fails=3 fail_timeout=5s;\n    server 127.0.0.1:8082 max_fails=3 fail_timeout=5s;\n"

    def __init__(self, relay_ports, tls=None):
        self.relay_ports, self.port, self.dir, self.process, self.tls = list(relay_ports), free_port(), None, None, tls

    @property
    def url(self):
        return f"https://localhost:{self.port}" if self.tls else f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        assert os.access(nginx, os.X_OK), "nginx is not installed (make deps installs Debian's nginx)"
        self.dir = tempfile.mkdtemp(prefix="coords-e2e-nginx-")
        with open(os.path.join(self.dir, "site.conf"), "w") as f:
            f.write(self.site())
        temp = "".join(f"    {k}_temp_path {self.dir}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(f"daemon off;\nworker_processes 1;\npid {self.dir}/nginx.pid;\nerror_log {self.dir}/error.log warn;\n"
                    f"events {{ worker_connections 1024; }}\nhttp {{\n    access_log off;\n{temp}    include {self.dir}/site.conf;\n}}\n")
        self.process = subprocess.Popen([nginx, "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf"),
                                         "-e", os.path.join(self.dir, "error.log")],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.process.returncode}: {self.error_log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not start: " + self.error_log())

    def site(self):
        """The server configuration: the shipped file with the test's ports (and TLS)."""
        site = open(self.SITE).read()
        assert site.count(self.SERVERS) == 2 and "listen 127.0.0.1:8080;" in site, "the shipped nginx file changed shape"
        servers = "".join(f"    server 127.0.0.1:{p} max_fails=3 fail_timeout=5s;\n" for p in self.relay_ports)
        site = site.replace(self.SERVERS, servers).replace("127.0.0.1:8080", f"127.0.0.1:{self.port}")
        return self.with_tls(site)

    def with_tls(self, site, http2=False):
        """`site` listening with TLS (and HTTP/2) on the test's port when `tls` was given."""
        if not self.tls:
            return site
        certificate, key = self.tls
        return site.replace(f"listen 127.0.0.1:{self.port};",
                            f"listen 127.0.0.1:{self.port} ssl{' http2' if http2 else ''};\n"
                            f"    ssl_certificate {certificate};\n    ssl_certificate_key {key};")

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "error.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""


def passphrase_env(**extra):
    return dict(os.environ, COORDS_PASSPHRASE="correct horse battery", COORDS_KEYCHAIN_COST="minimum",
                COORDS_BACKUP_COST="minimum", COORDS_BACKUP_PASSPHRASE="backup words", **extra)


def coords(env, home, *args, expect=0, stdin=None):
    """Runs `coords ARGS --home HOME`; asserts its exit status is `expect` (None: any)."""
    started = time.time()
    result = subprocess.run([os.path.join(BIN, "coords"), *args, "--home", str(home)],
                            env=env, capture_output=True, text=True, timeout=60, stdin=stdin)
    if os.environ.get("COORDS_E2E_TIMING"):
        print(f"{time.time() - started:6.2f} s  coords {' '.join(args)}")
    assert expect is None or result.returncode == expect, f"coords {' '.join(args)} → {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def data(env, home, *args, expect=0):
    return json.loads(coords(env, home, *args, "--json", expect=expect).stdout)


def befriend(env, a, b):
    """Makes the users in homes `a` and `b` friends both ways (each adds the other's link)."""
    data(env, b, "add", data(env, a, "whoami")["link"])
    data(env, a, "add", data(env, b, "whoami")["link"])


def alice_and_bob(env, tmp_path, server, friends=True):
    """Initialises the homes tmp_path/alice and tmp_path/bob on `server` (Alice and Bob) and,
    unless `friends` is false, befriends them; returns the two homes."""
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    coords(env, alice, "init", "--server", server, "--name", "Alice")
    coords(env, bob, "init", "--server", server, "--name", "Bob")
    if friends:
        befriend(env, alice, bob)
    return alice, bob


def all_friends(env, tmp_path, server, names):
    """Initialises a home per name under tmp_path on `server` (named with a capital) and makes
    every two of them friends; returns {name: home}."""
    homes = {name: tmp_path / name for name in names}
    for name, home in homes.items():
        coords(env, home, "init", "--server", server, "--name", name.capitalize())
    links = {name: data(env, home, "whoami")["link"] for name, home in homes.items()}
    for a in homes:
        for b in homes:
            if a != b:
                data(env, homes[a], "add", links[b])
    return homes
