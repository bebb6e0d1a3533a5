// The job_submit translation layer on real job_desc_msg_t structures, without daemons.
#include "submit_adapter.hpp"

#include "policy_loader.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm_errno.h>

#include "src/common/slurm_xlator.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
}

namespace sp {
namespace {

class RecordingSink final : public LogSink {
 public:
  void write(LogLevel, std::string_view m) override { lines.emplace_back(m); }
  std::vector<std::string> lines;
};

class SubmitAdapter : public ::testing::Test {
 protected:
  void SetUp() override { slurm_init_job_desc_msg(&desc); }
  void TearDown() override {
    xfree(desc.qos);
    xfree(desc.partition);
    xfree(desc.account);
    xfree(desc.admin_comment);
  }
  job_desc_msg_t desc{};
  RecordingSink log;
};

TEST_F(SubmitAdapter, UnsetFieldsBecomeEmptyOrZero) {
  SubmitView v = view_of(desc, 1234);
  EXPECT_EQ(v.user_id, 1234u);
  EXPECT_TRUE(v.qos.empty());
  EXPECT_TRUE(v.partition.empty());
  EXPECT_EQ(v.requeue, Tristate::Unset);
  EXPECT_EQ(v.time_limit_min, 0u);
}

TEST_F(SubmitAdapter, SetFieldsAreCopiedIntoTheView) {
  desc.qos = xstrdup("standby");
  desc.partition = xstrdup("public");
  desc.account = xstrdup("chem");
  desc.requeue = 1;
  desc.time_limit = 30;
  desc.user_id = 1001;
  SubmitView v = view_of(desc, 0);
  EXPECT_EQ(v.qos, "standby");
  EXPECT_EQ(v.partition, "public");
  EXPECT_EQ(v.account, "chem");
  EXPECT_EQ(v.requeue, Tristate::Yes);
  EXPECT_EQ(v.time_limit_min, 30u);
  EXPECT_EQ(v.user_id, 1001u);
  desc.requeue = 0;
  EXPECT_EQ(view_of(desc, 0).requeue, Tristate::No);
}

TEST_F(SubmitAdapter, AJobWithoutABatchScriptIsAnInteractiveAllocation) {
  EXPECT_TRUE(view_of(desc, 0).interactive);
  char script[] = "#!/bin/sh\ntrue\n";
  desc.script = script;
  EXPECT_FALSE(view_of(desc, 0).interactive);
  desc.script = nullptr;
}

TEST_F(SubmitAdapter, AcceptWithoutChangesLeavesTheJobAlone) {
  desc.qos = xstrdup("normal");
  EXPECT_EQ(apply(SubmitDecision{}, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  EXPECT_STREQ(desc.qos, "normal");
  EXPECT_EQ(desc.admin_comment, nullptr);
  EXPECT_TRUE(log.lines.empty());
}

TEST_F(SubmitAdapter, ChangesAreAppliedLoggedAndNotedInAdminComment) {
  SubmitDecision d;
  d.set_qos = "standby";
  d.set_partition = "standby";
  d.set_requeue = true;
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  EXPECT_STREQ(desc.qos, "standby");
  EXPECT_STREQ(desc.partition, "standby");
  EXPECT_EQ(desc.requeue, 1);
  ASSERT_NE(desc.admin_comment, nullptr);
  EXPECT_STREQ(desc.admin_comment,
               "slurm-preempt: qos (default)->standby; partition (default)->standby; requeue on;");
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("qos (default)->standby"), std::string::npos);
}

// sbatch sends a SPANK option in the SPANK environment with an SPANK_ prefix, salloc and srun
// without it, and it is in a batch job's environment too: each form is found.
TEST_F(SubmitAdapter, CheckpointOptionsAreFoundInEachFormTheClientsSendThem) {
  char* spank[] = {xstrdup("_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir=/home/a/ck"),
                   xstrdup("SPANK__SLURM_SPANK_OPTION_checkpoint_checkpoint_signal=USR2@30"),
                   nullptr};
  desc.spank_job_env = spank;
  desc.spank_job_env_size = 2;
  SubmitView v = view_of(desc, 0);
  EXPECT_EQ(v.checkpoint_dir, "/home/a/ck");
  EXPECT_EQ(v.checkpoint_signal, "USR2@30");
  char* env[] = {xstrdup("_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir=/home/b/ck"), nullptr};
  desc.spank_job_env = nullptr;
  desc.spank_job_env_size = 0;
  desc.environment = env;
  desc.env_size = 1;
  v = view_of(desc, 0);
  EXPECT_EQ(v.checkpoint_dir, "/home/b/ck");
  EXPECT_TRUE(v.checkpoint_signal.empty());
  desc.environment = nullptr;
  desc.env_size = 0;
  for (char* e : {spank[0], spank[1], env[0]}) xfree(e);
}

// An interactive allocation has no environment to fill: the promise, directory included,
// goes to the SPANK environment only (the priority plugin exports it with the allocation).
TEST_F(SubmitAdapter, ACheckpointPromiseIsEncodedForTheControllerWithItsDirectory) {
  SubmitDecision d;
  d.checkpoint = JobCheckpoint{10, 60, 60, true, true, "/home/a/ck"};
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  ASSERT_EQ(desc.spank_job_env_size, 1u);
  EXPECT_STREQ(desc.spank_job_env[0],
               "SLURM_PREEMPT_CHECKPOINT=signal=10,grace=60,lead=60,requeue=1,steps=gpu,"
               "dir=/home/a/ck");
  EXPECT_EQ(desc.environment, nullptr);
  EXPECT_EQ(desc.warn_signal, kTriggerPreempt);
  EXPECT_STREQ(desc.admin_comment, "slurm-preempt: checkpoint USR1 grace 60s;");
  xfree(desc.spank_job_env[0]);
  xfree(desc.spank_job_env);
}

// A forged promise (issue 12, item 5) never survives job_submit: every entry of its name is
// removed, whatever else the SPANK environment holds, and apply() sets only its own.
TEST_F(SubmitAdapter, EveryPromiseTheRequestCarriesIsRemoved) {
  const uint32_t n = 5;
  desc.spank_job_env = static_cast<char**>(xcalloc(n + 1, sizeof(char*)));
  desc.spank_job_env[0] = xstrdup("SLURM_PREEMPT_CHECKPOINT=signal=10,grace=99999999999");
  desc.spank_job_env[1] = xstrdup("_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir=/home/a/ck");
  desc.spank_job_env[2] = xstrdup("SPANK_SLURM_PREEMPT_CHECKPOINT=signal=10,grace=5");
  desc.spank_job_env[3] = xstrdup("SLURM_PREEMPT_CHECKPOINT=");
  desc.spank_job_env[4] = xstrdup("SLURM_PREEMPT_CHECKPOINTX=kept");
  desc.spank_job_env_size = n;
  EXPECT_EQ(strip_promise(desc), 3u);
  ASSERT_EQ(desc.spank_job_env_size, 2u);
  EXPECT_STREQ(desc.spank_job_env[0], "_SLURM_SPANK_OPTION_checkpoint_checkpoint_dir=/home/a/ck");
  EXPECT_STREQ(desc.spank_job_env[1], "SLURM_PREEMPT_CHECKPOINTX=kept");
  EXPECT_EQ(desc.spank_job_env[2], nullptr);
  EXPECT_EQ(strip_promise(desc), 0u);
  EXPECT_EQ(view_of(desc, 0).checkpoint_dir, "/home/a/ck");  // the user's options stay

  SubmitDecision d;
  d.checkpoint = JobCheckpoint{10, 60, 60, true, true, ""};
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  ASSERT_EQ(desc.spank_job_env_size, 3u);
  EXPECT_STREQ(desc.spank_job_env[2],
               "SLURM_PREEMPT_CHECKPOINT=signal=10,grace=60,lead=60,requeue=1,steps=gpu");
  for (uint32_t i = 0; i < desc.spank_job_env_size; ++i) xfree(desc.spank_job_env[i]);
  xfree(desc.spank_job_env);
  desc.spank_job_env_size = 0;

  desc.spank_job_env = nullptr;  // nothing to strip
  EXPECT_EQ(strip_promise(desc), 0u);
}

// A job submitted from inside a managed job inherits its promise's variables: they go, the
// user's own (the checkpoint directory included) stay.
TEST_F(SubmitAdapter, InheritedPromiseVariablesLeaveTheBatchEnvironment) {
  const std::vector<std::string> given = {"PATH=/usr/bin",
                                          "SLURM_CHECKPOINT_SIGNAL=USR1",
                                          "SLURM_CHECKPOINT_GRACE=60",
                                          "SLURM_CHECKPOINT_LEAD=60",
                                          "SLURM_CHECKPOINT_REQUEUE=1",
                                          "SLURM_CHECKPOINT_STEPS=gpu",
                                          "SLURM_CHECKPOINT_NOTICE=/c/preempt-notice",
                                          "SLURM_CHECKPOINT_DIR=/c"};
  desc.environment = static_cast<char**>(xcalloc(given.size() + 1, sizeof(char*)));
  for (std::size_t i = 0; i < given.size(); ++i) desc.environment[i] = xstrdup(given[i].c_str());
  desc.env_size = static_cast<uint32_t>(given.size());
  EXPECT_EQ(strip_promise(desc), 0u);  // none was in the SPANK environment
  ASSERT_EQ(desc.env_size, 2u);
  EXPECT_STREQ(desc.environment[0], "PATH=/usr/bin");
  EXPECT_STREQ(desc.environment[1], "SLURM_CHECKPOINT_DIR=/c");
  EXPECT_EQ(desc.environment[2], nullptr);
  for (uint32_t i = 0; i < desc.env_size; ++i) xfree(desc.environment[i]);
  xfree(desc.environment);
  desc.env_size = 0;
}

// User strings in the log line and the AdminComment are quoted and bounded (item 10).
TEST_F(SubmitAdapter, UserStringsInLogLinesAreQuotedAndBounded) {
  const std::string huge(120 * 1024, 'n');
  desc.name = xstrdup(("job\nslurmctld: error: forged " + huge).c_str());
  desc.partition = xstrdup("pub\nlic");
  SubmitDecision d;
  d.set_partition = "public,standby";
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  SubmitDecision r;
  r.verdict = SubmitDecision::Verdict::Reject;
  r.reason = "no";
  char* err = nullptr;
  EXPECT_NE(apply(r, Policy{}, desc, &err, log), SLURM_SUCCESS);
  xfree(err);
  ASSERT_EQ(log.lines.size(), 2u);
  for (const auto& line : log.lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    EXPECT_LT(line.size(), 512u) << line.size();
    EXPECT_NE(line.find("(job name job\\nslurmctld: error: forged nnn"), std::string::npos) << line;
    EXPECT_NE(line.find("...(122909 bytes))"), std::string::npos) << line;
  }
  EXPECT_NE(log.lines[0].find("partition pub\\nlic->public,standby"), std::string::npos);
  EXPECT_STREQ(desc.admin_comment, "slurm-preempt: partition pub\\nlic->public,standby;");
  xfree(desc.name);
}

TEST_F(SubmitAdapter, RejectionSetsTheUsersMessageAndAMatchingErrorCode) {
  SubmitDecision d;
  d.verdict = SubmitDecision::Verdict::Reject;
  d.kind = SubmitDecision::RejectKind::Qos;
  d.reason = "qos standby needs --requeue; resubmit with --requeue";
  char* err = nullptr;
  EXPECT_EQ(apply(d, Policy{}, desc, &err, log), ESLURM_INVALID_QOS);
  ASSERT_NE(err, nullptr);
  EXPECT_STREQ(err, "qos standby needs --requeue; resubmit with --requeue");
  xfree(err);
  d.kind = SubmitDecision::RejectKind::Other;
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_ERROR);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

TEST(SubmitAdapterUpdate, TheUpdatedViewMergesTheUpdateOverTheJob) {
  job_desc_msg_t update;
  slurm_init_job_desc_msg(&update);
  job_record_t job{};
  struct job_details details {};
  slurmdb_qos_rec_t qos{};
  qos.name = const_cast<char*>("normal");
  job.qos_ptr = &qos;
  job.details = &details;
  details.requeue = 0;
  job.user_id = 1003;
  job.account = const_cast<char*>("chem");
  job.partition = const_cast<char*>("chem");
  job.time_limit = 60;

  EXPECT_FALSE(update_touches_policy(update));
  SubmitView v = view_of_update(update, job);
  EXPECT_EQ(v.qos, "normal");
  EXPECT_EQ(v.partition, "chem");
  EXPECT_EQ(v.account, "chem");
  EXPECT_EQ(v.requeue, Tristate::No);
  EXPECT_EQ(v.time_limit_min, 0u) << "the job's own limit is not re-judged";
  EXPECT_EQ(v.user_id, 1003u);

  update.qos = const_cast<char*>("standby");
  update.time_limit = INFINITE;
  EXPECT_TRUE(update_touches_policy(update));
  v = view_of_update(update, job);
  EXPECT_EQ(v.qos, "standby");
  EXPECT_EQ(v.partition, "chem");
  EXPECT_EQ(v.time_limit_min, kTimeUnlimited);
}

TEST(SubmitAdapterUpdate, QuotaLicensesAndClassesAreFixedAtSubmission) {
  auto r = load_policy_text(
      "classes:\n  inference: {priority: 125, preemptible: false}\n"
      "  train: {priority: 50}\n  interactive: {priority: 75}\nquotas:\n  project-a: {gpus: 4}\n",
      "q.yaml");
  ASSERT_EQ(error_of(r), nullptr);
  const Policy& policy = *policy_of(r);
  job_desc_msg_t update;
  slurm_init_job_desc_msg(&update);
  job_record_t job{};
  job.job_id = 7;
  job.account = const_cast<char*>("project-a");
  EXPECT_EQ(quota_update_refusal(policy, update, job), "");
  // A train job may not take a quota license, nor become inference.
  update.licenses = const_cast<char*>("quota_project-a@slurm-preempt:4");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("set by the scheduler"),
            std::string::npos);
  update.licenses = nullptr;
  update.qos = const_cast<char*>("Inference");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("resubmit the job with --qos=inference"),
            std::string::npos);
  update.qos = const_cast<char*>("interactive");
  EXPECT_EQ(quota_update_refusal(policy, update, job), "");
  // An inference job holding the license keeps it, its QOS, account and GPUs.
  job.licenses = const_cast<char*>("quota_project-a@slurm-preempt:4");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("fixed at submission"),
            std::string::npos);
  update.qos = nullptr;
  update.licenses = const_cast<char*>("");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("cannot be changed"), std::string::npos);
  update.licenses = nullptr;
  update.time_limit = 10;  // what is not the quota's stays the user's
  EXPECT_EQ(quota_update_refusal(policy, update, job), "");
  // An inference job without a license (0 GPUs, or outside its quota's partitions) may not
  // move into the pool or take GPUs either.
  job.licenses = nullptr;
  slurmdb_qos_rec_t inference{};
  inference.name = const_cast<char*>("inference");
  job.qos_ptr = &inference;
  update.partition = const_cast<char*>("pool");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("fixed at submission"),
            std::string::npos);
  update.partition = nullptr;
  update.tres_per_node = const_cast<char*>("gres:gpu:4");
  EXPECT_NE(quota_update_refusal(policy, update, job).find("fixed at submission"),
            std::string::npos);
  update.tres_per_node = nullptr;
  job.qos_ptr = nullptr;
  // Without quotas nothing here applies.
  update.qos = const_cast<char*>("inference");
  EXPECT_EQ(quota_update_refusal(Policy{}, update, job), "");
}

