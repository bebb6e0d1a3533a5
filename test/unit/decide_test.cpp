#include "decide.hpp"

#include <gtest/gtest.h>

namespace sp {
namespace {

TEST(Decide, FoundationAcceptsEverySubmissionUnchanged) {
  const Policy policy = default_policy();
  for (const char* qos : {"", "normal", "standby", "owner", "unknown"}) {
    SubmitView job;
    job.qos = qos;
    job.requeue = Tristate::Yes;
    const SubmitDecision d = decide(job, policy, 1'700'000'000);
    EXPECT_TRUE(d.accepted()) << qos;
    EXPECT_FALSE(d.changes()) << qos;
    EXPECT_TRUE(d.reason.empty()) << qos;
  }
}

}  // namespace
}  // namespace sp
