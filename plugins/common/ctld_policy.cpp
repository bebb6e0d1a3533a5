#include "ctld_policy.hpp"

#include "policy_loader.hpp"

extern "C" {
#include "config.h"

#include "src/common/read_config.h"
#include "src/common/xmalloc.h"
}

namespace sp {

std::string ctld_policy_path() {
  char* p = get_extra_conf_path(const_cast<char*>("preempt.yaml"));
  std::string path = p ? p : "preempt.yaml";
  xfree(p);
  return path;
}

std::shared_ptr<const Policy> load_ctld_policy(LogSink& log, const char* context) {
  auto result = load_policy_file(ctld_policy_path());
  if (const auto* err = error_of(result)) {
    log.log_error("cannot load policy: " + err->str() + "; " + context);
    return nullptr;
  }
  return policy_of(result);
}

}  // namespace sp