// GPUs as sbatch, salloc and srun send them in 22.05 (slurm_opt.c: xfmt_tres with "gres:gpu",
// --gres through gres_prepend_tres_type).
TEST_F(SubmitAdapter, RequestedGpusAreCountedFromEachTresForm) {
  EXPECT_EQ(view_of(desc, 0).gpus, 0u);
  desc.min_nodes = 2;
  desc.tres_per_node = xstrdup("gres:gpu:4");  // -N2 --gres=gpu:4
  EXPECT_EQ(view_of(desc, 0).gpus, 8u);
  xfree(desc.tres_per_node);
  desc.tres_per_node = xstrdup("gres:gpu:a100:2,gres:shard:3");  // typed, with another gres
  EXPECT_EQ(view_of(desc, 0).gpus, 4u);
  xfree(desc.tres_per_node);
  desc.tres_per_node = xstrdup("gres:gpu");  // --gres=gpu: one per node
  EXPECT_EQ(view_of(desc, 0).gpus, 2u);
  xfree(desc.tres_per_node);
  desc.min_nodes = NO_VAL;
  desc.tres_per_job = xstrdup("gres:gpu:4");  // --gpus=4
  EXPECT_EQ(view_of(desc, 0).gpus, 4u);
  xfree(desc.tres_per_job);
  desc.num_tasks = 3;
  desc.tres_per_task = xstrdup("gres/gpu:2");  // --gpus-per-task=2 -n3
  EXPECT_EQ(view_of(desc, 0).gpus, 6u);
  xfree(desc.tres_per_task);
  desc.tres_per_node = xstrdup("gres:shard:4");
  EXPECT_EQ(view_of(desc, 0).gpus, 0u);
  xfree(desc.tres_per_node);
}

