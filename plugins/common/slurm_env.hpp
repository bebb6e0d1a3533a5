// Slurm's environment arrays (char** of "NAME=value", xmalloc'd, NULL-terminated, with a
// separate count): the job's environment, its SPANK environment, its supplemental environment.
#pragma once

#include <cstdint>
#include <string_view>

namespace sp {

// The value of NAME in `env`, or an empty view when it is absent.
std::string_view env_value(char* const* env, uint32_t count, std::string_view name);

// Removes every entry named NAME (xfree), keeping the others in order and the array
// NULL-terminated. Returns how many were removed.
uint32_t env_unset(char** env, uint32_t& count, std::string_view name);

// Sets NAME=value, replacing an entry of that name or appending one (xrealloc).
void env_set(char**& env, uint32_t& count, std::string_view name, std::string_view value);

}  // namespace sp
