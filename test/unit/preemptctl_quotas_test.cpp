#include <gtest/gtest.h>

#include "policy_loader.hpp"
#include "quota_report.hpp"

namespace sp {
namespace {

// What `squeue -h -a -t RUNNING,PENDING -O <squeue_quota_format()>` printed on the test cluster
// for `sbatch -N2 --gres=gpu:4` pending, `-N1 --gres=gpu:2` running, and a pending job listed
// with two partitions.
constexpr const char* kSqueue =
    "4|project-a|public|train|PENDING|cpu=2,mem=2000M,node=2,billing=2,gres/gpu=8|N/A|\n"
    "5|project-a|public|inference|RUNNING|cpu=1,node=1,billing=1,gres/gpu=2|2026-11-23T14:57:14|\n"
    "7_2|project-b|public,standby|train|PENDING|cpu=1,node=1,billing=1|N/A|   \n"
    "8|project-b|public|train|COMPLETING|cpu=1,gres/gpu=4|2026-11-23T14:57:14|\n"
    "garbage\n";

TEST(QuotaReport, SqueueLinesBecomeListedJobs) {
  EXPECT_EQ(squeue_quota_format(),
            "JobID:|,Account:|,Partition:|,QOS:|,State:|,tres-alloc:|,StartTime:|");
  const auto jobs = parse_squeue_quota(kSqueue);
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].job_id, 4u);
  EXPECT_EQ(jobs[0].account, "project-a");
  EXPECT_EQ(jobs[0].qos, "train");
  EXPECT_FALSE(jobs[0].running);
  EXPECT_EQ(jobs[0].gpus, 8u);  // gres/gpu of the whole job, two nodes of 4
  EXPECT_EQ(jobs[0].start_time, 0);
  EXPECT_TRUE(jobs[1].running);
  EXPECT_EQ(jobs[1].gpus, 2u);
  EXPECT_GT(jobs[1].start_time, 1'700'000'000);
  EXPECT_EQ(jobs[2].job_id, 7u);  // an array task
  EXPECT_EQ(jobs[2].partition, "public,standby");
  EXPECT_EQ(jobs[2].gpus, 0u);
}

TEST(QuotaReport, OlderStartsSortBefore) {
  const auto jobs = parse_squeue_quota(
      "1|a|p|q|RUNNING|gres/gpu=1|2026-01-01T00:00:00|\n2|a|p|q|RUNNING|gres/gpu=1|"
      "2026-01-01T00:01:00|\n");
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[1].start_time - jobs[0].start_time, 60);
}

TEST(QuotaReport, ParsableAndTableOutput) {
  auto r = load_policy_text(
      "version: 1\nclasses:\n  inference: {priority: 125, preemptible: false}\n"
      "  interactive: {priority: 75}\n  train: {priority: 50, preemptible: true}\n"
      "quotas:\n  project-a: {gpus: 6}\n  project-b: {gpus: 2, limit: 4}\n",
      "q.yaml");
  ASSERT_EQ(error_of(r), nullptr) << error_of(r)->str();
  const auto lines = quota_lines(*policy_of(r), parse_squeue_quota(kSqueue));
  EXPECT_EQ(format_quota_parsable(lines),
            "project|pool|quota|limit|used|nonpreemptible|borrowed|pending\n"
            "project-a|*|6|-|2|2|0|8\n"
            "project-b|*|2|4|0|0|0|0\n");
  EXPECT_EQ(format_quota_table(lines),
            "project    pool  quota  limit  used  nonpreemptible  borrowed  pending\n"
            "project-a  *         6      -     2               2         0        8\n"
            "project-b  *         2      4     0               0         0        0\n");
}

}  // namespace
}  // namespace sp
