"""A backup controller (slurm.conf's second SlurmctldHost) beside the plugins, on a real cluster of
its own (SLURM_PREEMPT_PORT_OFFSET + 1400): two slurmctld on one machine, each in a UTS and mount
namespace of its own (hostname ctl1 or ctl2, an /etc/hosts that names it 127.0.0.1 or
127.0.0.2), bound to its own address (CommunicationParameters=NoCtldInAddrAny), with the same
StateSaveLocation.

When the primary comes back, the backup gives control back and waits again, its copy of the
job list as it was then: the watcher in it must stop acting on that copy (no kill, no requeue,
no signal, no write of the watcher's state file, which the primary now writes), and must read
that file again when it takes over a second time.
"""

import re
import subprocess
import time

import pytest
from conftest import PORT_OFFSET

from cluster import CLUSTER_POLICY_SHAPE, HOSTNAME, Cluster, ClusterError, apply_policy, job_info, poll, ts

GRACE = 30  # s: the backup takes over, then gives control back, during the victim's grace

POLICY = f"""\
version: 1
qos:
  standby:
    preemptible: true
    boost: 1000
    grace: {GRACE}s
    requeue: user
    min_runtime: 0
    limits:
      max_walltime: 330m
  normal:
    preempts: [standby]
    limits:
      max_walltime: 180m
  owner:
    preempts: [standby]
""" + CLUSTER_POLICY_SHAPE

# Ignores its checkpoint signal: only the kill at its grace's end stops it.
IGNORES_SIGNALS = """\
trap '' TERM USR1 USR2
echo "start $(date +%s.%N) restart=${SLURM_RESTART_COUNT:-0}"
while true; do sleep 1; done
"""
WHOLE_N3 = ["-w", "n3", "--exclusive", "-N1", "--time=30"]
CONTROLLERS = {"ctl1": "127.0.0.1", "ctl2": "127.0.0.2"}


class BackupCluster(Cluster):
    """The test cluster with two controllers: ctl1 (daemon name "slurmctld", the primary) and
    ctl2 ("slurmctld-backup"). Both read the same slurm.conf; ctl2's namespace puts ctl2/run
    and ctl2/log in place of run/ and log/, for a pid file and a log of its own."""

    def slurm_conf(self):
        text = super().slurm_conf()
        primary = f"SlurmctldHost={HOSTNAME}(127.0.0.1)\n"
        assert text.count(primary) == 1, f"no {primary!r} in the base slurm.conf to replace"
        hosts = "".join(f"SlurmctldHost={name}({addr})\n" for name, addr in CONTROLLERS.items())
        text = text.replace(primary, hosts)
        return text + "CommunicationParameters=NoCtldInAddrAny\nSlurmctldTimeout=10\n"

    def write_files(self):
        super().write_files()
        for sub in ("run", "log"):
            (self.dir / "ctl2" / sub).mkdir(parents=True)
        (self.dir / "log" / "slurmctld-backup.log").symlink_to(self.dir / "ctl2" / "log" / "slurmctld.log")
        for name in CONTROLLERS:
            (self.dir / "etc" / f"hosts.{name}").write_text(
                f"127.0.0.1 localhost {HOSTNAME}\n" + "".join(f"{addr} {n}\n" for n, addr in CONTROLLERS.items()))

    def controller_argv(self, host):
        d = self.dir
        mounts = [f"mount --bind {d}/etc/hosts.{host} /etc/hosts"]
        if host == "ctl2":
            mounts += [f"mount --bind {d}/ctl2/{sub} {d}/{sub}" for sub in ("run", "log")]
        return ["unshare", "--uts", "--mount", "sh", "-c",
                " && ".join([f"hostname {host}", *mounts, f"exec slurmctld -D -f {self.conf}"])]

    def start_slurmctld(self):
        self.start_primary()
        port = str(self.ports["slurmctld"])
        self.wait_ready("slurmctld", lambda: port in self.run(
            ["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster,controlport"], check=False).stdout,
            60, f"register in slurmdbd with port {port}")

    def start_primary(self):
        self.spawn("slurmctld", self.controller_argv("ctl1"))

    def start_backup(self):
        self.spawn("slurmctld-backup", self.controller_argv("ctl2"))

    def ping(self):
        """{"primary": "UP"/"DOWN", "backup": ...} from `scontrol ping`."""
        out = self.run(["scontrol", "ping"], check=False, timeout=30).stdout
        return {m.group(1): m.group(2) for m in re.finditer(r"Slurmctld\((\w+)\) at \S+ is (\w+)", out)}


