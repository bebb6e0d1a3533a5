// The job_submit decision: decide(view, policy, now) -> what to do with a submission.
// Pure: no I/O, no Slurm headers, no allocation on the accept path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "checkpoint.hpp"
#include "job_view.hpp"
#include "policy.hpp"

namespace sp {

struct SubmitDecision {
  enum class Verdict : uint8_t { Accept, Reject };
  // Why a submission is rejected; the plugin maps it to the matching Slurm error code.
  enum class RejectKind : uint8_t { Qos, Partition, TimeLimit, Access, Other };
  Verdict verdict = Verdict::Accept;
  RejectKind kind = RejectKind::Other;
  std::string reason;  // Reject: one line saying why and what to do instead

  // Changes to apply to the submission; views into the Policy (which outlives the decision)
  // or into the routing strings precomputed by Routes.
  std::optional<std::string_view> set_qos;
  std::optional<std::string_view> set_partition;
  std::optional<bool> set_requeue;
  // The checkpoint promise, for jobs that get one (checkpoint.hpp).
  std::optional<JobCheckpoint> checkpoint;
  // A Slurm license to add to the job: "<name>@<kLicenseServer>:<count>". Set for a
  // non-preemptible class job with GPUs in a partition its project's quota counts: the quota
  // license keeps the project's non-preemptible GPUs within its quota (Slurm holds the job
  // PENDING with reason Licenses). `name` views Quota::license.
  struct License {
    std::string_view name;
    uint64_t count = 0;
  };
  std::optional<License> add_license;
  // set_qos comes from the policy's default_class (a project's job that named no QOS).
  bool default_class = false;

  bool accepted() const { return verdict == Verdict::Accept; }
  bool changes() const {
    return set_qos || set_partition || set_requeue || checkpoint || add_license;
  }
};

SubmitDecision decide(const SubmitView& job, const Policy& policy, int64_t now);

}  // namespace sp
