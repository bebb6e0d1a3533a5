// lib/preflight: preemptctl check's reading of the running cluster against the policy.
#include "preflight.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "policy_loader.hpp"

namespace sp {
namespace {

// The test cluster's shape (test/cluster/cluster.py), configured as etc/slurm.conf.fragment
// says.
ClusterFacts ready_cluster() {
  ClusterFacts c;
  c.config = parse_show_config(
      "Configuration data as of 2026-01-01T00:00:00\n"
      "AccountingStorageEnforce = associations,limits,qos\n"
      "AccountingStorageTRES   = cpu,mem,energy,node,billing,fs/disk,vmem,pages,gres/gpu\n"
      "ClusterName             = preempt\n"
      "JobSubmitPlugins        = preempt\n"
      "PreemptMode             = REQUEUE\n"
      "PreemptType             = preempt/quota\n"
      "PriorityType            = priority/fairshare\n"
      "PrologFlags             = Alloc,Contain\n"
      "SlurmctldParameters     = preempt_send_user_signal\n"
      "\n"
      "Cgroup Support Configuration:\n"
      "AllowedDevicesFile      = (null)\n");
  c.partitions = {"public", "chem", "bio", "standby", "pool"};
  c.nodes = {"n1", "n2", "n3", "n4", "n5", "n6"};
  c.accounts = {"root", "public", "chem", "bio", "project-a"};
  c.qos = {"normal", "standby", "owner", "inference", "build", "interactive", "train"};
  c.has_accounts = c.has_qos = true;
  return c;
}

Policy policy(const std::string& extra = "") {
  const auto r = load_policy_text(
      "version: 1\n"
      "qos:\n"
      "  standby: {preemptible: true, limits: {max_gpus_per_user: 8}}\n"
      "  normal: {preempts: [standby]}\n"
      "  owner: {preempts: [standby]}\n"
      "partitions: {public: [public], standby: standby}\n"
      "owners:\n"
      "  chem: {partitions: [chem], nodes: 'n[3-4]'}\n" +
          extra,
      "preempt.yaml");
  const auto* e = error_of(r);
  EXPECT_EQ(e, nullptr) << (e ? e->str() : "");
  return *policy_of(r);
}

TEST(Preflight, ParsesShowConfigKeysOnly) {
  const auto c = parse_show_config(
      "Configuration data as of X\nPreemptType  = preempt/qos\n"
      "SLURM_VERSION           = 22.05.8\nnot a key line\n");
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.at("PreemptType"), "preempt/qos");
  EXPECT_EQ(c.at("SLURM_VERSION"), "22.05.8");
}

TEST(Preflight, AClusterConfiguredLikeTheFragmentIsReady) {
  EXPECT_EQ(preflight_problems(policy(), ready_cluster()), std::vector<std::string>{});
}

TEST(Preflight, StockSlurmGetsOneLinePerKeyWithItsFix) {
  auto c = ready_cluster();
  c.config.erase("JobSubmitPlugins");
  c.config["PriorityType"] = "priority/multifactor";
  c.config["PreemptType"] = "preempt/none";
  c.config["SlurmctldParameters"] = "(null)";
  c.config["AccountingStorageTRES"] = "cpu,mem,energy,node,billing,fs/disk,vmem,pages";
  c.config["PrologFlags"] = "Alloc";
  const auto got = preflight_problems(policy(), c);
  const std::vector<std::string> want = {
      "slurm.conf: JobSubmitPlugins is unset; job_submit/preempt applies the policy to "
      "submissions: set JobSubmitPlugins=preempt, then scontrol reconfigure",
      "slurm.conf: PriorityType is priority/multifactor; the policy's boosts, classes and "
      "checkpoint environment of interactive jobs come from priority/fairshare: set "
      "PriorityType=priority/fairshare, then restart slurmctld",
      "slurm.conf: PreemptType is preempt/none; the policy's preemptible QOS are never "
      "preempted: set PreemptType=preempt/quota, then scontrol reconfigure",
      "slurm.conf: SlurmctldParameters is unset; without preempt_send_user_signal a preempted "
      "job gets SIGTERM, not its checkpoint signal: set "
      "SlurmctldParameters=preempt_send_user_signal (keep its other items), then scontrol "
      "reconfigure",
      "slurm.conf: AccountingStorageTRES is cpu,mem,energy,node,billing,fs/disk,vmem,pages; the "
      "policy counts GPUs (quotas, max_gpus_per_user) and Slurm does not: set "
      "AccountingStorageTRES=gres/gpu, then restart slurmctld",
      "slurm.conf: PrologFlags is Alloc; the checkpoint signal's relay needs the extern step on "
      "every node: set PrologFlags=contain, then restart slurmctld and every slurmd"};
  EXPECT_EQ(got, want);
}

TEST(Preflight, AccountingStorageEnforceNeedsLimitsAndKeepsItsOtherItems) {
  auto c = ready_cluster();
  c.config["AccountingStorageEnforce"] = "associations,qos";
  const std::vector<std::string> want = {
      "slurm.conf: AccountingStorageEnforce is associations,qos; Slurm tells priority/fairshare "
      "of a run's end only with limits (a job requeued by hand leaves its requeue hold once its "
      "nodes are free, each run's last stretch counts in fair share, preempted runs are "
      "refunded): set AccountingStorageEnforce=limits (keep its other items), then restart "
      "slurmctld"};
  EXPECT_EQ(preflight_problems(policy(), c), want);
  c.config["AccountingStorageEnforce"] = "none";
  EXPECT_EQ(preflight_problems(policy(), c).size(), 1u);
  c.config.erase("AccountingStorageEnforce");
  EXPECT_EQ(preflight_problems(policy(), c).size(), 1u);
  c.config["AccountingStorageEnforce"] = "associations,limits,safe";  // as Slurm prints "safe"
  EXPECT_TRUE(preflight_problems(policy(), c).empty());
}

TEST(Preflight, PreemptQosIsEnoughWithoutQuotasButNotWithThem) {
  auto c = ready_cluster();
  c.config["PreemptType"] = "preempt/qos";
  EXPECT_TRUE(preflight_problems(policy(), c).empty());
  const auto got = preflight_problems(policy("quotas:\n  project-a: {gpus: 4}\n"), c);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0],
            "slurm.conf: PreemptType is preempt/qos; the policy's quotas need preempt/quota: set "
            "PreemptType=preempt/quota, then scontrol reconfigure");
}

