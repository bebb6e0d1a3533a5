"""The test cluster itself, jobs through it, and the plugins loading into it."""

import re
import shutil
import socket
import subprocess

import pytest
from conftest import PORT_OFFSET

from cluster import (NODES, PARTITIONS, PORTS, REPO, Cluster, ClusterError, build_dir, poll,
                     processes_of)

PLUGIN_COMMON = {"plugin_name", "plugin_type", "plugin_version", "init", "fini"}


@pytest.fixture(scope="module")
def batch_job(cluster):
    jobid = cluster.sbatch(["-N1"], "echo hello from $SLURMD_NODENAME\n", user="alice")
    cluster.wait_job_state(jobid, "COMPLETED", timeout=60)
    return jobid


@pytest.fixture(scope="module")
def gpu_step(cluster):
    """(jobid, output lines) of a two-node, two-GPU-per-node srun."""
    out = cluster.run(["srun", "-N2", "-n2", "--gres=gpu:2", "bash", "-c",
                       'echo "$SLURM_JOB_ID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"'], timeout=90).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    return int(lines[0][0]), lines


def sacct_steps(cluster, jobid, steps):
    """Poll sacct until the job and each of its `steps` are COMPLETED and slurmdbd holds the
    job's own record (not the stand-in it builds from step records for a moment, with QOS
    "Unknown"); return the rows."""
    wanted = {str(jobid)} | {f"{jobid}.{s}" for s in steps}
    fields = ["State", "ExitCode", "User", "QOS", "Partition"]

    def check():
        rows = {r["JobID"]: r for r in cluster.sacct(jobid, fields)}
        done = all(rows.get(j, {}).get("State") == "COMPLETED" for j in wanted)
        complete = rows.get(str(jobid), {}).get("QOS") not in (None, "", "Unknown")
        return rows if done and complete else None
    try:
        return poll(check, 30, f"sacct to show job {jobid} and steps {sorted(wanted)} COMPLETED")
    except ClusterError as e:
        raise AssertionError(f"{e}; sacct has {cluster.sacct(jobid, fields)}") from None


def test_six_idle_nodes_in_expected_partitions(cluster):
    out = cluster.run(["sinfo", "-h", "-N", "-o", "%N %P %t"]).stdout
    members, states = {}, {}
    for node, partition, state in (line.split() for line in out.splitlines()):
        members.setdefault(partition, set()).add(node)
        states[node] = state
    expected = {
        "public*": {"n1", "n2"},
        "chem": {"n3", "n4"},
        "bio": {"n5", "n6"},
        "standby": set(NODES),
        "pool": {"n1", "n2"},
    }
    assert set(PARTITIONS) == {p.rstrip("*") for p in expected}
    assert members == expected
    assert states == {n: "idle" for n in NODES}


def test_mariadb_keeps_its_temporary_tables_in_the_clusters_own_directory(cluster):
    # A MariaDB server starting removes the #sql* files it finds in its tmpdir: in the shared
    # /tmp, one cluster's mysqld starting took another's bootstrap's temporary tables from
    # under it (mysql_install_db failed, CI of 2026-12-07). The server's tmpdir here; the
    # bootstrap gets the same on its command line (cluster.py start_mysqld).
    r = cluster.mysql("SELECT @@tmpdir")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-1] == str(cluster.dir / "mysql-tmp"), r.stdout


def test_batch_job_completes_in_accounting(cluster, batch_job):
    rows = sacct_steps(cluster, batch_job, ["batch"])
    job = rows[str(batch_job)]
    assert (job["ExitCode"], job["User"], job["QOS"], job["Partition"]) == \
        ("0:0", "alice", "normal", "public"), job
    assert (cluster.jobs / f"{batch_job}.out").read_text().startswith("hello from n")


def test_two_node_gpu_step_sees_two_devices_per_task(cluster, gpu_step):
    jobid, lines = gpu_step
    assert len(lines) == 2, lines
    assert len({node for _, node, *_ in lines}) == 2, lines
    for _, node, *devices in lines:
        assert len(devices) == 1 and len(devices[0].split(",")) == 2, f"{node}: {devices}"
    assert cluster.wait_job_state(jobid, "COMPLETED", timeout=30) == "COMPLETED"


def test_sacct_lists_both_jobs_and_their_steps(cluster, batch_job, gpu_step):
    batch = sacct_steps(cluster, batch_job, ["batch", "extern"])
    gpu = sacct_steps(cluster, gpu_step[0], ["0", "extern"])
    assert gpu[str(gpu_step[0])]["User"] == "root"
    assert {r["ExitCode"] for r in [*batch.values(), *gpu.values()]} == {"0:0"}


