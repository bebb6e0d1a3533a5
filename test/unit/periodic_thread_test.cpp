#include "periodic_thread.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
  RecordingSink log;
  std::atomic<int> runs{0};
  PeriodicThread t(log, "test", kHour, [&] { ++runs; });
  EXPECT_EQ(runs.load(), 0);
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs.load() == 1; }));
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs.load() == 2; }));
}

TEST(PeriodicThread, DestructionStopsAWaitingThreadPromptly) {
  RecordingSink log;
  std::atomic<int> runs{0};
  {
    PeriodicThread t(log, "test", kHour, [&] { ++runs; });
  }  // would hang for an hour if not
  EXPECT_EQ(runs.load(), 0);
}

TEST(PeriodicThread, ATaskThatThrowsIsLoggedAndTheThreadGoesOn) {
  RecordingSink log;
  std::atomic<int> runs{0};
  PeriodicThread t(log, "watcher", kHour, [&] {
    if (++runs == 1) throw std::runtime_error("boom");
  });
  t.wake();
  ASSERT_TRUE(eventually([&] { return !log.snapshot().empty(); }));
  EXPECT_EQ(log.snapshot().front(), "watcher: boom");
  t.wake();
  EXPECT_TRUE(eventually([&] { return runs.load() == 2; }));
}

}  // namespace
}  // namespace sp
