#!/usr/bin/python3
"""A real six-node Slurm 22.05 cluster on one machine, for slurm-preempt's tests.

munge, MariaDB, slurmdbd, slurmctld and six `slurmd -N nX`, each in its own work dir with
non-default ports. Used by test/integration (the `Cluster` class) and by hand:

    /usr/bin/python3 test/cluster/cluster.py up [--dir D] [--stock]
    /usr/bin/python3 test/cluster/cluster.py status [--dir D]
    /usr/bin/python3 test/cluster/cluster.py down [--dir D] [--keep]

Stdlib only. Every wait polls a state with a deadline; every failure is one line naming the
cause, followed by the tail of the relevant log.
"""

import argparse
import contextlib
import fcntl
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STOCK_PLUGIN_DIR = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
# Where the Debian package (scripts/build-deb) puts the example configuration.
INSTALLED_EXAMPLES = Path("/usr/share/doc/slurm-preempt/examples")
DIR_PREFIX = "slurm-preempt-cluster-"
CLUSTER_NAME = "preempt"
HOSTNAME = socket.gethostname()

NODES = [f"n{i}" for i in range(1, 7)]
GPUS_PER_NODE = 4
# A job submitted to several partitions tries the higher PriorityTier first: public nodes
# before the standby partition, which spans the owned nodes and takes only preemptible jobs.
PARTITIONS = {  # name -> (nodes, extra partition options)
    "public": ("n[1-2]", "Default=YES PriorityTier=2"),
    "chem": ("n[3-4]", "AllowAccounts=chem PriorityTier=2"),
    "bio": ("n[5-6]", "AllowAccounts=bio PriorityTier=2"),
    "standby": ("n[1-6]", "PriorityTier=1 AllowQos=standby"),
    # The Run:ai seed's node pool (2 nodes x 4 GPUs), shared by the quota projects.
    "pool": ("n[1-2]", "AllowAccounts=project-a,project-b,project-c PriorityTier=2"),
}
PUBLIC_NODES = ["n1", "n2"]
OWNED_NODES = ["n3", "n4", "n5", "n6"]
ACCOUNTS = ["public", "chem", "bio", "project-a", "project-b", "project-c"]
USERS = {"alice": "public", "bob": "public", "carol": "chem", "dave": "bio",
         "erin": "project-a", "frank": "project-b", "gina": "project-c"}
GRANTED_QOS = ["standby", "owner"]

# Default ports; Cluster(port_offset=N) adds N to each so two clusters can coexist.
# The policy sections that describe this cluster's shape (public, standby and owned
# partitions; owner groups), for test policies to append to their own qos: section.
CLUSTER_POLICY_SHAPE = """\
partitions:
  public: [public]
  standby: standby
owners:
  chem:
    partitions: [chem]
    nodes: n[3-4]
  bio:
    partitions: [bio]
    nodes: n[5-6]
"""

# The Run:ai seed's policy (shared/seeds/runai-preemption-exercise.txt) on this cluster: the
# four classes with 5 s graces (so the demo and tests take seconds), three projects on the pool.
RUNAI_POLICY = """\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: 5s
    requeue: user
    limits:
      max_walltime: 305m
  normal:
    preempts: [standby]
    limits:
      max_walltime: 180m
  owner:
    preempts: [standby]
classes:
  inference:   {priority: 125, preemptible: false}
  build:       {priority: 100, preemptible: false}
  interactive: {priority: 75,  preemptible: true, grace: 5s, min_runtime: 0}
  train:       {priority: 50,  preemptible: true, grace: 5s}
quotas:
  project-a: {gpus: 4}
  project-b: {gpus: 4, limit: 8}
  project-c: {gpus: 8, partitions: [pool]}
""" + CLUSTER_POLICY_SHAPE
# QOS walltimes that tell when slurmctld has RUNAI_POLICY's synced QOS (wait_qos_walltimes).
RUNAI_WALLTIMES = {"standby": 305, "normal": 180}

PORTS = {"mysqld": 16306, "slurmctld": 16817, "slurmdbd": 16819, "slurmd": 17001}

# Keys the plugin build's etc/slurm.conf.fragment sets; stock mode sets Slurm's own equivalent.
STOCK_PREEMPT_CONF = """\
PriorityType=priority/multifactor
PreemptType=preempt/qos
PreemptMode=REQUEUE
SlurmctldParameters=preempt_send_user_signal
"""

BINARIES = ["munge", "unmunge", "munged", "mysql_install_db", "mysqld", "mysql", "slurmdbd",
            "slurmctld", "slurmd", "slurmstepd", "sacctmgr", "sinfo", "scontrol", "squeue",
            "sbatch", "srun", "sacct", "scancel", "useradd", "runuser"]

FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE"}


def conf_keys(text):
    """Lower-cased keys of the key=value lines in slurm.conf text (not NodeName/PartitionName)."""
    keys = set()
    for line in text.splitlines():
        key = line.split("#", 1)[0].split("=", 1)[0].strip().lower()
        if "=" in line and key and " " not in key and key not in ("nodename", "partitionname"):
            keys.add(key)
    return keys


def build_dir():
    """Where the plugins were built: pluginlib/*.so under env SLURM_PREEMPT_BUILDDIR or the repo."""
    return Path(os.environ.get("SLURM_PREEMPT_BUILDDIR", REPO)).resolve()


class ClusterError(RuntimeError):
    """First line: the cause. Following lines, if any: log tails."""

    def __init__(self, cause, detail=""):
        super().__init__(cause + ("\n" + detail if detail else ""))
        self.cause, self.detail = cause, detail


