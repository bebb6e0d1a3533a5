#include "fault.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

namespace sp {
namespace {

struct FaultConfig {
  unsigned long every = 0;  // 0: unarmed
  const char* only = nullptr;
  std::atomic<unsigned long> reached{0};

  FaultConfig() {
    const char* every_env =
        std::getenv("SLURM_PREEMPT_FAULT_EVERY");  // NOLINT(concurrency-mt-unsafe)
    if (every_env != nullptr) every = std::strtoul(every_env, nullptr, 10);
    only = std::getenv("SLURM_PREEMPT_FAULT_ONLY");  // NOLINT(concurrency-mt-unsafe)
  }
};

FaultConfig& config() {
  static FaultConfig c;  // read once, at the first fault point
  return c;
}

// A failed allocation that says where it was injected (in the log line of whoever caught it).
class InjectedFault final : public std::bad_alloc {
 public:
  explicit InjectedFault(const char* site) {
    std::snprintf(what_, sizeof(what_), "injected allocation failure at %s", site);
  }
  const char* what() const noexcept override { return what_; }

 private:
  char what_[128];
};

}  // namespace

void fault_point(const char* name) {
  FaultConfig& c = config();
  if (c.every == 0) return;
  if (c.only != nullptr && std::strcmp(c.only, name) != 0) return;
  if ((c.reached.fetch_add(1) + 1) % c.every == 0) throw InjectedFault(name);
}

}  // namespace sp
