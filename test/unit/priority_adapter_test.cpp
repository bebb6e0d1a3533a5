// The priority translation layer on real job_record_t layouts, without daemons.
#include "priority_adapter.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

extern "C" {
#include "src/common/list.h"
#include "src/common/slurm_xlator.h"
#include "src/common/xmalloc.h"
}

namespace sp {
namespace {

class PriorityAdapter : public ::testing::Test {
 protected:
  void SetUp() override {
    job.details = &details;
    details.nice = NICE_OFFSET;
    details.begin_time = 1000;
    details.accrue_time = 1000;
    job.job_state = JOB_PENDING;
    job.priority = 500;
    job.job_id = 42;
    job.user_id = 1001;
    qos.name = const_cast<char*>("standby");
    qos.usage = &qos_usage;
    qos_usage.norm_priority = 0.25;
    job.qos_ptr = &qos;
    part.name = const_cast<char*>("standby");
    part.norm_priority = 0.5;
    job.part_ptr = &part;
  }
  void TearDown() override { xfree(job.prio_factors); }

  job_record_t job{};
  struct job_details details {};
  slurmdb_qos_rec_t qos{};
  slurmdb_qos_usage_t qos_usage{};
  part_record_t part{};
  Policy policy = default_policy();
  priority_factors_request_msg_t req{};
};

TEST_F(PriorityAdapter, NiceIsRelativeToSlurmsOffset) {
  EXPECT_EQ(nice_of(job), 0);
  details.nice = NICE_OFFSET + 100;
  EXPECT_EQ(nice_of(job), 100);
  details.nice = NICE_OFFSET - 50;
  EXPECT_EQ(nice_of(job), -50);
  job.details = nullptr;
  EXPECT_EQ(nice_of(job), 0);
}

TEST_F(PriorityAdapter, InputComesFromAccrueTimeQosPartitionAndPolicyBoost) {
  const PriorityInput in = input_of(job, policy);
  EXPECT_EQ(in.accrue_time, 1000);
  EXPECT_DOUBLE_EQ(in.qos_norm, 0.25);
  EXPECT_DOUBLE_EQ(in.partition_norm, 0.5);
  EXPECT_EQ(in.boost, 1000u);
  qos.name = const_cast<char*>("normal");
  EXPECT_EQ(input_of(job, policy).boost, 0u);
  job.qos_ptr = nullptr;
  job.part_ptr = nullptr;
  EXPECT_EQ(input_of(job, policy).boost, 0u);  // no QOS or partition: no crash, no factors
}

TEST_F(PriorityAdapter, AClassQosGetsItsShareOfTheHighestClass) {
  policy.classes = {{"train", 50, true, -1, 0}, {"inference", 100, false, -1, 0}};
  qos.name = const_cast<char*>("train");
  EXPECT_DOUBLE_EQ(input_of(job, policy).class_norm, 0.5);
  qos.name = const_cast<char*>("standby");
  EXPECT_DOUBLE_EQ(input_of(job, policy).class_norm, 0.0);
  EXPECT_DOUBLE_EQ(input_of(job, policy).over_quota, 0.0);  // set by the caller, not here
}

// The recalculation's memo gives what the lookup by name gives, once per QOS record.
TEST_F(PriorityAdapter, TheQosMemoAgreesWithTheLookupByNameAndKeysOnTheRecord) {
  policy.classes = {{"train", 50, true, -1, 0}, {"inference", 100, false, -1, 0}};
  slurmdb_qos_rec_t train{};
  train.name = const_cast<char*>("train");
  QosTermsMemo memo;
  for (slurmdb_qos_rec_t* q : {&qos, &train, &qos, &train}) {
    job.qos_ptr = q;
    const PriorityInput by_name = input_of(job, policy);
    const PriorityInput memoised = input_of(job, policy, false, &memo);
    EXPECT_EQ(memoised.boost, by_name.boost) << q->name;
    EXPECT_DOUBLE_EQ(memoised.class_norm, by_name.class_norm) << q->name;
  }
  job.qos_ptr = &qos;
  EXPECT_EQ(input_of(job, policy, false, &memo).boost, 1000u);  // standby's boost
  // The memo keys on the record: a name changed under it is not seen (hence one memo per
  // hold of the QOS lock), while a fresh memo sees it.
  qos.name = const_cast<char*>("normal");
  EXPECT_EQ(input_of(job, policy, false, &memo).boost, 1000u);
  QosTermsMemo fresh;
  EXPECT_EQ(input_of(job, policy, false, &fresh).boost, 0u);
  train.name = nullptr;
  job.qos_ptr = &train;
  EXPECT_EQ(input_of(job, policy, false, &fresh).boost, 0u);  // a QOS with no name: no terms
}

TEST_F(PriorityAdapter, TermsAreStoredWhereSprioReadsThem) {
  PriorityTerms t;
  t.age = 10;
  t.qos = 250;
  t.partition = 500;
  t.site = 1000;
  t.nice = -3;
  store_terms(job, t);
  ASSERT_NE(job.prio_factors, nullptr);
  EXPECT_DOUBLE_EQ(job.prio_factors->priority_age, 10);
  EXPECT_DOUBLE_EQ(job.prio_factors->priority_qos, 250);
  EXPECT_DOUBLE_EQ(job.prio_factors->priority_part, 500);
  EXPECT_EQ(job.prio_factors->priority_site, 1000u + NICE_OFFSET);  // sprio subtracts it
  EXPECT_EQ(job.prio_factors->nice, static_cast<uint32_t>(NICE_OFFSET - 3));
  auto* same = job.prio_factors;
  store_terms(job, t);
  EXPECT_EQ(job.prio_factors, same) << "allocated once per job, not per call";
}

TEST_F(PriorityAdapter, SprioListsOnlyEligiblePendingComputedJobs) {
  PriorityTerms t;
  store_terms(job, t);
  EXPECT_FALSE(sprio_lines(job, req, 2000).empty());
  EXPECT_TRUE(sprio_lines(job, req, 999).empty()) << "not eligible before its begin time";
  job.priority = 0;
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty()) << "held";
  job.priority = 500;
  job.job_state = JOB_RUNNING;
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty());
}