def poll(check, timeout, what, interval=0.2):
    """Call check() until it returns something truthy and return that; ClusterError at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise ClusterError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def _failed(argv, r):
    """The ClusterError for a command that exited non-zero: its last line of output."""
    last = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or [""]
    return ClusterError(f"{' '.join(argv)} failed with status {r.returncode}: {last[0]}")


def _write_atomically(path, text):
    """Write text beside path, then rename it over path: readers see the old or the new file."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def tail(path, lines=20):
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def port_in_use(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "in use"
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def port_open(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


# --- processes ------------------------------------------------------------------------------

def _read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return b"" if "b" in mode else ""


def process_table():
    """pid -> (ppid, state, comm, cmdline) of every process."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _read(f"/proc/{entry}/stat")
        if not stat:
            continue
        head, _, rest = stat.rpartition(")")
        fields = rest.split()
        cmdline = _read(f"/proc/{entry}/cmdline", "rb").replace(b"\0", b" ").decode(errors="replace")
        table[int(entry)] = (int(fields[1]), fields[0], head.partition("(")[2], cmdline)
    return table


def alive(pid):
    stat = _read(f"/proc/{pid}/stat")
    return bool(stat) and stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def processes_of(workdir):
    """Live processes belonging to the cluster in workdir, and all their descendants.

    A process belongs if its command line names a path in workdir, or it is a Slurm daemon
    (slurmdbd, slurmstepd) whose environment does (SLURM_CONF). Never this process or its ancestors.
    """
    key = str(workdir) + "/"
    table = process_table()
    owned = descendants(table, {
        pid for pid, (_, state, comm, cmd) in table.items()
        if state not in "ZX" and (key in cmd or (comm.startswith("slurm") and
                                                 key.encode() in _read(f"/proc/{pid}/environ", "rb")))})
    pid = os.getpid()
    while pid in table and pid > 1:
        owned.discard(pid)
        pid = table[pid][0]
    return owned


def descendants(table, roots):
    """roots and every live process below them in the process table."""
    children = {}
    for pid, (ppid, state, _, _) in table.items():
        if state not in "ZX":
            children.setdefault(ppid, []).append(pid)
    found, stack = set(roots), list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


_spawned = set()  # pids of every daemon any Cluster here started: their Popen reaps them


def become_subreaper():
    """Orphans of our daemons (slurmstepd, slurmscriptd) then become our children, for
    reap_orphans(), instead of init's, which reaps lazily on this platform."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def reap_orphans():
    me = os.getpid()
    for pid, (ppid, state, _, _) in process_table().items():
        if ppid == me and state == "Z" and pid not in _spawned:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def describe(pids):
    table = process_table()
    return ", ".join(f"{p} ({table[p][3].strip()[:60] or table[p][2]})" for p in sorted(pids) if p in table)


def lock_path(name):
    return f"/tmp/slurm-preempt-{name}.lock"


# The pid of the munged a cluster started (start_munge): whichever cluster stops last stops it,
# though another may have started it (clusters side by side: pytest -n, bench/submit_rate.py).
CLUSTER_MUNGED = "/tmp/slurm-preempt-munged.pid"


def cluster_munged():
    """The pid in CLUSTER_MUNGED if that process is a live munged, else None."""
    try:
        pid = int(Path(CLUSTER_MUNGED).read_text())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) and _read(f"/proc/{pid}/comm").strip() == "munged" else None


@contextlib.contextmanager
def machine_lock(name):
    """A lock across the processes of this machine (clusters started side by side by pytest -n
    share munged and the Linux users)."""
    with open(lock_path(name), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --- the cluster ----------------------------------------------------------------------------

class Cluster:
    # stop() names a work dir it keeps after a failure; a harness that names it in its own
    # error line (bench/scale.py) turns this off.
    announces_kept = True

    def __init__(self, workdir=None, with_plugins=True, policy=None, extra_conf="", port_offset=0,
                 keep=None, installed=False, nodes=None):
        """keep: None keeps the work dir only after a failure, True always, False never.
        Env SLURM_PREEMPT_KEEP=1 means True. installed: the plugins and example files of the
        installed Debian package (PluginDir is Slurm's own, the fragment, plugstack.conf and
        preempt.yaml are copied from /usr/share/doc/slurm-preempt/examples), no build tree.
        nodes: how many nodes (n1..nN, one slurmd and port each; default the six of NODES).
        Another count needs other partitions: a subclass overrides node_conf_lines() and
        partition_conf_lines() (bench/scale.py does), and setup_accounting() for its accounts."""
        self.created_dir = workdir is None
        if workdir is None:
            workdir = tempfile.mkdtemp(prefix=DIR_PREFIX, dir="/tmp")
        self.dir = Path(workdir).resolve()
        self.with_plugins = with_plugins
        self.policy = policy
        self.extra_conf = extra_conf
        self.ports = {name: port + port_offset for name, port in PORTS.items()}
        self.nodes = list(NODES) if nodes is None else [f"n{i}" for i in range(1, nodes + 1)]
        self.slurmd_ports = [self.ports["slurmd"] + i for i in range(len(self.nodes))]
        self.keep = True if os.environ.get("SLURM_PREEMPT_KEEP") == "1" else keep
        self.builddir = build_dir()
        self.installed = installed
        self.plugin_dir = Path(STOCK_PLUGIN_DIR) if installed else self.builddir / "pluginlib"
        self.examples = INSTALLED_EXAMPLES if installed else REPO / "etc"
        self.conf = self.dir / "etc" / "slurm.conf"
        self.jobs = self.dir / "jobs"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf))
        self.procs = {}          # name -> Popen, for daemons this object started
        self.conf_overrides = {}  # slurm.conf key -> value (None: left out); see set_conf()
        self.failed = False
        self.startup_seconds = self.teardown_seconds = None
        self._script_count = 0
        self._munge_share = None  # this cluster's shared lock on munged (start_munge)

    # -- context manager
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is not None:
            self.failed = True
        self.stop()

    # -- start-up
    def start(self):
        t0 = time.monotonic()
        try:
            self.check_prerequisites()
        except ClusterError:
            if self.created_dir and not self.keep:
                shutil.rmtree(self.dir, ignore_errors=True)  # nothing in it yet, nothing started
            raise
        become_subreaper()
        try:
            self.write_files()
            self.start_munge()
            self.start_mysqld()
            self.start_slurmdbd()
            self.setup_accounting()
            self.start_slurmctld()
            self.start_slurmds()
            self.wait_nodes_idle()
        except BaseException:
            self.failed = True
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def check_prerequisites(self):
        missing = [b for b in BINARIES if shutil.which(b) is None]
        if missing:
            raise ClusterError(f"missing binary: {', '.join(missing)} (run scripts/install-deps)")
        for port in [*self.ports.values(), *self.slurmd_ports]:
            if port_in_use(port):
                raise ClusterError(f"port {port} is already in use (another cluster? cluster.py down stops it)")
        if self.with_plugins:
            so = self.plugin_dir / "job_submit_preempt.so"
            if not so.exists():
                raise ClusterError(f"{so} is missing: " + ("install the package (scripts/build-deb)"
                                   if self.installed else "build the plugins first (or use --stock)"))
            for name in ("slurm.conf.fragment", self.plugstack_example(), "preempt.yaml"):
                if name == "preempt.yaml" and self.policy is not None:
                    continue
                if not (self.examples / name).exists():
                    raise ClusterError(f"{self.examples / name} is missing")
        if any(self.dir.iterdir()):
            raise ClusterError(f"work dir {self.dir} is not empty")

    def plugstack_example(self):
        """The example plugstack.conf: as installed, or the build tree's template of it."""
        return "plugstack.conf" if self.installed else "plugstack.conf.in"

    def write_files(self):
        d = self.dir
        for sub in ("etc", "log", "pids", "run", "state", "spool", "db"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o755)  # users' clients read etc/, their jobs write jobs/
        self.jobs.mkdir(exist_ok=True)
        os.chmod(self.jobs, 0o1777)
        for node in self.nodes:
            (d / "spool" / node).mkdir(exist_ok=True)
            for i in range(GPUS_PER_NODE):
                dev = d / "dev" / node / f"nvidia{i}"
                dev.parent.mkdir(parents=True, exist_ok=True)
                dev.symlink_to("/dev/null")  # slurmd accepts only character/block devices
        if self.with_plugins and self.conf_overrides:
            # set_conf() before start(): the fragment without the overridden keys, beside
            # slurm.conf, which includes it from there (slurm_conf() reads it for its keys).
            keys = {k.lower() for k in self.conf_overrides}
            fragment = (self.examples / "slurm.conf.fragment").read_text().splitlines()
            (d / "etc" / "slurm.conf.fragment").write_text(
                "\n".join(line for line in fragment if conf_keys(line).isdisjoint(keys)) + "\n")
        (d / "etc" / "slurm.conf").write_text(self.slurm_conf())
        (d / "etc" / "gres.conf").write_text("".join(
            f"NodeName={n} Name=gpu File={d}/dev/{n}/nvidia[0-{GPUS_PER_NODE - 1}]\n" for n in self.nodes))
        dbd = d / "etc" / "slurmdbd.conf"
        dbd.write_text(self.slurmdbd_conf())
        os.chmod(dbd, 0o600)
        if self.with_plugins:
            # The example names the plugin by its installed path; the build tree's is in pluginlib.
            (d / "etc" / "plugstack.conf").write_text(
                (self.examples / self.plugstack_example()).read_text().replace("@slurmplugindir@",
                                                                               str(self.plugin_dir)))
            if self.installed and not self.conf_overrides:  # as a site does: its own copy beside slurm.conf
                shutil.copy(self.examples / "slurm.conf.fragment", d / "etc" / "slurm.conf.fragment")
        policy = d / "etc" / "preempt.yaml"
        if self.policy is not None:
            policy.write_text(self.policy)
        elif self.with_plugins:
            shutil.copy(self.examples / "preempt.yaml", policy)

    def slurm_conf(self):
        """Base config, then the plugin fragment (Include) or stock equivalents, then extra_conf.
        Slurm logs an error for a key given twice (the last wins): a base key that the fragment
        or extra_conf sets is left out of the base instead."""
        d, p = self.dir, self.ports
        first = self.slurmd_ports[0]
        base = [
            f"ClusterName={CLUSTER_NAME}",
            f"SlurmctldHost={HOSTNAME}(127.0.0.1)",
            f"SlurmctldPort={p['slurmctld']}",
            f"SlurmdPort={first}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            "MailProg=/bin/true",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool/%n",
            f"SlurmctldPidFile={d}/run/slurmctld.pid",
            f"SlurmdPidFile={d}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={d}/log/slurmctld.log",
            f"SlurmdLogFile={d}/log/slurmd-%n.log",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "PrologFlags=contain",
            "GresTypes=gpu",
            "MpiDefault=none",
            "ReturnToService=2",
            "AccountingStorageType=accounting_storage/slurmdbd",
            f"AccountingStorageHost={HOSTNAME}",
            f"AccountingStoragePort={p['slurmdbd']}",
            "AccountingStorageEnforce=associations,limits,qos",
            "AccountingStorageTRES=gres/gpu",
            "JobAcctGatherType=jobacct_gather/linux",
            # A requeued job may start again cred_expire + 1 s after its requeue (default
            # 121 s): 10 s lets the requeue tests see the rerun in reasonable time.
            "AuthInfo=cred_expire=10",
        ]
        overrides = {k.lower() for k in self.conf_overrides}
        if self.with_plugins:
            base.insert(0, f"PluginDir={STOCK_PLUGIN_DIR}" if self.installed
                        else f"PluginDir={self.plugin_dir}:{STOCK_PLUGIN_DIR}")
            fragment = self.examples / "slurm.conf.fragment"
            if overrides or self.installed:  # set_conf() wrote the fragment without the overridden keys here
                fragment = d / "etc" / "slurm.conf.fragment"
            later = [f"Include {fragment}"]
            overridden = conf_keys(fragment.read_text()) if fragment.exists() else set()
        else:
            base += STOCK_PREEMPT_CONF.splitlines()
            later, overridden = [], set()
        overridden |= conf_keys(self.extra_conf) | overrides
        later += [f"{k}={v}" for k, v in self.conf_overrides.items() if v is not None]
        lines = [line for line in base if conf_keys(line).isdisjoint(overridden)]
        lines += self.node_conf_lines()
        lines += self.partition_conf_lines()
        lines += later
        if self.extra_conf:
            lines.append(self.extra_conf.rstrip("\n"))
        return "\n".join(lines) + "\n"

    def node_conf_lines(self):
        """slurm.conf's NodeName lines: every node alike, 2 CPUs and GPUS_PER_NODE GPUs."""
        first, last = self.slurmd_ports[0], self.slurmd_ports[-1]
        return [f"NodeName=n[1-{len(self.nodes)}] NodeHostname={HOSTNAME} NodeAddr=127.0.0.1 "
                f"Port=[{first}-{last}] CPUs=2 RealMemory=1000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN"]

    def partition_conf_lines(self):
        """slurm.conf's PartitionName lines (PARTITIONS)."""
        return [" ".join(filter(None, [f"PartitionName={name} Nodes={nodes}", opts, "MaxTime=INFINITE State=UP"]))
                for name, (nodes, opts) in PARTITIONS.items()]

    def set_conf(self, **overrides):
        """Rewrite slurm.conf with these keys set (value None: the key left out), on top of the
        ones set before (reset_conf() forgets them and writes the original file again).
        The keys go after the base config and the fragment, and are taken out of both (Slurm
        logs an error for a key given twice). Each file is replaced atomically (written beside
        it, then renamed), so a daemon reading it at any moment sees the old or the new one.
        Returns the new slurm.conf text; the daemons see it after `scontrol reconfigure`
        (module function reconfigure()) or a restart."""
        self.conf_overrides.update(overrides)
        etc = self.dir / "etc"
        if self.with_plugins and self.conf_overrides:
            keys = {k.lower() for k in self.conf_overrides}
            fragment = (self.examples / "slurm.conf.fragment").read_text().splitlines()
            kept = [line for line in fragment if conf_keys(line).isdisjoint(keys)]
            _write_atomically(etc / "slurm.conf.fragment", "\n".join(kept) + "\n")
        text = self.slurm_conf()
        _write_atomically(self.conf, text)
        return text

    def reset_conf(self):
        """Forget set_conf()'s keys and write the original slurm.conf again."""
        self.conf_overrides = {}
        return self.set_conf()

    def slurmdbd_conf(self):
        d, p = self.dir, self.ports
        return "\n".join([
            "AuthType=auth/munge",
            f"DbdHost={HOSTNAME}",
            "DbdAddr=127.0.0.1",
            f"DbdPort={p['slurmdbd']}",
            "SlurmUser=root",
            "DebugLevel=info",
            f"LogFile={d}/log/slurmdbd.log",
            f"PidFile={d}/run/slurmdbd.pid",
            "StorageType=accounting_storage/mysql",
            "StorageHost=127.0.0.1",
            f"StoragePort={p['mysqld']}",
            "StorageUser=slurm",
            "StoragePass=slurm",
            "StorageLoc=slurm_acct_db",
        ]) + "\n"

    def spawn(self, name, argv):
        """Start a foreground daemon; its stdout+stderr go to log/<name>.out."""
        with open(self.dir / "log" / f"{name}.out", "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=self.env, cwd=self.dir, start_new_session=True)
        _spawned.add(proc.pid)
        (self.dir / "pids" / name).write_text(f"{proc.pid}\n")
        self.procs[name] = proc
        return proc

    def wait_ready(self, name, ready, timeout, what):
        proc = self.procs[name]

        def check():
            if proc.poll() is not None:
                raise ClusterError(f"{name} exited with status {proc.returncode} during start-up",
                                   self.log_tails(name))
            return ready()
        try:
            return poll(check, timeout, f"{name} to {what}")
        except ClusterError as e:
            if e.detail:
                raise
            raise ClusterError(e.cause, self.log_tails(name)) from None

    def log_tails(self, name):
        parts = []
        for path in (self.dir / "log" / f"{name}.log", self.dir / "log" / f"{name}.out"):
            text = tail(path)
            if text:
                parts.append(f"--- tail of {path}\n{text}")
        return "\n".join(parts)

    def munge_works(self):
        cred = self.run(["munge", "-n"], check=False, timeout=10)
        return cred.returncode == 0 and self.run(["unmunge"], check=False, timeout=10,
                                                 input=cred.stdout).returncode == 0

    def start_munge(self):
        Path("/run/munge").mkdir(parents=True, exist_ok=True)
        # Clusters starting side by side (pytest -n) take turns: one starts munged, the others use it.
        with machine_lock("munge"):
            # Every cluster using munged holds this lock shared until it stops: the last one to
            # stop stops a munged some cluster started (release_munge), never the machine's own.
            self._munge_share = open(lock_path("munge-users"), "w")
            fcntl.flock(self._munge_share, fcntl.LOCK_SH)
            if self.munge_works():
                return  # the machine's munged, or one another cluster started
            # Machine-wide paths: other clusters may come to use this munged and outlive this one.
            self.spawn("munged", ["munged", "--force", "--foreground", "--num-threads=4",
                                  "--log-file=/run/munge/munged.log", "--pid-file=/run/munge/munged.pid"])
            self.wait_ready("munged", self.munge_works, 10, "accept credentials")
            Path(CLUSTER_MUNGED).write_text(f"{self.procs['munged'].pid}\n")

    def release_munge(self):
        """This cluster, its daemons gone, no longer uses munged. A munged some cluster started
        (this one or another, CLUSTER_MUNGED) is stopped here, under the machine lock, unless
        another cluster holds the users' lock or runs Slurm daemons; returns its pid when it was
        left running. The machine's own munged is never stopped."""
        with machine_lock("munge"):
            share, self._munge_share = self._munge_share, None
            if share is not None:
                share.close()  # drops this cluster's shared lock
            munged = cluster_munged()
            if munged is None:
                return None
            with open(lock_path("munge-users"), "w") as users:
                try:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    in_use = False
                except BlockingIOError:
                    in_use = True
            # This cluster's daemons are gone: a Slurm daemon still running is another's.
            in_use = in_use or any(comm.startswith("slurm") and state not in "ZX"
                                   for _, state, comm, _ in process_table().values())
            if in_use:
                print(f"munged (pid {munged}) left running: another cluster uses it", file=sys.stderr)
                return munged
            Path(CLUSTER_MUNGED).unlink(missing_ok=True)
            try:
                os.kill(munged, signal.SIGTERM)
            except ProcessLookupError:
                return None

            def gone():
                self.reap()
                return not alive(munged)
            try:
                poll(gone, 10, f"munged (pid {munged}) to exit", interval=0.05)
            except ClusterError:
                os.kill(munged, signal.SIGKILL)
            return None

    def mysql(self, sql):
        return self.run(["mysql", "--no-defaults", f"--socket={self.dir}/run/mysqld.sock", "-uroot",
                         "-e", sql], check=False, timeout=30)

    def start_mysqld(self):
        d = self.dir
        # A temporary directory of its own, not the shared /tmp: a MariaDB server starting
        # removes every #sql* file in its tmpdir (mysql_rm_tmp_tables), so another cluster's
        # mysqld starting beside this bootstrap took its temporary tables from under it
        # (CI, 2026-12-07: "Could not remove temporary table: '/tmp/#sql-temptable-...',
        # error: 2", mysql_install_db status 1).
        tmp = d / "mysql-tmp"
        tmp.mkdir(exist_ok=True)
        r = self.run(["mysql_install_db", "--no-defaults", "--user=root", f"--datadir={d}/db",
                      "--auth-root-authentication-method=socket", "--skip-test-db",
                      f"--tmpdir={tmp}"], check=False)
        if r.returncode != 0:
            (d / "log" / "mysql_install_db.out").write_text(r.stdout + r.stderr)
            raise ClusterError(f"mysql_install_db failed with status {r.returncode}",
                               self.log_tails("mysql_install_db"))
        self.spawn("mysqld", ["mysqld", "--no-defaults", "--user=root", f"--datadir={d}/db",
                              f"--socket={d}/run/mysqld.sock", f"--port={self.ports['mysqld']}",
                              "--bind-address=127.0.0.1", f"--pid-file={d}/run/mysqld.pid",
                              f"--tmpdir={tmp}",
                              f"--log-error={d}/log/mysqld.log", "--skip-log-bin",
                              "--innodb-buffer-pool-size=512M", "--innodb-lock-wait-timeout=900",
                              "--innodb-log-file-size=64M", "--innodb-flush-log-at-trx-commit=2"])
        self.wait_ready("mysqld", lambda: self.mysql("SELECT 1").returncode == 0, 30, "accept connections")
        r = self.mysql("CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';"
                       "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';")
        if r.returncode != 0:
            raise ClusterError(f"creating the MariaDB user slurm failed: {r.stderr.strip()}")

    def start_slurmdbd(self):
        self.spawn("slurmdbd", ["slurmdbd", "-D"])
        self.wait_ready("slurmdbd", lambda: port_open(self.ports["slurmdbd"]), 60,
                        f"listen on port {self.ports['slurmdbd']}")

    def start_slurmctld(self):
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        port = str(self.ports["slurmctld"])
        self.wait_ready("slurmctld", lambda: port in self.run(
            ["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster,controlport"], check=False).stdout,
            60, f"register in slurmdbd with port {port}")

    def start_slurmds(self):
        for node in self.nodes:
            self.start_slurmd(node)

    def start_slurmd(self, node):
        return self.spawn(f"slurmd-{node}", ["slurmd", "-D", "-N", node, "-f", str(self.conf)])

    def setup_accounting(self):
        """Cluster, accounts, users and QOS, through slurmdbd alone: slurmctld, started next,
        loads them all at start-up. Linux users are created if missing."""
        with machine_lock("users"):  # useradd fails while another one holds /etc/passwd
            for user in USERS:
                if self.run(["id", user], check=False).returncode != 0:
                    self.run(["useradd", "--create-home", "--shell", "/bin/bash", user])
        self.sacctmgr("add", "cluster", CLUSTER_NAME)
        self.sacctmgr("add", "account", ",".join(ACCOUNTS))
        for account in ACCOUNTS:
            users = [u for u, a in USERS.items() if a == account]
            if users:
                self.sacctmgr("add", "user", ",".join(users), f"account={account}")
        self.sacctmgr("add", "user", "root", f"account={','.join(ACCOUNTS)}")
        self.sacctmgr("add", "qos", "standby", "PreemptMode=requeue")
        self.sacctmgr("add", "qos", "owner", "Preempt=standby")
        self.sacctmgr("modify", "user", "where", f"name={','.join([*USERS, 'root'])}", "set",
                      f"qos+={','.join(GRANTED_QOS)}")

    def sacctmgr(self, *args):
        r = self.run(["sacctmgr", "-i", *args], check=False)
        if r.returncode != 0 and "Nothing new added" not in r.stdout + r.stderr:
            last = ((r.stderr or r.stdout).strip().splitlines() or [""])[-1]
            raise ClusterError(f"sacctmgr {' '.join(args)} failed with status {r.returncode}: {last}",
                               self.log_tails("slurmdbd"))
        return r

    def node_states(self):
        out = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False).stdout
        return dict(line.split() for line in out.splitlines() if len(line.split()) == 2)

    def wait_nodes_idle(self, timeout=None):
        if timeout is None:  # 60 s for the six nodes; 200 slurmd on two cores register slower
            timeout = max(60, len(self.nodes))

        def check():
            ctld = self.procs.get("slurmctld")  # it may register, then die loading a plugin
            if ctld is not None and ctld.poll() is not None:
                raise ClusterError(f"slurmctld exited with status {ctld.returncode} during start-up",
                                   self.log_tails("slurmctld"))
            for node in self.nodes:
                proc = self.procs.get(f"slurmd-{node}")
                if proc is not None and proc.poll() is not None:
                    raise ClusterError(f"slurmd-{node} exited with status {proc.returncode} during "
                                       "start-up", self.log_tails(f"slurmd-{node}"))
            states = self.node_states()
            return all(states.get(n) == "idle" for n in self.nodes)
        try:
            poll(check, timeout, "all six nodes to be idle" if self.nodes == NODES
                 else f"all {len(self.nodes)} nodes to be idle", interval=0.2 if len(self.nodes) <= 6 else 1)
        except ClusterError as e:
            if e.detail:
                raise
            states = self.node_states()
            bad = [n for n in self.nodes if states.get(n) != "idle"]
            shown = states if len(self.nodes) <= 6 else \
                {st: sum(1 for n in self.nodes if states.get(n) == st) for st in {states.get(n) for n in self.nodes}}
            raise ClusterError(f"{e.cause} (states: {shown})",
                               self.log_tails("slurmctld") + "\n" + self.log_tails(f"slurmd-{bad[0]}")) from None

    # -- faults: stop and start one daemon while the others run (test_soak, scripts/soak).
    # Each helper returns once the daemon is gone or answers again, or raises ClusterError
    # (cause first, then the daemon's log tail) at its deadline. Jobs keep running throughout:
    # slurmstepd outlives slurmd and slurmctld.

    def stop_daemon(self, name, sig=signal.SIGTERM, timeout=60):
        """Send `sig` to the daemon in pids/<name> (slurmctld, slurmdbd, slurmd-n3, ...) and wait
        until it and the helpers it forked (slurmctld's slurmscriptd) have exited and are
        reaped. TERM is a clean shutdown (slurmctld saves its state), KILL a crash. Returns the
        pid it had; None if it was not running."""
        pid = self.running_pid(name)
        if pid is None:
            return None
        helpers = {p for p, (ppid, state, comm, _) in process_table().items()
                   if ppid == pid and comm == "slurmscriptd" and state not in "ZX"}
        os.kill(pid, sig)

        def gone():
            self.reap()
            return not any(alive(p) for p in {pid} | helpers)
        try:
            poll(gone, timeout, f"{name} (pid {pid}) to exit after {signal.Signals(sig).name}",
                 interval=0.05)
        except ClusterError as e:
            raise ClusterError(e.cause, self.log_tails(name)) from None
        return pid

    def start_refused(self, policy_text, timeout=60):
        """Restart slurmctld with `policy_text` as preempt.yaml and wait for it to refuse to
        start. Returns (exit status, what it logged meanwhile: slurmctld.log and .out). The
        cluster's own policy and slurmctld are back, with every node answering, before it
        returns: a test of a policy slurmctld must refuse costs a restart, not a cluster."""
        policy = self.dir / "etc" / "preempt.yaml"
        good = policy.read_text()
        logs = [self.dir / "log" / "slurmctld.log", self.dir / "log" / "slurmctld.out"]
        sizes = [p.stat().st_size if p.exists() else 0 for p in logs]
        self.stop_daemon("slurmctld")
        poll(lambda: not port_open(self.ports["slurmctld"]), timeout, "slurmctld's port to close")
        policy.write_text(policy_text)
        proc = None
        try:
            proc = self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
            poll(lambda: proc.poll() is not None, timeout, "slurmctld to refuse the policy")
            text = "".join(_read(p)[n:] if p.exists() else "" for p, n in zip(logs, sizes))
            return proc.returncode, text
        finally:
            if proc is not None and proc.poll() is None:
                self.stop_daemon("slurmctld")
            policy.write_text(good)
            self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
            self.wait_slurmctld(timeout)
            self.wait_nodes_idle(timeout)

    def slurmctld_answers(self):
        """True when slurmctld's process runs and it answers `scontrol ping` as UP."""
        if not self.running_pid("slurmctld"):
            return False
        r = self.run(["scontrol", "ping"], check=False, timeout=30)
        return r.returncode == 0 and re.search(r"Slurmctld\(primary\) at \S+ is UP", r.stdout) is not None

    def wait_slurmctld(self, timeout=60):
        """Poll until slurmctld answers `scontrol ping` (ClusterError at the deadline, or at
        once if it exits meanwhile)."""
        if "slurmctld" not in self.procs:
            return poll(self.slurmctld_answers, timeout, "slurmctld to answer scontrol ping")
        return self.wait_ready("slurmctld", self.slurmctld_answers, timeout, "answer scontrol ping")

    def restart_slurmctld(self, sig=signal.SIGTERM, downtime=0.0, timeout=60):
        """Stop slurmctld with `sig` (TERM: clean shutdown; KILL: a crash, state as last saved),
        leave it down `downtime` s from its exit, start it again with the same slurm.conf and
        wait until it answers. Returns the seconds from the signal to the first answer."""
        t0 = time.monotonic()
        self.stop_daemon("slurmctld", sig, timeout)
        poll(lambda: not port_open(self.ports["slurmctld"]), timeout, "slurmctld's port to close")
        down = time.monotonic()
        if downtime > 0:
            time.sleep(downtime)  # the outage itself: nothing to poll, the daemon is gone
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self.wait_slurmctld(max(timeout - (down - t0), 10))
        return time.monotonic() - t0

    def slurmd_start_time(self, node):
        """SlurmdStartTime of the node as slurmctld has it ("" if unknown)."""
        out = self.run(["scontrol", "-o", "show", "node", node], check=False).stdout
        m = re.search(r"\bSlurmdStartTime=(\S+)", out)
        return m.group(1) if m else ""

    def restart_slurmd(self, node, sig=signal.SIGTERM, downtime=0.0, timeout=60):
        """Stop the slurmd of one node (its jobs' slurmstepds keep running), leave it down
        `downtime` s, start it again and wait until slurmctld has its new registration (a new
        SlurmdStartTime) and does not list the node as not responding or down. Returns the
        seconds from the signal to that point."""
        name = f"slurmd-{node}"
        before = self.slurmd_start_time(node)
        t0 = time.monotonic()
        self.stop_daemon(name, sig, timeout)
        if downtime > 0:
            time.sleep(downtime)  # the outage itself
        # SlurmdStartTime has one-second resolution: a restart within the second of the
        # previous start would look unchanged.
        poll(lambda: time.strftime("%Y-%m-%dT%H:%M:%S") != before, 2, "the next second", interval=0.05)
        self.start_slurmd(node)

        def registered():
            start = self.slurmd_start_time(node)
            if not start or start == before:
                return False
            state = self.run(["sinfo", "-h", "-n", node, "-o", "%t"], check=False).stdout.strip()
            return state and not state.endswith("*") and not state.startswith(("down", "drain", "fail"))
        self.wait_ready(name, registered, timeout, "register with slurmctld again")
        return time.monotonic() - t0

    def stop_slurmdbd(self, sig=signal.SIGTERM, timeout=60):
        """Stop slurmdbd (slurmctld queues accounting records meanwhile) and wait until its
        port is closed. Start it again with start_slurmdbd()."""
        self.stop_daemon("slurmdbd", sig, timeout)
        poll(lambda: not port_open(self.ports["slurmdbd"]), timeout, "slurmdbd's port to close")

    def restart_slurmdbd(self, sig=signal.SIGTERM, downtime=0.0, timeout=60):
        """stop_slurmdbd(), `downtime` s of outage, start_slurmdbd() (waits for its port), and
        wait until it answers sacctmgr. Returns the seconds from the signal to that point."""
        t0 = time.monotonic()
        self.stop_slurmdbd(sig, timeout)
        if downtime > 0:
            time.sleep(downtime)  # the outage itself
        self.start_slurmdbd()
        self.wait_slurmdbd(timeout)
        return time.monotonic() - t0

    def wait_slurmdbd(self, timeout=60):
        """Poll until slurmdbd answers `sacctmgr show cluster` with this cluster."""
        poll(lambda: CLUSTER_NAME in self.run(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"],
                                              check=False, timeout=30).stdout.split(),
             timeout, "slurmdbd to answer sacctmgr")

    # -- teardown
    def stop(self):
        """Kill everything this cluster started and wait for it to be gone. Safe to call twice."""
        t0 = time.monotonic()
        try:
            if self.dir.exists():
                self.cancel_jobs()
                self.kill_all()
        finally:
            self.teardown_seconds = time.monotonic() - t0
            keep = self.failed if self.keep is None else self.keep
            if keep:
                if self.failed and self.announces_kept:
                    print(f"cluster work dir kept: {self.dir}", file=sys.stderr)
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def cancel_jobs(self):
        """Best effort: let slurmctld end running jobs cleanly before the daemons go."""
        if not port_open(self.ports["slurmctld"]) or not self.running_pid("slurmctld"):
            return
        try:
            jobs = self.run(["squeue", "-h", "-o", "%A"], check=False, timeout=10).stdout.split()
            if jobs:
                self.run(["scancel", *jobs], check=False, timeout=10)
                poll(lambda: not self.run(["squeue", "-h", "-o", "%A"], check=False, timeout=10).stdout.strip(),
                     15, "jobs to end")
        except ClusterError:
            pass

    def running_pid(self, name):
        """The pid of the daemon in pids/<name> if it runs (and that pid is still ours), else None."""
        try:
            pid = int((self.dir / "pids" / name).read_text())
        except (OSError, ValueError):
            return None
        key = (str(self.dir) + "/").encode()
        ours = alive(pid) and any(key in _read(f"/proc/{pid}/{f}", "rb") for f in ("cmdline", "environ"))
        return pid if ours else None

    def kill_all(self):
        """SIGTERM the daemons, SIGKILL job processes (slurmstepd and below: scancel had its
        chance), SIGKILL whatever is left after 15 s, and wait until all are gone."""
        pids = {self.running_pid(p.name) for p in (self.dir / "pids").glob("*")} - {None}
        pids |= processes_of(self.dir)
        pids.discard(cluster_munged())  # stopped last, if no other cluster uses it (release_munge)
        killed = set()
        for final, timeout in ((False, 15), (True, 10)):
            table = process_table()
            jobs = descendants(table, {p for p in pids if p in table and table[p][2] == "slurmstepd"})
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL if final or pid in jobs else signal.SIGTERM)
                except ProcessLookupError:
                    pass
            killed |= pids

            def gone():
                nonlocal pids
                self.reap()
                pids = {p for p in pids | processes_of(self.dir) if alive(p)}
                return not pids
            try:
                poll(gone, timeout, "cluster processes to exit", interval=0.1)
                break
            except ClusterError:
                if final:
                    raise ClusterError(f"processes survived SIGKILL: {describe(pids)}") from None

        def reaped():  # orphans not ours are reaped by init, here lazily: let no zombie linger
            self.reap()
            return not any(os.path.exists(f"/proc/{p}") for p in killed)
        try:
            poll(reaped, 10, "zombies to be reaped")
        except ClusterError:
            pass
        self.release_munge()

    def reap(self):
        for proc in self.procs.values():
            proc.poll()
        reap_orphans()

    # -- helpers for tests
    def run(self, cmd, user=None, check=True, timeout=120, input=None):
        """Run a command (argv list) with SLURM_CONF set, as root or as `user`, in the jobs dir."""
        argv = ["runuser", "-u", user, "--", *cmd] if user else list(cmd)
        try:
            r = subprocess.run(argv, env=self.env, cwd=self.jobs if self.jobs.exists() else self.dir,
                               capture_output=True, text=True, timeout=timeout, input=input)
        except subprocess.TimeoutExpired:
            raise ClusterError(f"{' '.join(argv)} timed out after {timeout} s") from None
        if check and r.returncode != 0:
            raise _failed(argv, r)
        return r

    def update_job(self, cmd, user=None, check=True, timeout=60):
        """run() for a command that updates a job (scontrol release, hold, update): Slurm
        refuses such an update while slurmdbd has not sent the job's database index back
        ("Job update not available right now, the DB index is being set, try again in a bit",
        ESLURM_JOB_SETTING_DB_INX), as after a slurmctld restart; it is tried again, as asked,
        until `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.run(cmd, user=user, check=False)
            if r.returncode == 0 or "the DB index is being set" not in r.stderr or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
        if check and r.returncode != 0:
            raise _failed(cmd, r)
        return r

    def sbatch(self, args, script_text, user=None):
        """Submit script_text (a #!/bin/bash line is added if absent); return the job id."""
        self._script_count += 1
        script = self.jobs / f"job-{self._script_count}.sh"
        script.write_text(script_text if script_text.startswith("#!") else "#!/bin/bash\n" + script_text)
        script.chmod(0o755)
        r = self.run(["sbatch", "--parsable", f"--output={self.jobs}/%j.out", *args, str(script)],
                     user=user)
        return int(r.stdout.strip().split(";")[0])

    def sacct(self, jobid, fields, extra=()):
        """Rows (job and its steps) as dicts of the given fields, as slurmdbd has them."""
        fields = list(fields)
        names = ["JobID", *[f for f in fields if f != "JobID"]]
        out = self.run(["sacct", "-n", "-P", "-j", str(jobid), f"--format={','.join(names)}", *extra]).stdout
        return [dict(zip(names, line.split("|"))) for line in out.splitlines() if line]

    def job_state(self, jobid):
        """State from slurmctld while it knows the job, else from sacct; None if neither does."""
        out = self.run(["scontrol", "-o", "show", "job", str(jobid)], check=False).stdout
        m = re.search(r"\bJobState=(\S+)", out)
        if m:
            return m.group(1)
        rows = [r for r in self.sacct(jobid, ["State"]) if r["JobID"] == str(jobid)]
        return rows[0]["State"].split()[0] if rows else None

    def wait_job_state(self, jobid, states, timeout=60):
        """Poll until the job is in one of `states`; return it. Fails early on another final state."""
        states = {states} if isinstance(states, str) else set(states)
        seen = []

        def check():
            state = self.job_state(jobid)
            seen.append(state)
            if state in FINAL_STATES and state not in states:
                raise ClusterError(f"job {jobid} ended {state}, expected {'/'.join(sorted(states))}",
                                   tail(self.jobs / f"{jobid}.out"))
            return state if state in states else None
        try:
            return poll(check, timeout, f"job {jobid} to be {'/'.join(sorted(states))}", interval=0.3)
        except ClusterError as e:
            if e.cause.startswith(f"job {jobid} ended"):
                raise
            raise ClusterError(f"{e.cause} (last state {seen[-1] if seen else None})") from None

    def log(self, name):
        """Text of log/<name>.log (slurmctld, slurmdbd, slurmd-n1, mysqld), or of
        log/<name> if name has a suffix (slurmctld.out holds a daemon's stdout/stderr)."""
        path = self.dir / "log" / (name if "." in name else f"{name}.log")
        return _read(path)

    def wait_log(self, name, regex, timeout=30):
        """Poll log(name) until regex matches; return the match."""
        pattern = re.compile(regex)
        return poll(lambda: pattern.search(self.log(name)), timeout, f"/{regex}/ in the {name} log")


# --- helpers for tests, the demo and the benchmarks -------------------------------------------
# Module functions taking the Cluster first: installing a policy, submitting, inspecting jobs.

PREEMPTCTL = build_dir() / "tools" / "preemptctl" / "preemptctl"
SITE_POLICY = REPO / "etc" / "preempt.yaml"

_last_reconfigure = 0


def reconfigure(cluster, timeout=120):
    """scontrol reconfigure, never twice in one wall-clock second (job_submit/preempt notices a
    reconfigure by slurm_conf.last_update, which has one-second resolution). With the plugins,
    returns once each loaded one has the policy in force: they read preempt.yaml again in their
    own threads, never under slurmctld's locks, and each logs "policy in force after
    reconfigure"."""
    global _last_reconfigure
    poll(lambda: int(time.time()) > _last_reconfigure, 3, "the next second", interval=0.05)
    mark = len(cluster.log("slurmctld"))
    cluster.run(["scontrol", "reconfigure"], timeout=timeout)
    _last_reconfigure = int(time.time())
    if cluster.with_plugins:
        conf = re.sub(r"^Include\s+(\S+)", lambda m: _read(m.group(1)), cluster.conf.read_text(),
                      flags=re.M)

        def last(key):  # Slurm takes a key's last value
            values = re.findall(rf"^{key}=(\S*)", conf, re.M)
            return values[-1] if values else ""
        loaded = [p for p, key, value in (("job_submit/preempt", "JobSubmitPlugins", "preempt"),
                                          ("priority/fairshare", "PriorityType", "priority/fairshare"),
                                          ("preempt/quota", "PreemptType", "preempt/quota"))
                  if value in last(key).split(",")]
        for plugin in loaded:
            pattern = re.compile(rf"{plugin}: policy in force after reconfigure")
            poll(lambda: pattern.search(cluster.log("slurmctld")[mark:]), 15,
                 f"{plugin} to have the policy in force after the reconfigure", interval=0.05)


def qos_sync(cluster, policy=None):
    """preemptctl qos-sync [--policy FILE]; its stdout lines."""
    args = [str(PREEMPTCTL), "qos-sync"] + (["--policy", str(policy)] if policy else [])
    return cluster.run(args).stdout.splitlines()


def assoc_mgr_qos(cluster):
    """slurmctld's copy of each QOS: name -> {field: value} from `scontrol show assoc_mgr`."""
    out = cluster.run(["scontrol", "show", "assoc_mgr", "flags=qos"]).stdout
    found = {}
    for m in re.finditer(r"QOS=(\w+)\(\d+\)((?:.|\n)*?)(?=\nQOS=|\Z)", out):
        found[m.group(1)] = dict(re.findall(r"(\w+)=(\S*)", m.group(2)))
    return found


def wait_qos_walltimes(cluster, minutes, timeout=30):
    """Poll until slurmctld's copy of each QOS has MaxWallPJ = minutes[qos]: once it does, the
    sacctmgr change that carried the walltimes has reached slurmctld."""
    def check():
        have = assoc_mgr_qos(cluster)
        return all(have.get(q, {}).get("MaxWallPJ") == str(m) for q, m in minutes.items())
    poll(check, timeout, f"slurmctld to load the QOS walltimes {minutes}")


def sacctmgr_qos(cluster):
    """QOS as slurmdbd has them: name -> {field: value}."""
    fields = ["Name", "Preempt", "PreemptMode", "GraceTime", "PreemptExemptTime", "MaxWall",
              "MaxJobsPU", "MaxTRESPU"]
    out = cluster.run(["sacctmgr", "-nP", "show", "qos", f"format={','.join(fields)}"]).stdout
    rows = [dict(zip(fields, line.split("|"))) for line in out.splitlines() if line]
    return {r["Name"]: r for r in rows}


def apply_policy(cluster, text, walltimes=None):
    """Install policy text beside slurm.conf, reconfigure, sync the QOS from it. With
    walltimes ({qos: minutes}), wait until slurmctld has the synced QOS."""
    (cluster.dir / "etc" / "preempt.yaml").write_text(text)
    reconfigure(cluster)
    lines = qos_sync(cluster)
    if not lines or not lines[-1].startswith("preemptctl: "):
        raise ClusterError(f"preemptctl qos-sync printed {lines}")
    if walltimes:
        wait_qos_walltimes(cluster, walltimes)
    return lines


def restore_site_policy(cluster):
    shutil.copy(SITE_POLICY, cluster.dir / "etc" / "preempt.yaml")
    reconfigure(cluster)
    qos_sync(cluster)



@contextlib.contextmanager
def policy_installed(cluster, text, walltimes=None):
    """With `text` installed beside slurm.conf and synced (apply_policy), from an empty queue;
    afterwards an empty queue again and the site policy back."""
    cancel_all(cluster)
    apply_policy(cluster, text, walltimes)
    try:
        yield cluster
    finally:
        cancel_all(cluster)
        restore_site_policy(cluster)


def try_sbatch(cluster, args, user="alice", script="true"):
    """sbatch that may fail: the CompletedProcess."""
    return cluster.run(["sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap", script],
                       user=user, check=False)


def queued(cluster, user):
    """Ids of the user's jobs slurmctld still holds (any state)."""
    return cluster.run(["squeue", "-h", "-u", user, "-o", "%i"]).stdout.split()


# States a run's sacct record keeps once slurmdbd has its end: a final state, or the record of a
# run that was requeued.
ENDED_RUN_STATES = FINAL_STATES | {"PREEMPTED", "REQUEUED"}


def settled_runs(cluster, jobid, runs, timeout=90):
    """The job's sacct -D records (dicts: State, Start, End), once slurmdbd has settled them:
    at least `runs` records, each ended (ENDED_RUN_STATES, an End time). After a slurmdbd
    outage Slurm 22.05 writes the last run first and the earlier runs' ends up to ~10 s later:
    slurmctld's db-index thread (DBD_SEND_MULT_JOB_START, every 5 s, direct) reconnects at
    once and sends the start of every job without a db index, state and all, while the agent
    that holds the queued job-end records waits 10 s after its last failed connection
    (slurmdbd_agent.c _agent). Meanwhile sacct shows an earlier run RUNNING and the last
    COMPLETED with End=Unknown (measured: 2 to 5 s, stock `scontrol requeue` alike). Returns
    what sacct shows at the deadline if it never settles: a record stuck RUNNING is a defect."""
    def rows():
        return [r for r in cluster.sacct(jobid, ["State", "Start", "End"], ["-D"]) if r["JobID"] == str(jobid)]

    def settled():
        try:
            found = rows()
        except ClusterError:  # slurmdbd not answering yet
            return None
        ended = all(r["State"].split()[0] in ENDED_RUN_STATES and r["End"] not in ("Unknown", "") for r in found)
        return found if len(found) >= runs and ended else None
    try:
        return poll(settled, timeout, f"sacct to have job {jobid}'s {runs} run(s) ended", interval=1)
    except ClusterError:
        try:
            return rows()
        except ClusterError:
            return []


def job_info(cluster, jobid):
    """`scontrol -o show job` as a dict (values never contain ' Key=')."""
    out = cluster.run(["scontrol", "-o", "show", "job", str(jobid)]).stdout.strip()
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"([A-Za-z][\w/:]*)=(.*?)(?=\s+[A-Za-z][\w/:]*=|$)", out)}