// A request whose product does not fit in 64 bits counts as the most GPUs there are, never as
// what is left after a wrap (2^33 * 2^31 * 2 would wrap to 0 and pass any quota).
// A count of more digits than 64 bits hold is the most GPUs there are, not a type name's one;
// several such items add up to no more than that.
TEST_F(SubmitAdapter, AHugeGpuCountIsNotReadAsOne) {
  desc.tres_per_job = xstrdup("gres:gpu:99999999999999999999999");
  EXPECT_EQ(view_of(desc, 0).gpus, UINT64_MAX);
  xfree(desc.tres_per_job);
  desc.tres_per_job = xstrdup("gres:gpu:18446744073709551615,gres:gpu:7");
  EXPECT_EQ(view_of(desc, 0).gpus, UINT64_MAX);
  xfree(desc.tres_per_job);
  desc.tres_per_job = xstrdup("gres:gpu:99999999999");  // 11 digits: past 32 bits, exact
  EXPECT_EQ(view_of(desc, 0).gpus, 99999999999U);
  xfree(desc.tres_per_job);
}

TEST_F(SubmitAdapter, RequestedGpusSaturateInsteadOfWrapping) {
  desc.min_nodes = 2;
  desc.max_nodes = 2147483648U;
  desc.tres_per_node = xstrdup("gres:gpu:8589934592");
  EXPECT_EQ(view_of(desc, 0).gpus, UINT64_MAX);
  xfree(desc.tres_per_node);
  desc.max_nodes = NO_VAL;
  desc.num_tasks = 4294967293U;
  desc.tres_per_task = xstrdup("gres:gpu:42949672959");
  EXPECT_EQ(view_of(desc, 0).gpus, UINT64_MAX);
  xfree(desc.tres_per_task);
  desc.num_tasks = NO_VAL;
  desc.max_nodes = 2147483648U;
  desc.sockets_per_node = 65533;
  desc.tres_per_socket = xstrdup("gres:gpu:42949672959");
  EXPECT_EQ(view_of(desc, 0).gpus, UINT64_MAX);
  xfree(desc.tres_per_socket);
}

