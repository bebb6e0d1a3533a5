#include "periodic_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

namespace sp {
namespace {

class RecordingSink final : public LogSink {
 public:
  void write(LogLevel, std::string_view m) override {
    std::lock_guard<std::mutex> lk(m_);
    lines.emplace_back(m);
  }
  std::vector<std::string> snapshot() {
    std::lock_guard<std::mutex> lk(m_);
    return lines;
  }

 private:
  std::mutex m_;
  std::vector<std::string> lines;
};

// Waits (bounded) until `done` holds; the bound only guards against a hang.
template <typename F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

const PeriodicThread::Period kHour = [] { return std::chrono::milliseconds(3'600'000); };

TEST(PeriodicThread, WakeRunsTheTaskWithoutWaitingForThePeriod) {
  auto log = std::make_shared<RecordingSink>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t(log, "test", kHour, [runs](const std::atomic<bool>&) { ++*runs; });
  EXPECT_EQ(runs->load(), 0);
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs->load() == 1; }));
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs->load() == 2; }));
}

TEST(PeriodicThread, DestructionStopsAWaitingThreadPromptly) {
  auto log = std::make_shared<RecordingSink>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  auto t = std::make_unique<PeriodicThread>(log, "test", kHour,
                                            [runs](const std::atomic<bool>&) { ++*runs; });
  t->stop();
  EXPECT_TRUE(t->exited_within(std::chrono::seconds(10)));  // would take an hour if not
  EXPECT_EQ(runs->load(), 0);
}

// The deadlock of issue 12: fini() runs while its caller holds a lock (slurmctld's write lock
// at reconfigure) that the task is waiting for. Destroying the thread object must return at
// once, and the task, once it gets the lock, must see that it is stopping.
TEST(PeriodicThread, DestructionNeverWaitsForATaskBlockedOnALockTheCallerHolds) {
  auto log = std::make_shared<RecordingSink>();
  auto slurm_lock = std::make_shared<std::mutex>();
  auto entered = std::make_shared<std::atomic<bool>>(false);
  auto saw_stop = std::make_shared<std::atomic<int>>(-1);
  std::unique_lock<std::mutex> held(*slurm_lock);  // the caller of fini() holds it
  auto t = std::make_unique<PeriodicThread>(
      log, "watcher", kHour, [slurm_lock, entered, saw_stop](const std::atomic<bool>& stopping) {
        entered->store(true);
        const std::lock_guard<std::mutex> lk(*slurm_lock);  // blocks: the caller holds it
        saw_stop->store(stopping.load() ? 1 : 0);
      });
  t->wake();
  ASSERT_TRUE(eventually([&] { return entered->load(); }));
  const auto t0 = std::chrono::steady_clock::now();
  t.reset();  // fini(): must not wait for the blocked task
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  held.unlock();  // the caller's reconfigure ends
  EXPECT_TRUE(eventually([&] { return saw_stop->load() != -1; }));
  EXPECT_EQ(saw_stop->load(), 1);
}

TEST(PeriodicThread, TheTasksCapturesOutliveTheObjectUntilTheThreadEnds) {
  auto log = std::make_shared<RecordingSink>();
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  auto gate = std::make_shared<std::mutex>();
  auto entered = std::make_shared<std::atomic<bool>>(false);
  std::unique_lock<std::mutex> held(*gate);
  {
    PeriodicThread t(log, "test", kHour,
                     [owned = std::move(owned), gate, entered](const std::atomic<bool>&) {
                       entered->store(true);
                       const std::lock_guard<std::mutex> lk(*gate);
                     });
    t.wake();
    ASSERT_TRUE(eventually([&] { return entered->load(); }));
  }
  EXPECT_FALSE(watch.expired());  // the running task still holds its captures
  held.unlock();
  EXPECT_TRUE(eventually([&] { return watch.expired(); }));  // released when the thread ends
}

TEST(PeriodicThread, ATaskThatThrowsIsLoggedAndTheThreadGoesOn) {
  auto log = std::make_shared<RecordingSink>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t(log, "watcher", kHour, [runs](const std::atomic<bool>&) {
    if (++*runs == 1) throw std::runtime_error("boom");
  });
  t.wake();
  ASSERT_TRUE(eventually([&] { return !log->snapshot().empty(); }));
  EXPECT_EQ(log->snapshot().front(), "watcher: boom");
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs->load() == 2; }));
}

TEST(PeriodicThread, AnAllocationFailureIsLoggedWithoutAllocating) {
  auto log = std::make_shared<RecordingSink>();
  auto runs = std::make_shared<std::atomic<int>>(0);
  PeriodicThread t(log, "watcher", kHour, [runs](const std::atomic<bool>&) {
    ++*runs;
    throw std::bad_alloc();
  });
  t.wake();
  ASSERT_TRUE(eventually([&] { return !log->snapshot().empty(); }));
  EXPECT_EQ(log->snapshot().front(), "watcher: std::bad_alloc");
}

}  // namespace
}  // namespace sp