def ts(text):
    """A Slurm time stamp (local time, ISO) as epoch seconds."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp()


# A line of StateSaveLocation/slurm_preempt_lock_stats (test_owners.py, bench/scale.py).
LOCK_LINE = re.compile(r"^(.*) (write|read|none) count=(\d+) units=(\d+) max_us=(\d+) p50_us<=\d+ p99_us<=\d+ "
                       r"sum_us=(\d+) hist=(\S*) cpu_max_us=(\d+) cpu_p50_us<=\d+ cpu_p99_us<=\d+ "
                       r"cpu_sum_us=(\d+) cpu_hist=(\S*) cpu_max_at=(\d+) cpu_max_faults=(\d+) "
                       r"cpu_max_vcsw=(\d+) cpu_max_ivcsw=(\d+) faults=(\d+) "
                       r"cpu_max_unswitched_us=(\d+)$")


def parse_lock_stats(text):
    """slurm_preempt_lock_stats (lib/watch_events.hpp LockStats::format): per site its kind, count,
    units of work, and for wall and thread-CPU time: max, sum (us) and histogram; for the hold with
    the longest CPU time when it ended (epoch s), its page faults and context switches
    (voluntary, involuntary); the page faults of all holds; the longest CPU time of a hold in which
    the thread was never switched out."""
    def hist(field):
        return {int(b): int(c) for b, c in (x.split(":") for x in field.split(",") if x)}
    sites = {}
    for line in text.splitlines():
        m = LOCK_LINE.match(line)
        if not m:
            if line.strip():  # a plugin built from other sources: say so, not "no such site"
                raise ClusterError(f"slurm_preempt_lock_stats line not in the expected format: {line!r}")
            continue
        sites[m.group(1)] = {"kind": m.group(2), "count": int(m.group(3)), "units": int(m.group(4)),
                             "max_us": int(m.group(5)), "sum_us": int(m.group(6)), "hist": hist(m.group(7)),
                             "cpu_max_us": int(m.group(8)), "cpu_sum_us": int(m.group(9)),
                             "cpu_hist": hist(m.group(10)),
                             "cpu_max_detail": {"at": int(m.group(11)), "faults": int(m.group(12)),
                                                "vcsw": int(m.group(13)), "ivcsw": int(m.group(14))},
                             "faults": int(m.group(15)), "cpu_max_unswitched_us": int(m.group(16))}
    return sites


def process_start(pid):
    """Epoch at which process `pid` started (/proc/PID/stat's starttime after /proc/stat's btime)."""
    with open(f"/proc/{pid}/stat") as f:
        ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def log_mark(cluster):
    return len(cluster.log("slurmctld"))


def wait_log_after(cluster, mark, regex, timeout=20):
    pattern = re.compile(regex)
    return poll(lambda: pattern.search(cluster.log("slurmctld")[mark:]), timeout,
                f"/{regex}/ in slurmctld.log")


def hold_steady(cluster, expected, seconds):
    """Poll for `seconds` that every job keeps its expected state; fail at the first change."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for jobid, state in expected.items():
            now = cluster.job_state(jobid)
            assert now == state, f"job {jobid} became {now}, expected it to stay {state}"
        time.sleep(0.5)


