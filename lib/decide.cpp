#include "decide.hpp"

namespace sp {

SubmitDecision decide(const SubmitView& job, const Policy& policy, int64_t now) {
  // Foundation stage: every submission is accepted unchanged. The standby, owner and quota
  // rules extend this function; the plugin applies whatever it returns.
  (void)job;
  (void)policy;
  (void)now;
  return SubmitDecision{};
}

}  // namespace sp
