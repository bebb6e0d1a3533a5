#include "slurm_env.hpp"

#include <string>

extern "C" {
#include "src/common/slurm_xlator.h"  // xstrdup -> slurm_xstrdup, exported by libslurm
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
}

namespace sp {
namespace {

bool names(std::string_view entry, std::string_view name) {
  return entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=';
}

}  // namespace

std::string_view env_value(char* const* env, uint32_t count, std::string_view name) {
  if (env == nullptr) return {};
  for (uint32_t i = 0; i < count && env[i] != nullptr; ++i) {
    const std::string_view entry(env[i]);
    if (names(entry, name)) return entry.substr(name.size() + 1);
  }
  return {};
}

uint32_t env_unset(char** env, uint32_t& count, std::string_view name) {
  if (env == nullptr) return 0;
  uint32_t kept = 0;
  uint32_t removed = 0;
  for (uint32_t i = 0; i < count && env[i] != nullptr; ++i) {
    if (names(env[i], name)) {
      xfree(env[i]);
      ++removed;
    } else {
      env[kept++] = env[i];
    }
  }
  if (removed == 0) return 0;
  for (uint32_t i = kept; i < count; ++i) env[i] = nullptr;
  count = kept;
  return removed;
}

void env_set(char**& env, uint32_t& count, std::string_view name, std::string_view value) {
  const std::string entry = std::string(name) + "=" + std::string(value);
  for (uint32_t i = 0; env != nullptr && i < count && env[i] != nullptr; ++i) {
    if (names(env[i], name)) {
      xfree(env[i]);
      env[i] = xstrdup(entry.c_str());
      return;
    }
  }
  env = static_cast<char**>(xrealloc(env, sizeof(char*) * (count + 2)));
  env[count++] = xstrdup(entry.c_str());
  env[count] = nullptr;
}

}  // namespace sp
