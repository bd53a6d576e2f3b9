"""A real PostgreSQL high-availability cluster for the relay's failover tests, made of Debian's
packages as docs/RELAY.md ("High availability") describes it, with the configuration files
deploy/ha/patroni.yml and deploy/ha/haproxy.cfg as shipped (only addresses, ports, paths and
passwords replaced):

- three etcd members (`etcd-server`): the distributed configuration store Patroni elects with;
- three Patroni nodes (`patroni`), each running a PostgreSQL server (`postgresql`), one primary
  and two streaming standbys, in synchronous mode (a commit is acknowledged only once a
  standby has it);
- HAProxy (`haproxy`): one port that always leads to the primary (Patroni's REST `GET /primary`
  as the health check) and one to the synchronous standby (`GET /sync`), where reads see every
  acknowledged write (`synchronous_commit = remote_apply`).

Each Patroni node runs in a network namespace of its own, joined to this machine's by a veth
pair (`10.N.i.2` inside, `10.N.i.1` outside, N random per cluster), so a test can cut one node
off from everything — etcd, the other nodes, HAProxy — by taking its link down (`isolate`). etcd
listens on an address of the loopback interface (`10.N.250.1`) that every namespace reaches through its link;
HAProxy listens on loopback for the relays. Needs root (namespaces, veth, `ip_forward`); the
PostgreSQL servers (and Patroni, which starts them) run as the unprivileged `postgres` user, as
Debian's packages do. Everything lives in a temporary directory. `Cluster` is a context manager;
`with Cluster(dir) as cluster:` starts it and tears every process and interface down at the end,
whatever happened.
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

PG_BIN = sorted((f"/usr/lib/postgresql/{v}/bin" for v in os.listdir("/usr/lib/postgresql")), key=lambda p: int(p.split("/")[4]))[-1] \
    if os.path.isdir("/usr/lib/postgresql") else ""
PASSWORD = "coords-ha-test"
DEPLOY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "deploy", "ha")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, timeout=60, every=0.2):
    """Polls `check()` until it returns something true; raises naming `what` after `timeout` s."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            result = check()
            if result:
                return result
        except Exception as error:  # noqa: BLE001 — a service not up yet answers with anything
            last = error
        time.sleep(every)
    raise TimeoutError(f"{what} did not happen within {timeout} s (last error: {last})")


def ip(*args, check=True):
    run = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and run.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {run.stderr.strip()}")
    return run


def as_postgres():
    """A preexec function that drops root to the postgres user (initdb and postgres refuse root)."""
    if os.getuid() != 0:
        return None
    import pwd
    entry = pwd.getpwnam("postgres")

    def drop():
        os.setgid(entry.pw_gid)
        os.initgroups("postgres", entry.pw_gid)
        os.setuid(entry.pw_uid)
    return drop


class Etcd:
    def __init__(self, directory, name, address, client, peer, cluster):
        self.directory, self.name, self.address, self.client, self.peer, self.cluster = directory, name, address, client, peer, cluster
        self.process = None

    def start(self):
        os.makedirs(self.directory, exist_ok=True)
        state = "existing" if os.path.isdir(os.path.join(self.directory, "member")) else "new"
        log = open(os.path.join(self.directory, "etcd.log"), "a")
        self.process = subprocess.Popen([
            "etcd", "--name", self.name, "--data-dir", self.directory,
            "--listen-client-urls", f"http://{self.address}:{self.client}", "--advertise-client-urls", f"http://{self.address}:{self.client}",
            "--listen-peer-urls", f"http://{self.address}:{self.peer}", "--initial-advertise-peer-urls", f"http://{self.address}:{self.peer}",
            "--initial-cluster", self.cluster, "--initial-cluster-state", state, "--initial-cluster-token", "coords-ha",
            "--heartbeat-interval", "100", "--election-timeout", "1000"], stdout=log, stderr=log)

    def stop(self, sig=signal.SIGTERM):
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=20)
        self.process = None


