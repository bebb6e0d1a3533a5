// A background thread that runs a task every period, at once after wake(), and is never
// joined. Plugins run these inside slurmctld, where a plugin's fini() can be called while the
// caller holds slurmctld's write locks (JobSubmitPlugins changed at `scontrol reconfigure`):
// a task blocked in lock_slurmctld() then waits for that very caller, so joining it from fini
// would deadlock the daemon. Instead the destructor only asks the thread to stop and returns at
// once; the thread owns what it touches (the task and its captures, the log sink, through
// shared pointers) and ends when it next looks. A task must check `stopping` after it takes
// Slurm's locks and, if set, return without touching Slurm's state. The plugin's code stays
// mapped for such a thread after Slurm unloads the plugin: see pin_plugin_in_memory().
//
// Exceptions from the task are logged without allocating, never propagated.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "log.hpp"

namespace sp {

class PeriodicThread {
 public:
  using Period = std::function<std::chrono::milliseconds()>;  // asked before each wait
  using Task = std::function<void(const std::atomic<bool>& stopping)>;
  PeriodicThread(std::shared_ptr<LogSink> log, std::string name, Period period, Task task);
  ~PeriodicThread();  // stop(): never waits for the thread
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  void wake();
  void stop() noexcept;
  // Tests: whether the thread has ended, waiting at most `timeout`.
  bool exited_within(std::chrono::milliseconds timeout) const;

 private:
  struct Shared;
  std::shared_ptr<Shared> s_;
};

}  // namespace sp
