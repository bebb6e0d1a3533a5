// plugins/common/job_quota: a job record as the quota rules see it, on real job_record_t
// layouts, without daemons.
#include "job_quota.hpp"

#include <gtest/gtest.h>

#include "policy_loader.hpp"

namespace sp {
namespace {

class JobQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = load_policy_text(R"(
classes:
  train: {priority: 50, preemptible: true}
  interactive: {priority: 75, preemptible: true}
quotas:
  project-a: {gpus: 4}
  project-c: {gpus: 8, partitions: [pool]}
)",
                              "q.yaml");
    if (const auto* e = error_of(r)) FAIL() << e->str();
    policy = policy_of(r);
    job.job_state = JOB_PENDING;
    job.tres_req_cnt = req;
    job.tres_alloc_cnt = alloc;
    part.name = const_cast<char*>("public");
    job.part_ptr = &part;
    qos.name = const_cast<char*>("train");
    job.qos_ptr = &qos;
    job.account = const_cast<char*>("project-c");
  }
  std::shared_ptr<const Policy> policy;
  job_record_t job{};
  part_record_t part{};
  slurmdb_qos_rec_t qos{};
  uint64_t req[4] = {1, 1000, 1, 4};
  uint64_t alloc[4] = {2, 2000, 1, 8};
};

TEST_F(JobQuota, GpusAreRequestedWhilePendingAllocatedWhileRunning) {
  EXPECT_EQ(job_gpus(job, 3), 4u);
  job.job_state = JOB_RUNNING;
  EXPECT_EQ(job_gpus(job, 3), 8u);
  EXPECT_EQ(job_gpus(job, -1), 0u);  // the cluster does not track GPUs
  alloc[3] = NO_VAL64;
  EXPECT_EQ(job_gpus(job, 3), 0u);
  job.tres_alloc_cnt = nullptr;
  EXPECT_EQ(job_gpus(job, 3), 0u);
}

TEST_F(JobQuota, ProjectIsTheAccountsQuotaIgnoringCase) {
  EXPECT_EQ(job_project(*policy, job), policy->quota_index("project-c"));
  job.account = const_cast<char*>("Project-A");
  EXPECT_EQ(job_project(*policy, job), policy->quota_index("project-a"));
  job.account = const_cast<char*>("chem");
  EXPECT_EQ(job_project(*policy, job), -1);
  job.account = nullptr;
  EXPECT_EQ(job_project(*policy, job), -1);
}

TEST_F(JobQuota, CountedOnlyInTheQuotasPartitions) {
  const int c = policy->quota_index("project-c");
  EXPECT_FALSE(job_counted(*policy, c, job));
  part.name = const_cast<char*>("pool");
  EXPECT_TRUE(job_counted(*policy, c, job));
  job.part_ptr = nullptr;
  EXPECT_FALSE(job_counted(*policy, c, job));
  EXPECT_TRUE(job_counted(*policy, policy->quota_index("project-a"), job));  // everywhere
  EXPECT_FALSE(job_counted(*policy, -1, job));
}

TEST_F(JobQuota, ClassIsTheQosOfTheSameName) {
  EXPECT_EQ(job_class(*policy, job), policy->class_index("train"));
  qos.name = const_cast<char*>("normal");
  EXPECT_EQ(job_class(*policy, job), -1);
  job.qos_ptr = nullptr;
  EXPECT_EQ(job_class(*policy, job), -1);
}

}  // namespace
}  // namespace sp
