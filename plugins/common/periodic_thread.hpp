// A thread that runs a task every period, at once after wake(), and stops (joined) when the
// object is destroyed. Exceptions from the task are logged, never propagated. Used by the
// controller-side plugins for their background work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "log.hpp"

namespace sp {

class PeriodicThread {
 public:
  using Period = std::function<std::chrono::milliseconds()>;  // asked before each wait
  PeriodicThread(LogSink& log, std::string name, Period period, std::function<void()> task);
  ~PeriodicThread();
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  void wake();

 private:
  void loop();

  LogSink& log_;
  std::string name_;
  Period period_;
  std::function<void()> task_;
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool woken_ = false;
  std::thread thread_;  // last: started once everything above is ready
};

}  // namespace sp
