// The SPANK plugin's wait, at a step's end, for a sentinel still completing a preemption's
// notice (plugins/spank_checkpoint/sentinel.hpp wait_for_notices), on real child processes:
// this test process plays slurmstepd, forked children play sentinels.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "checkpoint.hpp"
#include "sentinel.hpp"

namespace sp::spank {
namespace {

// A child named `name` that renames itself to `then` after `busy_ms` (never when -1) and
// lives on until killed, or exits at once after taking `name` when `exit_busy`.
pid_t child(std::string_view name, int busy_ms, std::string_view then, bool exit_busy = false) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const std::string first(name);
  const std::string second(then);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::prctl(PR_SET_NAME, first.c_str());
    (void)!::write(ready[1], "x", 1);
    if (exit_busy) ::_exit(0);
    if (busy_ms >= 0) {
      ::usleep(static_cast<useconds_t>(busy_ms) * 1000);
      ::prctl(PR_SET_NAME, second.c_str());
    }
    for (;;) ::pause();
  }
  char c = 0;
  (void)!::read(ready[0], &c, 1);  // named before the test looks
  ::close(ready[0]);
  ::close(ready[1]);
  return pid;
}

void reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

std::string stat_of(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return "";
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  return std::string(buf, n);
}

TEST(WaitForNotices, ReturnsOnceTheSentinelIsNoLongerBusy) {
  const pid_t idle = child(kSentinelComm, -1, "");  // an idle sentinel is not waited for
  const pid_t busy = child(kSentinelBusyComm, 300, kSentinelComm);
  ASSERT_GT(idle, 0);
  ASSERT_GT(busy, 0);
  EXPECT_TRUE(sentinel_completing_notice(stat_of(busy)));
  // Empty: it returned because the sentinel took its idle name, not at the 60 s deadline.
  EXPECT_TRUE(wait_for_notices(60000).empty());
  EXPECT_FALSE(sentinel_completing_notice(stat_of(busy)));
  reap(idle);
  reap(busy);
}

TEST(WaitForNotices, NamesTheSentinelsStillBusyAtTheDeadline) {
  const pid_t busy = child(kSentinelBusyComm, -1, "");
  ASSERT_GT(busy, 0);
  const auto left = wait_for_notices(100);
  ASSERT_EQ(left.size(), 1U);
  EXPECT_EQ(left.front(), busy);
  reap(busy);
}

TEST(WaitForNotices, DoesNotWaitForASentinelThatDiedBusy) {
  // Killed while busy, it stays a zombie with its busy name: slurmstepd reaps nothing while
  // it waits.
  const pid_t dead = child(kSentinelBusyComm, -1, "", true);
  ASSERT_GT(dead, 0);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(dead), &info, WEXITED | WNOWAIT), 0);  // not reaped
  EXPECT_FALSE(sentinel_completing_notice(stat_of(dead)));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for_notices(60000).empty());
  // Not a timing test: returning at all before the 60 s deadline is the behaviour.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  ::waitpid(dead, nullptr, 0);
}

}  // namespace
}  // namespace sp::spank