TEST_F(PriorityAdapter, SprioFiltersByJobUserAndPartition) {
  store_terms(job, PriorityTerms{});
  uint32_t other = 7;
  req.job_id_list = list_create(nullptr);
  list_append(req.job_id_list, &other);
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty());
  list_append(req.job_id_list, &job.job_id);
  EXPECT_FALSE(sprio_lines(job, req, 2000).empty());
  FREE_NULL_LIST(req.job_id_list);
  req.partitions = const_cast<char*>("public,bio");
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty());
  req.partitions = const_cast<char*>("public,standby");
  EXPECT_FALSE(sprio_lines(job, req, 2000).empty());
}

// A job submitted to several partitions: one priority per partition, in the order Slurm's
// scheduler reads priority_array (part_ptr_list sorted by PriorityTier, highest first), and
// one sprio line per partition.
TEST_F(PriorityAdapter, AJobInSeveralPartitionsGetsOnePriorityPerPartitionInTierOrder) {
  part_record_t pub{};
  pub.name = const_cast<char*>("public");
  pub.priority_tier = 2;
  pub.norm_priority = 1.0;
  part.priority_tier = 1;  // standby, norm 0.5
  job.part_ptr_list = list_create(nullptr);
  list_append(job.part_ptr_list, &part);
  list_append(job.part_ptr_list, &pub);
  Weights w;
  w.partition = 1000;
  PriorityTerms t;
  t.age = 100;
  t.partition = 500;  // the job's own partition's term
  t.site = 1000;
  store_partition_priorities(job, t, w);
  ASSERT_NE(job.priority_array, nullptr);
  ListIterator it = list_iterator_create(job.part_ptr_list);
  EXPECT_EQ(static_cast<part_record_t*>(list_next(it)), &pub);
  list_iterator_destroy(it);
  EXPECT_EQ(job.priority_array[0], 100u + 1000 + 1000);  // public: norm 1.0
  EXPECT_EQ(job.priority_array[1], 100u + 500 + 1000);   // standby: norm 0.5
  uint32_t* same = job.priority_array;
  store_partition_priorities(job, t, w);
  EXPECT_EQ(job.priority_array, same) << "allocated once per job";

  store_terms(job, t);
  ASSERT_EQ(sprio_partitions(job, req).size(), 2U);
  req.partitions = const_cast<char*>("standby");
  ASSERT_EQ(sprio_partitions(job, req).size(), 1U);
  EXPECT_EQ(sprio_partitions(job, req)[0], &part);
  EXPECT_FALSE(sprio_lines(job, req, 2000).empty());
  req.partitions = const_cast<char*>("bio");
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty());
  xfree(job.priority_array);
  FREE_NULL_LIST(job.part_ptr_list);
}

