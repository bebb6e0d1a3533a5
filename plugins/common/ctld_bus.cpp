#include "ctld_bus.hpp"

#include <mutex>

namespace sp::bus {
namespace {

// Never destroyed: a plugin thread may still use them while slurmctld exits.
std::mutex& waker_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
void (*g_waker)(void*) = nullptr;
void* g_waker_arg = nullptr;

std::mutex& policy_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::shared_ptr<const Policy>& policy_slot() {
  static auto* p = new std::shared_ptr<const Policy>();
  return *p;
}

}  // namespace

WatchEventQueue& events() {
  static auto* q = new WatchEventQueue();
  return *q;
}

PreemptedRuns& preempted_runs() {
  static auto* r = new PreemptedRuns();
  return *r;
}

LockStats& lock_stats() {
  static auto* s = new LockStats();
  return *s;
}

ReconfigureNotices& reconfigures() {
  static auto* r = new ReconfigureNotices();
  return *r;
}

void remember_policy(const Policy& p) {
  auto copy = std::make_shared<const Policy>(p);
  const std::lock_guard<std::mutex> lk(policy_mutex());
  policy_slot().swap(copy);  // the old one is freed after the lock, with `copy`
}

std::shared_ptr<const Policy> last_policy() {
  const std::lock_guard<std::mutex> lk(policy_mutex());
  return policy_slot();
}

void set_watcher_waker(void (*fn)(void*), void* arg) {
  const std::lock_guard<std::mutex> lk(waker_mutex());
  g_waker = fn;
  g_waker_arg = arg;
}

void clear_watcher_waker(void* arg) {
  const std::lock_guard<std::mutex> lk(waker_mutex());
  if (g_waker_arg != arg) return;
  g_waker = nullptr;
  g_waker_arg = nullptr;
}

void wake_watcher() {
  const std::lock_guard<std::mutex> lk(waker_mutex());
  if (g_waker != nullptr) g_waker(g_waker_arg);
}

}  // namespace sp::bus