def test_each_plugin_logs_its_load_line(cluster):
    cluster.wait_log("slurmctld", re.escape("job_submit/preempt: loaded"), timeout=10)
    cluster.wait_log("slurmctld", re.escape("priority/fairshare: loaded"), timeout=10)
    for node in NODES:
        cluster.wait_log(f"slurmd-{node}", re.escape("spank/checkpoint: loaded"), timeout=10)


def test_plugins_export_only_their_entry_points():
    libs = sorted((build_dir() / "pluginlib").glob("*.so"))
    assert {p.name for p in libs} >= {"job_submit_preempt.so", "priority_fairshare.so",
                                      "preempt_quota.so", "spank_checkpoint.so"}, libs
    for lib in libs:
        out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                             text=True, check=True).stdout
        symbols = {line.split()[-1] for line in out.splitlines() if line.strip()}
        if lib.name == "libslurm_preempt_ctld.so":  # not a plugin: what the ctld plugins share
            assert symbols and all(s.startswith("_ZN2sp3bus") for s in symbols), sorted(symbols)
            continue
        if lib.name.startswith("job_submit_"):
            entry = {"job_submit", "job_modify"}
            extra = symbols - PLUGIN_COMMON - entry
            assert entry <= symbols, f"{lib.name} lacks {entry - symbols}"
        elif lib.name.startswith("priority_"):
            extra = {s for s in symbols - PLUGIN_COMMON if not s.startswith("priority_p_")}
        elif lib.name.startswith("preempt_"):
            entry = {"preempt_p_preemptable", "preempt_p_get_data", "preempt_p_job_preempt_check"}
            extra = symbols - PLUGIN_COMMON - entry
            assert entry <= symbols, f"{lib.name} lacks {entry - symbols}"
        else:
            extra = {s for s in symbols - PLUGIN_COMMON if not s.startswith("slurm_spank_")}
        assert {"plugin_name", "plugin_type", "plugin_version"} <= symbols, f"{lib.name}: {symbols}"
        assert not extra, f"{lib.name} exports more than its entry points: {sorted(extra)}"


def test_bad_policy_stops_slurmctld_with_file_line_column(cluster):
    # A second cluster on other ports, beside the session one. Line 3 is the unknown key.
    policy = "# bad policy\n# the next line has an unknown key\nstandbyy: {}\n" + \
        (REPO / "etc" / "preempt.yaml").read_text()
    bad = Cluster(with_plugins=True, policy=policy, port_offset=PORT_OFFSET + 100, keep=True)
    try:
        with pytest.raises(ClusterError) as failure:
            bad.start()
        assert failure.value.cause.startswith("slurmctld exited"), failure.value.cause
        assert "preempt.yaml:3:1" in bad.log("slurmctld") + bad.log("slurmctld.out")
        assert not processes_of(bad.dir)
    finally:
        bad.stop()
        shutil.rmtree(bad.dir, ignore_errors=True)


def test_port_in_use_fails_start_with_one_line_naming_it():
    blocker = socket.socket()
    c = Cluster(with_plugins=False, port_offset=PORT_OFFSET + 200, keep=False)
    port = c.slurmd_ports[2]
    try:
        blocker.bind(("127.0.0.1", port))
        blocker.listen()
        with pytest.raises(ClusterError) as failure:
            c.start()
    finally:
        blocker.close()
        c.stop()
    message = str(failure.value)
    assert "\n" not in message and str(port) in message, message
    assert not c.dir.exists()


def test_module_clusters_never_take_a_port_of_the_session_cluster():
    """Under pytest -n each worker runs one module at a time beside its session cluster, so a
    module's own cluster (PORT_OFFSET + N) must not use any port the session cluster uses
    (test_events.py's +700 put its mysqld on the session's sixth slurmd port)."""
    def ports(offset, nodes=6):
        return {p + offset for name, p in PORTS.items() if name != "slurmd"} | \
            {PORTS["slurmd"] + offset + i for i in range(nodes)}
    session = ports(0)
    offsets = {int(m) for path in (REPO / "test" / "integration").glob("test_*.py")
               for m in re.findall(r"port_offset=PORT_OFFSET \+ (\d+)", path.read_text())}
    assert offsets, "no module cluster found"
    clashes = {k: sorted(session & ports(k)) for k in offsets if session & ports(k)}
    assert not clashes, f"module clusters on the session cluster's ports: {clashes}"