// sprio's walk asks sprio_lines once per job: the partitions of the lines of a job it lists, in
// the list's order, and none for a job it does not list (held, or filtered out).
TEST_F(PriorityAdapter, SprioLinesAreTheListedJobsPartitionsAndNoneForOthers) {
  part_record_t pub{};
  pub.name = const_cast<char*>("public");
  job.part_ptr_list = list_create(nullptr);
  list_append(job.part_ptr_list, &pub);
  list_append(job.part_ptr_list, &part);
  store_terms(job, PriorityTerms{});
  EXPECT_EQ(sprio_lines(job, req, 2000), (std::vector<part_record_t*>{&pub, &part}));
  req.partitions = const_cast<char*>("standby");
  EXPECT_EQ(sprio_lines(job, req, 2000), (std::vector<part_record_t*>{&part}));
  req.partitions = nullptr;
  EXPECT_TRUE(sprio_lines(job, req, 999).empty()) << "not eligible before its begin time";
  job.priority = 0;
  EXPECT_TRUE(sprio_lines(job, req, 2000).empty()) << "held";
  FREE_NULL_LIST(job.part_ptr_list);
}

// Every pass recalculates every pending job under the job write lock: a list already in tier
// order is not sorted again (list_sort frees and allocates each node and sends every iterator
// of the list back to its head, which is how this test sees it).
TEST_F(PriorityAdapter, APartitionListInTierOrderIsNotSortedAgain) {
  part_record_t pub{};
  pub.name = const_cast<char*>("public");
  pub.priority_tier = 2;
  pub.norm_priority = 1.0;
  part.priority_tier = 2;  // the same tier: either order is Slurm's order
  job.part_ptr_list = list_create(nullptr);
  list_append(job.part_ptr_list, &part);
  list_append(job.part_ptr_list, &pub);
  ListIterator it = list_iterator_create(job.part_ptr_list);
  ASSERT_EQ(static_cast<part_record_t*>(list_next(it)), &part);
  Weights w;
  w.partition = 1000;
  PriorityTerms t;
  t.site = 7;
  store_partition_priorities(job, t, w);
  EXPECT_EQ(static_cast<part_record_t*>(list_next(it)), &pub) << "the list was sorted again";
  EXPECT_EQ(job.priority_array[0], 7u + 500);   // standby first, as it was
  EXPECT_EQ(job.priority_array[1], 7u + 1000);  // public
  list_iterator_destroy(it);

  pub.priority_tier = 3;  // now out of order: sorted, public first
  store_partition_priorities(job, t, w);
  it = list_iterator_create(job.part_ptr_list);
  EXPECT_EQ(static_cast<part_record_t*>(list_next(it)), &pub);
  list_iterator_destroy(it);
  EXPECT_EQ(job.priority_array[0], 7u + 1000);
  EXPECT_EQ(job.priority_array[1], 7u + 500);
  xfree(job.priority_array);
  FREE_NULL_LIST(job.part_ptr_list);
}

TEST_F(PriorityAdapter, AJobInManyPartitionsGetsEveryOnesPriority) {
  // More partitions than the adapter keeps on its stack (8).
  std::vector<part_record_t> parts(11);
  job.part_ptr_list = list_create(nullptr);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    parts[i].priority_tier = static_cast<uint16_t>(i);           // lowest first: all sorted
    parts[i].norm_priority = static_cast<double>(i + 1) / 16.0;  // exact in binary
    list_append(job.part_ptr_list, &parts[i]);
  }
  Weights w;
  w.partition = 1600;
  store_partition_priorities(job, PriorityTerms{}, w);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t tier = parts.size() - 1 - i;  // highest tier first
    EXPECT_EQ(job.priority_array[i], static_cast<uint32_t>((tier + 1) * 100)) << "entry " << i;
  }
  xfree(job.priority_array);
  FREE_NULL_LIST(job.part_ptr_list);
}