def cancel_all(cluster, timeout=90):
    """Cancel every job until the queue stays empty. Each poll cancels what is listed then: a
    preempted job that exited during its grace is COMPLETED for up to a second before the
    watcher requeues it, so one snapshot of the queue can miss it. 90 s: a step whose end
    slurmctld missed (its completion message sent during an `scontrol reconfigure`) is sent
    again by slurmstepd a minute later, and its job stays COMPLETING until then."""
    empty_since = []

    def stays_empty():
        jobs = cluster.run(["squeue", "-h", "-o", "%A"], check=False).stdout.split()
        if jobs:
            cluster.run(["scancel", *jobs], check=False)
            empty_since.clear()
            return False
        if not empty_since:
            empty_since.append(time.monotonic())
        return time.monotonic() - empty_since[0] >= 1.5  # past the watcher's next pass (1 s)
    poll(stays_empty, timeout, "the queue to be empty", interval=0.3)


# Jobs that run until released: `release(cluster, jobid)` creates jobs/release.<jobid>, and the
# job ends within a second. The first line of jobs/<jobid>.out is written at each start:
# "start <epoch> restart=<n> node=<node>".
UNTIL_RELEASED = """\
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME"
while [ ! -e "$SLURM_SUBMIT_DIR/release.$SLURM_JOB_ID" ]; do sleep 0.5; done
"""


