#include "preemption.hpp"

#include <gtest/gtest.h>

namespace sp {
namespace {

constexpr int64_t kRequeue = 1000;
constexpr int64_t kLife = 120;
constexpr int64_t kHold = kRequeue + kLife + 1;  // what Slurm sets

TEST(RequeueHold, IsReleasedOnceTheNodesAreFreeAndTwoSecondsHavePassed) {
  EXPECT_TRUE(release_requeue_hold(kRequeue, kHold, kLife, false, kRequeue + 2));
  EXPECT_TRUE(release_requeue_hold(kRequeue, kHold, kLife, false, kRequeue + 60));
}

TEST(RequeueHold, WaitsWhileTheOldRunIsCompletingOrForTwoSeconds) {
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold, kLife, true, kRequeue + 30));
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold, kLife, false, kRequeue + 1));
}

TEST(RequeueHold, AUsersBeginTimeIsNeverReleased) {
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold + 3600, kLife, false, kRequeue + 10));
  EXPECT_FALSE(release_requeue_hold(kRequeue, kRequeue + 30, kLife, false, kRequeue + 10));
}

TEST(RequeueHold, AHoldAlreadyOverIsLeftAlone) {
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold, kLife, false, kHold));
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold, kLife, false, kHold + 5));
}

TEST(RequeueHold, ToleratesASecondOfRounding) {
  EXPECT_TRUE(release_requeue_hold(kRequeue, kHold - 1, kLife, false, kRequeue + 5));
  EXPECT_TRUE(release_requeue_hold(kRequeue, kHold + 1, kLife, false, kRequeue + 5));
}

TEST(RequeueHold, NotTwoSeconds) {
  // A --begin two seconds off Slurm's hold end is the user's, not Slurm's hold.
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold - 2, kLife, false, kRequeue + 5));
  EXPECT_FALSE(release_requeue_hold(kRequeue, kHold + 2, kLife, false, kRequeue + 5));
}

}  // namespace
}  // namespace sp
