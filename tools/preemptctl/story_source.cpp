#include "story_source.hpp"

#include <cstdio>
#include <cstdlib>

#include "policy_loader.hpp"

namespace sp::tool {

std::string default_policy_path() {
  const char* conf = std::getenv("SLURM_CONF");
  std::string c = conf && *conf ? conf : "/etc/slurm/slurm.conf";
  const auto slash = c.rfind('/');
  return (slash == std::string::npos ? std::string(".") : c.substr(0, slash)) + "/preempt.yaml";
}

std::optional<StoryField> story_field_from(const std::string& policy_path) {
  const auto loaded = load_policy_file(policy_path);
  if (const auto* e = error_of(loaded)) {
    std::fprintf(stderr,
                 "preemptctl: cannot read the policy, which says where the story is kept: %s "
                 "(--policy FILE names another)\n",
                 e->str().c_str());
    return std::nullopt;
  }
  return policy_of(loaded)->story.field;
}

}  // namespace sp::tool