TEST(Preflight, SuspendAndOffAreNoPreemptModeForThePolicy) {
  auto c = ready_cluster();
  c.config["PreemptMode"] = "SUSPEND,GANG";
  auto got = preflight_problems(policy(), c);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("a suspended job keeps its GPUs"), std::string::npos) << got[0];
  c.config["PreemptMode"] = "OFF";
  got = preflight_problems(policy(), c);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_NE(got[0].find("preemption is off: set PreemptMode=REQUEUE"), std::string::npos);
}

TEST(Preflight, SlurmctldParametersKeepsOtherItems) {
  auto c = ready_cluster();
  c.config["SlurmctldParameters"] = "enable_configless,preempt_send_user_signal";
  EXPECT_TRUE(preflight_problems(policy(), c).empty());
  c.config["JobSubmitPlugins"] = "lua,job_submit/preempt";
  EXPECT_TRUE(preflight_problems(policy(), c).empty());
}

TEST(Preflight, NamesThePolicyUsesMustExist) {
  auto c = ready_cluster();
  c.partitions = {"public", "standby", "pool"};  // no chem
  c.nodes = {"n1", "n2", "n3"};                  // no n4
  c.accounts = {"root", "public"};               // no chem, no project-b
  c.qos = {"normal", "Standby"};                 // no owner; case does not matter
  const auto got =
      preflight_problems(policy("quotas:\n  project-b: {gpus: 4, partitions: [gpu]}\n"), c);
  const std::vector<std::string> want = {
      "slurm.conf: partition chem (owners.chem.partitions in preempt.yaml) does not exist: add "
      "PartitionName=chem to slurm.conf or change owners.chem.partitions",
      "slurm.conf: node n4 (owners.chem.nodes in preempt.yaml) does not exist: add it to "
      "slurm.conf or change owners.chem.nodes",
      "slurm.conf: partition gpu (quotas.project-b.partitions in preempt.yaml) does not exist: "
      "add PartitionName=gpu to slurm.conf or change quotas.project-b.partitions",
      "slurmdbd: account chem (owners in preempt.yaml) does not exist: sacctmgr add account "
      "chem (and its users)",
      "slurmdbd: account project-b (quotas in preempt.yaml) does not exist: sacctmgr add "
      "account project-b (and its users)",
      "slurmdbd: qos owner (qos in preempt.yaml) does not exist: run preemptctl qos-sync",
      "slurmdbd: qos inference (classes in preempt.yaml) does not exist: run preemptctl qos-sync",
      "slurmdbd: qos build (classes in preempt.yaml) does not exist: run preemptctl qos-sync",
      "slurmdbd: qos interactive (classes in preempt.yaml) does not exist: run preemptctl "
      "qos-sync",
      "slurmdbd: qos train (classes in preempt.yaml) does not exist: run preemptctl qos-sync"};
  EXPECT_EQ(got, want);
}

TEST(Preflight, UnreadableListsAreNotProblems) {
  auto c = ready_cluster();
  c.accounts.clear();
  c.qos.clear();
  c.has_accounts = c.has_qos = false;
  EXPECT_TRUE(preflight_problems(policy(), c).empty());
}

TEST(Preflight, SplitsWords) {
  EXPECT_EQ(split_words(" a\nb  c\n\n"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(split_words("").empty());
}

}  // namespace
}  // namespace sp