TEST_F(SubmitAdapter, LicensesAreCopiedIntoTheView) {
  desc.licenses = xstrdup("matlab:2");
  EXPECT_EQ(view_of(desc, 0).licenses, "matlab:2");
  xfree(desc.licenses);
}

TEST_F(SubmitAdapter, TheQuotaLicenseIsAddedToTheUsersLicenses) {
  SubmitDecision d;
  d.add_license = SubmitDecision::License{"quota_project-a", 4};
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  EXPECT_STREQ(desc.licenses, "quota_project-a@slurm-preempt:4");
  EXPECT_STREQ(desc.admin_comment, "slurm-preempt: license +quota_project-a@slurm-preempt:4;");
  xfree(desc.licenses);
  xfree(desc.admin_comment);
  desc.licenses = xstrdup("matlab:2");
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  EXPECT_STREQ(desc.licenses, "matlab:2,quota_project-a@slurm-preempt:4");
  xfree(desc.licenses);
}

TEST_F(SubmitAdapter, ADefaultClassIsLogged) {
  SubmitDecision d;
  d.set_qos = "train";
  d.default_class = true;
  desc.account = xstrdup("project-a");
  EXPECT_EQ(apply(d, Policy{}, desc, nullptr, log), SLURM_SUCCESS);
  EXPECT_STREQ(desc.qos, "train");
  ASSERT_EQ(log.lines.size(), 2u);
  EXPECT_NE(log.lines[0].find("default class train"), std::string::npos) << log.lines[0];
  EXPECT_NE(log.lines[0].find("project-a"), std::string::npos) << log.lines[0];
}

}  // namespace
}  // namespace sp