TEST_F(PriorityAdapter, AJobInOnePartitionHasNoPriorityArray) {
  store_partition_priorities(job, PriorityTerms{}, Weights{});
  EXPECT_EQ(job.priority_array, nullptr);
}

}  // namespace
}  // namespace sp

namespace sp {
namespace {

class FairshareOf : public ::testing::Test {
 protected:
  void SetUp() override {
    assoc.usage = &usage;
    parent.usage = &parent_usage;
    usage.fs_assoc_ptr = &parent;
    usage.fs_factor = 0.25;
    usage.usage_norm = 0.5;
    parent_usage.fs_factor = 0.75;
    parent_usage.usage_norm = 0.1;
    job.assoc_ptr = &assoc;
    assoc.shares_raw = 1;
  }
  job_record_t job{};
  slurmdb_assoc_rec_t assoc{}, parent{};
  slurmdb_assoc_usage_t usage{}, parent_usage{};
};

TEST_F(FairshareOf, IsTheAssociationsFactorFromTheLastPass) {
  EXPECT_DOUBLE_EQ(fairshare_of(job), 0.25);
  EXPECT_DOUBLE_EQ(input_of(job, default_policy()).fairshare, 0.25);
}

TEST_F(FairshareOf, ParentSharesUseTheFairShareParent) {
  assoc.shares_raw = SLURMDB_FS_USE_PARENT;
  EXPECT_DOUBLE_EQ(fairshare_of(job), 0.75);
}

TEST_F(FairshareOf, NoAssociationGivesZeroAndANewOneFull) {
  usage.usage_norm = static_cast<long double>(NO_VAL);  // no usage pass has seen it
  EXPECT_DOUBLE_EQ(fairshare_of(job), 1.0);
  job.assoc_ptr = nullptr;
  EXPECT_DOUBLE_EQ(fairshare_of(job), 0.0);
}

TEST(SlurmWeights, DefaultsOfHalfLifeMaxAgeAndCalcPeriodCountAsUnset) {
  slurm_conf_t c{};
  c.priority_decay_hl = 7 * 24 * 3600;
  c.priority_max_age = 7 * 24 * 3600;
  c.priority_calc_period = 300;
  SlurmWeights s = slurm_weights(c, std::nullopt);
  EXPECT_EQ(s.half_life_s, 0);
  EXPECT_EQ(s.max_age_s, 0);
  EXPECT_EQ(s.calc_period_s, 0);
  c.priority_max_age = 3600;
  EXPECT_EQ(slurm_weights(c, std::nullopt).max_age_s, 3600);
  c.priority_decay_hl = 3600;
  c.priority_calc_period = 60;
  s = slurm_weights(c, std::nullopt);
  EXPECT_EQ(s.half_life_s, 3600);
  EXPECT_EQ(s.calc_period_s, 60);
  c.priority_decay_hl = 0;  // PriorityDecayHalfLife=0: Slurm's "no decay"
  EXPECT_EQ(slurm_weights(c, std::nullopt).half_life_s, -1);
}

// A slurm.conf and an included file in a fresh directory, removed afterwards.
class SlurmConfFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sp-weights-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  std::string dir;
};

TEST_F(SlurmConfFiles, AWeightKeyWrittenAsZeroIsSetAndAMissingOneIsNot) {
  write("fragment.conf", "priorityweightqos=0\n");  // keys are case-insensitive
  const std::string conf = write(
      "slurm.conf",
      "ClusterName=x\nNodeName=n[1-2] CPUs=2\n# PriorityWeightJobSize=5\nPriorityWeightAge=0\n"
      "PriorityWeightFairshare=200\nInclude " +
          dir + "/fragment.conf\n");
  const auto keys = weight_keys_in(conf.c_str());
  ASSERT_TRUE(keys);
  EXPECT_TRUE(keys->age);
  EXPECT_TRUE(keys->fairshare);
  EXPECT_TRUE(keys->qos);  // from the included file
  EXPECT_FALSE(keys->partition);
  EXPECT_FALSE(keys->job_size);  // commented out

  slurm_conf_t c{};
  c.priority_weight_fs = 200;  // what Slurm read; the zeros are 0 there too
  const SlurmWeights s = slurm_weights(c, keys);
  EXPECT_EQ(s.age, std::optional<uint32_t>(0));
  EXPECT_EQ(s.fairshare, std::optional<uint32_t>(200));
  EXPECT_EQ(s.qos, std::optional<uint32_t>(0));
  EXPECT_EQ(s.partition, std::nullopt);
  EXPECT_EQ(s.job_size, std::nullopt);
  const Weights w = effective_weights(PriorityWeights{}, s);
  EXPECT_EQ(w.age, 0u);
  EXPECT_EQ(w.qos, 0u);
  EXPECT_EQ(w.fairshare, 200u);
  EXPECT_EQ(w.partition, PriorityWeights{}.partition);
}

TEST_F(SlurmConfFiles, AnUnreadableSlurmConfFallsBackToZeroMeansUnset) {
  EXPECT_FALSE(weight_keys_in((dir + "/missing.conf").c_str()));
  EXPECT_FALSE(weight_keys_in(nullptr));
  slurm_conf_t c{};
  c.priority_weight_age = 7;
  const SlurmWeights s = slurm_weights(c, std::nullopt);
  EXPECT_EQ(s.age, std::optional<uint32_t>(7));
  EXPECT_EQ(s.qos, std::nullopt);
}

TEST_F(PriorityAdapter, InteractiveAllocationGetsThePromiseEnvironmentOnce) {
  job.batch_flag = 0;
  job.spank_job_env = static_cast<char**>(xcalloc(2, sizeof(char*)));
  job.spank_job_env[0] = xstrdup(
      "SLURM_PREEMPT_CHECKPOINT=signal=10,grace=60,lead=60,requeue=1,"
      "steps=gpu,dir=/home/alice/ckpt");
  job.spank_job_env_size = 1;
  details.env_sup = static_cast<char**>(xcalloc(2, sizeof(char*)));
  details.env_sup[0] = xstrdup("SLURM_BB_NAME=x");  // a burst buffer's entry stays
  details.env_cnt = 1;
  export_checkpoint_env(job, policy);
  export_checkpoint_env(job, policy);  // the second call finds them: no duplicates
  std::vector<std::string> env(details.env_sup, details.env_sup + details.env_cnt);
  EXPECT_EQ(details.env_sup[details.env_cnt], nullptr);
  EXPECT_EQ(env, (std::vector<std::string>{
                     "SLURM_BB_NAME=x", "SLURM_CHECKPOINT_SIGNAL=USR1", "SLURM_CHECKPOINT_GRACE=60",
                     "SLURM_CHECKPOINT_LEAD=60", "SLURM_CHECKPOINT_REQUEUE=1",
                     "SLURM_CHECKPOINT_STEPS=gpu", "SLURM_CHECKPOINT_DIR=/home/alice/ckpt",
                     "SLURM_CHECKPOINT_NOTICE=/home/alice/ckpt/preempt-notice"}));
  for (uint32_t i = 0; i < details.env_cnt; ++i) xfree(details.env_sup[i]);
  xfree(details.env_sup);
  xfree(job.spank_job_env[0]);
  xfree(job.spank_job_env);
}

TEST_F(PriorityAdapter, BatchJobsAndJobsWithoutAPromiseAreLeftAlone) {
  job.spank_job_env = static_cast<char**>(xcalloc(2, sizeof(char*)));
  job.spank_job_env[0] =
      xstrdup("SLURM_PREEMPT_CHECKPOINT=signal=10,grace=60,lead=60,requeue=1,steps=gpu");
  job.spank_job_env_size = 1;
  job.batch_flag = 1;  // its environment came from job_submit
  export_checkpoint_env(job, policy);
  EXPECT_EQ(details.env_cnt, 0u);
  job.batch_flag = 0;
  xfree(job.spank_job_env[0]);
  job.spank_job_env[0] = xstrdup("OTHER=1");
  export_checkpoint_env(job, policy);
  EXPECT_EQ(details.env_cnt, 0u);
  EXPECT_EQ(details.env_sup, nullptr);
  xfree(job.spank_job_env[0]);
  xfree(job.spank_job_env);
}

}  // namespace
}  // namespace sp