@pytest.fixture(scope="module")
def ha():
    # Each slurmctld needs a hostname and an /etc/hosts of its own: root's unshare.
    probe = subprocess.run(["unshare", "--uts", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise ClusterError(f"`unshare --uts --mount` failed ({probe.stderr.strip()}): this test runs two "
                           "slurmctld in namespaces of their own and needs root with CAP_SYS_ADMIN")
    c = BackupCluster(with_plugins=True, policy=POLICY, port_offset=PORT_OFFSET + 1400)
    with c:
        apply_policy(c, POLICY, {"standby": 330, "normal": 180})
        c.start_backup()
        poll(lambda: c.ping().get("backup") == "UP", 60, "the backup controller to answer scontrol ping")
        yield c


def log_after(c, name, mark, regex, timeout):
    pattern = re.compile(regex, re.M)
    return poll(lambda: pattern.search(c.log(name)[mark:]), timeout, f"/{regex}/ in {name}.log")


def takeover(c, name, mark):
    """`scontrol takeover`: the controller in control hands over to the backup at once (the
    primary exits). Waits until `name`'s log, after `mark`, says it runs in control and its
    watcher read the state file."""
    c.run(["scontrol", "takeover"])
    log_after(c, name, mark, r"Running as primary controller", 60)
    return log_after(c, name, mark, r"job_submit/preempt: (watcher state read from|no watcher state at) .*", 30)


def test_a_backup_that_gives_control_back_leaves_the_jobs_to_the_primary_and_reads_its_state_again(ha):
    c = ha
    # Under the primary: a standby job on n3 that ignores its checkpoint signal, so that its
    # grace runs to the end, and an owner job that preempts it.
    victim = c.sbatch(["--qos=standby", "--requeue", "-p", "standby", *WHOLE_N3], IGNORES_SIGNALS, user="alice")
    c.wait_job_state(victim, "RUNNING", timeout=30)
    owner = c.sbatch(WHOLE_N3, "sleep 300\n", user="carol")
    preempted = poll(lambda: job_info(c, victim).get("PreemptTime", "None") != "None" and job_info(c, victim),
                     30, "the victim's grace to start")
    grace_end = ts(preempted["PreemptTime"]) + GRACE

    # During the grace the backup takes over (and follows the grace from the state file), then
    # the primary comes back: the backup gives control back and waits again, its copy of the
    # job list holding the victim in its grace.
    takeover(c, "slurmctld-backup", len(c.log("slurmctld-backup")))
    poll(lambda: c.procs["slurmctld"].poll() is not None, 60, "the primary to exit after the takeover")
    mark_b, mark_p = len(c.log("slurmctld-backup")), len(c.log("slurmctld"))
    c.start_primary()
    log_after(c, "slurmctld", mark_p, r"Running as primary controller", 60)
    standby = log_after(c, "slurmctld-backup", mark_b, r"slurmctld running in background mode", 60)
    assert time.time() < grace_end - 2, "the primary took control too close to the victim's grace end"
    # The primary's watcher ends the grace: one kill, one requeue; the owner runs.
    log_after(c, "slurmctld", mark_p, rf"job_submit/preempt: grace of JobId={victim} ended", GRACE + 10)
    c.wait_job_state(owner, "RUNNING", timeout=30)
    assert job_info(c, victim)["Restarts"] == "1", job_info(c, victim)
    # The backup's copy of the list saw the same grace end; its watcher did nothing with it (no
    # kill, no note, no write of the state file): from the moment it gave up control (its
    # shutdown as the controller in control, before it waits again) up to 5 s past the grace
    # end its log has no line of the watcher's but the one that says it waits.
    poll(lambda: time.time() > grace_end + 5, GRACE + 10, "5 s past the victim's grace end")
    since = c.log("slurmctld-backup")[mark_b:]
    gave_up = re.search(r"job_submit/preempt: this slurmctld gave up control: the watcher forgets the jobs it "
                        r"followed and waits; it reads \S+ again when this slurmctld takes control\n", since)
    after = since[gave_up.end() if gave_up else standby.end():]
    waits = "job_submit/preempt: the watcher waits for this slurmctld to run as the controller in control"
    ours = [line for line in re.findall(r".*job_submit/preempt:.*", after) if waits not in line]
    assert not ours, after
    assert gave_up, since
    assert waits in after, after

    # Second takeover: the backup reads the state file the primary left, and finds the jobs as
    # the primary left them: the victim requeued once, waiting for n3, the owner running.
    read = takeover(c, "slurmctld-backup", len(c.log("slurmctld-backup")))
    assert "watcher state read from" in read.group(0), read.group(0)
    assert c.job_state(owner) == "RUNNING"
    assert c.job_state(victim) == "PENDING"
    assert job_info(c, victim)["Restarts"] == "1", job_info(c, victim)