def release(cluster, *jobids):
    for jobid in jobids:
        path = cluster.jobs / f"release.{jobid}"
        path.touch()
        path.chmod(0o666)


def job_table(cluster):
    """Every job slurmctld holds: {jobid: {"name", "user", "state", "nodes"}} (from squeue)."""
    out = cluster.run(["squeue", "-h", "-o", "%A|%j|%u|%T|%N"]).stdout
    table = {}
    for line in out.splitlines():
        jobid, name, user, state, nodes = line.split("|")
        table[int(jobid)] = {"name": name, "user": user, "state": state, "nodes": nodes}
    return table


def expand_nodes(nodes):
    """A Slurm host list as names: "n[3-4],n6" -> ["n3", "n4", "n6"]; "" or "(null)" -> []."""
    names = []
    for prefix, ranges, single in re.findall(r"([A-Za-z]+)\[([\d,-]+)\]|([A-Za-z]+\d+)", nodes or ""):
        if single:
            names.append(single)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            names += [f"{prefix}{i}" for i in range(int(lo), int(hi or lo) + 1)]
    return names


# --- command line ---------------------------------------------------------------------------

def _cluster_dirs(args):
    if args.dir:
        return [Path(args.dir).resolve()]
    return sorted(Path(p) for p in glob.glob(f"/tmp/{DIR_PREFIX}*") if (Path(p) / "pids").is_dir())