class Node:
    """One Patroni process and the PostgreSQL server it runs."""

    def __init__(self, cluster, index):
        self.cluster, self.name = cluster, f"pg{index + 1}"
        self.directory = os.path.join(cluster.dir, self.name)
        self.port, self.api = 5432, 8008  # each node has its own namespace, so the usual ports
        self.namespace = f"{cluster.prefix}-pg{index}"
        self.outside, self.inside = f"{cluster.prefix}{index}h", f"{cluster.prefix}{index}n"
        self.gateway, self.address = f"{cluster.net}.{index}.1", f"{cluster.net}.{index}.2"
        self.process = None

    def make_network(self):
        ip("netns", "add", self.namespace)
        ip("link", "add", self.outside, "type", "veth", "peer", "name", self.inside)
        ip("link", "set", self.inside, "netns", self.namespace)
        ip("addr", "add", f"{self.gateway}/24", "dev", self.outside)
        ip("link", "set", self.outside, "up")
        ip("-n", self.namespace, "addr", "add", f"{self.address}/24", "dev", self.inside)
        ip("-n", self.namespace, "link", "set", self.inside, "up")
        ip("-n", self.namespace, "link", "set", "lo", "up")
        ip("-n", self.namespace, "route", "add", "default", "via", self.gateway)

    def remove_network(self):
        ip("link", "del", self.outside, check=False)
        ip("netns", "del", self.namespace, check=False)

    def writable(self):
        """Whether this node's server takes writes now (asked through its Unix socket, which a cut
        link does not reach): True for a primary, False for a standby, None when it is down."""
        arguments = [os.path.join(PG_BIN, "psql"), "-h", self.directory, "-p", str(self.port), "-U", "postgres", "-d", "postgres",
                     "-qAt", "-c", "SELECT pg_is_in_recovery()"]
        run = subprocess.run(arguments, capture_output=True, text=True, timeout=10)
        return {"f": True, "t": False}.get(run.stdout.strip()) if run.returncode == 0 else None

    def isolate(self, cut):
        """Takes the node's link down (`cut`) or up again: it reaches nothing, nothing reaches it."""
        ip("link", "set", self.outside, "down" if cut else "up")

    def config(self):
        """deploy/ha/patroni.yml as shipped, with this node's name, addresses, paths and the
        test's passwords (nothing else changes)."""
        c = self.cluster
        site = open(os.path.join(DEPLOY, "patroni.yml")).read()
        replacements = [
            ("name: pg1\n", f"name: {self.name}\n"),
            ("10.0.0.11:8008", f"{self.address}:{self.api}"),
            ("10.0.0.11:5432", f"{self.address}:{self.port}"),
            ("10.0.0.21:2379,10.0.0.22:2379,10.0.0.23:2379", ",".join(f"{e.address}:{e.client}" for e in c.etcd)),
            ("10.0.0.0/16", f"{c.net}.0.0/16"),
            ("/var/lib/postgresql/15/coords", f"{self.directory}/data"),
            ("/usr/lib/postgresql/15/bin", PG_BIN),
            ("/var/lib/postgresql/.pgpass_patroni", f"{self.directory}/pgpass"),
            ("choose-a-superuser-password", PASSWORD),
            ("choose-a-replication-password", PASSWORD),
            ("'/var/run/postgresql'", f"'{self.directory}'"),
        ]
        for old, new in replacements:
            assert old in site, f"deploy/ha/patroni.yml changed shape: no {old!r}"
            site = site.replace(old, new)
        return site

    def start(self):
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "patroni.yml"), "w") as f:
            f.write(self.config())
        if os.getuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
            shutil.chown(os.path.join(self.directory, "patroni.yml"), "postgres", "postgres")
        os.chmod(self.directory, 0o700)
        log = open(os.path.join(self.directory, "patroni.log"), "a")
        # In the node's namespace, as postgres: `ip netns exec` and `setpriv` exec in place, so the
        # process is Patroni itself.
        command = ["patroni", os.path.join(self.directory, "patroni.yml")]
        if os.getuid() == 0:
            command = ["setpriv", "--reuid", "postgres", "--regid", "postgres", "--init-groups"] + command
        self.process = subprocess.Popen(["ip", "netns", "exec", self.namespace] + command, stdout=log, stderr=log, start_new_session=True)

    def status(self):
        """Patroni's view of this node (`GET /patroni`): role, state, timeline."""
        # Patroni's REST API answers from its own Python threads: on a loaded 2-core machine a second is not always enough.
        with urllib.request.urlopen(f"http://{self.address}:{self.api}/patroni", timeout=5) as response:
            return json.load(response)

    def postmaster_pid(self):
        try:
            with open(os.path.join(self.directory, "data", "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def kill(self):
        """kill -9 of Patroni and its PostgreSQL server at once (the machine died)."""
        pid = self.postmaster_pid()
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        # The server's children (backends, walsender) go with the postmaster's death.
        self.process = None

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None


class Cluster:
    def __init__(self, directory, nodes=3):
        self.dir = directory
        self.prefix = f"cha{random.randrange(1000, 9999)}"  # interface names: at most 15 characters
        self.net = f"10.{random.randrange(100, 250)}"
        self.etcd_address = f"{self.net}.250.1"
        peers = [(free_port(), free_port()) for _ in range(3)]
        initial = ",".join(f"e{i}=http://{self.etcd_address}:{peer}" for i, (_, peer) in enumerate(peers))
        self.etcd = [Etcd(os.path.join(directory, f"etcd{i}"), f"e{i}", self.etcd_address, client, peer, initial)
                     for i, (client, peer) in enumerate(peers)]
        self.nodes = [Node(self, i) for i in range(nodes)]
        self.primary_port, self.replica_port, self.haproxy = free_port(), free_port(), None

    # Lifecycle.

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def make_network(self):
        with open("/proc/sys/net/ipv4/ip_forward", "w") as f:  # the nodes reach each other through this namespace
            f.write("1")
        ip("addr", "add", f"{self.etcd_address}/32", "dev", "lo")
        for node in self.nodes:
            node.make_network()

    def remove_network(self):
        for node in self.nodes:
            node.remove_network()
        ip("addr", "del", f"{self.etcd_address}/32", "dev", "lo", check=False)

    def start(self):
        self.make_network()
        for member in self.etcd:
            member.start()
        wait_for("etcd quorum", lambda: subprocess.run(
            ["etcdctl", "--endpoints", self.endpoints(), "endpoint", "health"], capture_output=True, env=dict(os.environ, ETCDCTL_API="3")
        ).returncode == 0, timeout=30)
        self.nodes[0].start()
        wait_for("the first node to bootstrap as primary", lambda: self.nodes[0].status().get("role") == "master", timeout=60)
        for node in self.nodes[1:]:
            node.start()
        wait_for("both standbys streaming", lambda: all(n.status().get("state") == "running" for n in self.nodes[1:]), timeout=90)
        self.start_haproxy()
        # The new primary may still be settling (HAProxy closes sessions while a check flaps): retried.
        wait_for("the relay's role and database", lambda: self.psql(
            "SELECT 1 FROM pg_roles WHERE rolname = 'coords'") == "1" or self.psql("CREATE ROLE coords LOGIN PASSWORD '%s'" % PASSWORD) == "", timeout=30)
        wait_for("the relay's database", lambda: self.psql(
            "SELECT 1 FROM pg_database WHERE datname = 'coords'") == "1" or self.psql("CREATE DATABASE coords OWNER coords") == "", timeout=30)
        wait_for("a synchronous standby", self.sync_standby, timeout=30)

    def stop(self):
        if self.haproxy and self.haproxy.poll() is None:
            self.haproxy.terminate()
            self.haproxy.wait(timeout=10)
        for node in self.nodes:
            node.stop()
        for member in self.etcd:
            member.stop()
        for node in self.nodes:  # a server left behind by a killed Patroni
            pid = node.postmaster_pid()
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self.remove_network()

    def endpoints(self):
        return ",".join(f"http://{e.address}:{e.client}" for e in self.etcd)

    def start_haproxy(self):
        """deploy/ha/haproxy.cfg as shipped, with the test's ports and node addresses."""
        config = open(os.path.join(DEPLOY, "haproxy.cfg")).read()
        replacements = [("127.0.0.1:5000", f"127.0.0.1:{self.primary_port}"), ("127.0.0.1:5001", f"127.0.0.1:{self.replica_port}")]
        replacements += [(f"10.0.0.1{i + 1}:5432 check port 8008", f"{n.address}:{n.port} check port {n.api}") for i, n in enumerate(self.nodes)]
        for old, new in replacements:
            assert old in config, f"deploy/ha/haproxy.cfg changed shape: no {old!r}"
            config = config.replace(old, new)
        path = os.path.join(self.dir, "haproxy.cfg")
        with open(path, "w") as f:
            f.write(config)
        log = open(os.path.join(self.dir, "haproxy.log"), "a")
        self.haproxy = subprocess.Popen(["haproxy", "-db", "-f", path], stdout=log, stderr=log)
        wait_for("HAProxy to reach the primary", lambda: self.psql_port(self.primary_port, "SELECT pg_is_in_recovery()") == "f", timeout=30)

    # Questions and actions.

    def psql_port(self, port, *commands, database="postgres", user="postgres"):
        arguments = [os.path.join(PG_BIN, "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", user, "-d", database, "-qAt", "-v", "ON_ERROR_STOP=1"]
        for command in commands:
            arguments += ["-c", command]
        run = subprocess.run(arguments, capture_output=True, text=True, timeout=20, env=dict(os.environ, PGPASSWORD=PASSWORD, PGCONNECT_TIMEOUT="3"))
        if run.returncode != 0:
            raise RuntimeError(run.stderr.strip())
        return run.stdout.strip()

    def psql(self, *commands, database="postgres"):
        return self.psql_port(self.primary_port, *commands, database=database)

    def sessions(self, node, user="coords"):
        """How many sessions `user` has open on `node`'s server (asked there directly)."""
        arguments = [os.path.join(PG_BIN, "psql"), "-h", node.address, "-p", str(node.port), "-U", "postgres", "-d", "postgres", "-qAt",
                     "-c", f"SELECT count(*) FROM pg_stat_activity WHERE usename = '{user}'"]
        run = subprocess.run(arguments, capture_output=True, text=True, timeout=20, env=dict(os.environ, PGPASSWORD=PASSWORD, PGCONNECT_TIMEOUT="3"))
        return int(run.stdout.strip() or "0") if run.returncode == 0 else 0

    def leader(self):
        for node in self.nodes:
            try:
                if node.status().get("role") == "master":
                    return node
            except OSError:
                continue
        return None

    def sync_standby(self):
        """The node Patroni has recorded as the synchronous standby (`GET /cluster`, role
        `sync_standby`: it streams in sync and may be promoted), if any."""
        for node in self.nodes:
            try:
                with urllib.request.urlopen(f"http://{node.address}:{node.api}/cluster", timeout=1) as response:
                    members = json.load(response)["members"]
            except (OSError, ValueError, KeyError):
                continue
            name = next((m["name"] for m in members if m.get("role") == "sync_standby" and m.get("state") in ("running", "streaming")), None)
            return next((n for n in self.nodes if n.name == name), None)
        return None

    def patronictl(self, *args):
        """`patronictl` with the first node's configuration; raises when it says it failed
        (it exits 0 after a refused switchover)."""
        config = os.path.join(self.nodes[0].directory, "patroni.yml")
        run = subprocess.run(["patronictl", "-c", config, *args], capture_output=True, text=True, timeout=60)
        if run.returncode != 0 or "failed" in run.stdout.lower():
            raise RuntimeError(f"patronictl {' '.join(args)}: {run.stdout[-400:]} {run.stderr[-400:]}")
        return run

    def etcd_leader(self):
        run = subprocess.run(["etcdctl", "--endpoints", self.endpoints(), "endpoint", "status", "-w", "json"],
                             capture_output=True, text=True, env=dict(os.environ, ETCDCTL_API="3"))
        statuses = json.loads(run.stdout or "[]") if run.returncode == 0 else []  # a member slow to answer: asked again
        for status in statuses:
            if status["Status"]["header"]["member_id"] == status["Status"]["leader"]:
                return next(e for e in self.etcd if str(e.client) in status["Endpoint"])
        return None

    @property
    def url(self):
        """The relay's --postgres URL: HAProxy's primary port."""
        return f"postgres://coords:{PASSWORD}@127.0.0.1:{self.primary_port}/coords"

    @property
    def read_url(self):
        """The relay's --postgres-read URL: HAProxy's port of the synchronous standby."""
        return f"postgres://coords:{PASSWORD}@127.0.0.1:{self.replica_port}/coords"