def main(argv=None):
    parser = argparse.ArgumentParser(description="Six-node Slurm test cluster on this machine.")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster and print the environment to use")
    up.add_argument("--dir", help="work dir (must be empty or absent; default a new /tmp dir)")
    up.add_argument("--stock", action="store_true", help="stock Slurm, without the plugins")
    down = sub.add_parser("down", help="stop a cluster (default: every one under /tmp)")
    down.add_argument("--dir")
    down.add_argument("--keep", action="store_true", help="keep the work dir")
    status = sub.add_parser("status", help="show which daemons run")
    status.add_argument("--dir")
    args = parser.parse_args(argv)

    if args.command == "up":
        if args.dir:
            Path(args.dir).mkdir(parents=True, exist_ok=True)
        cluster = Cluster(workdir=args.dir, with_plugins=not args.stock)
        try:
            cluster.start()
        except ClusterError as e:
            print(f"cluster.py up: {e}", file=sys.stderr)
            return 1
        print(f"export SLURM_CONF={cluster.conf}")
        print(f"# up in {cluster.startup_seconds:.1f} s; work dir {cluster.dir}; stop with: "
              f"/usr/bin/python3 {Path(__file__).resolve()} down --dir {cluster.dir}")
        return 0

    dirs = _cluster_dirs(args)
    if not dirs:
        print("no cluster found under /tmp", file=sys.stderr)
        return 0 if args.command == "down" else 1
    rc = 0
    for d in dirs:
        cluster = Cluster(workdir=d, keep=args.keep if args.command == "down" else True)
        if args.command == "down":
            try:
                cluster.stop()
                print(f"{d}: down in {cluster.teardown_seconds:.1f} s"
                      + ("" if cluster.dir.exists() else ", work dir removed"))
            except ClusterError as e:
                print(f"cluster.py down: {e}", file=sys.stderr)
                rc = 1
        else:
            names = sorted(p.name for p in (d / "pids").glob("*"))
            print(f"{d}: SLURM_CONF={cluster.conf}")
            for name in names:
                print(f"  {name:12} {'running' if cluster.running_pid(name) else 'not running'}")
            if cluster.running_pid("slurmctld"):
                print(cluster.run(["sinfo"], check=False).stdout.rstrip())
    return rc


if __name__ == "__main__":
    sys.exit(main())
