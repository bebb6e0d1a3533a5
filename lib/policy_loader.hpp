// Loads preempt.yaml (libyaml) into an immutable sp::Policy.
//
// Unknown keys, duplicate keys, wrong types, out-of-range values and contradictions (a QOS
// that both preempts and is preemptible, a node owned by two groups, ...) are errors that name
// the file, line and column: "preempt.yaml:3:1: unknown key 'standbyy' ...".
// The loader never throws and never logs; callers decide what an error means (refuse to load
// at daemon start, keep the last good policy at reconfigure).
// Its work is bounded whatever the input: files over 1 MiB, nesting deeper than 16 levels,
// more than 64 anchors or aliases, or more than 20000 values are refused with an error (a
// real policy is a few KB, 4 levels deep), before libyaml spends quadratic time on them.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include "policy.hpp"

namespace sp {

struct PolicyError {
  std::string file;
  int line = 0;    // 1-based; 0 when the error is about the file as a whole
  int column = 0;  // 1-based
  std::string message;
  // "file:line:column: message" (or "file: message" without a position).
  std::string str() const;
};

using PolicyResult = std::variant<std::shared_ptr<const Policy>, PolicyError>;

// Reads and parses a file. A missing file is an error (the plugins decide whether a missing
// policy means "defaults"; see policy_path_or_defaults()).
PolicyResult load_policy_file(const std::string& path);
// Parses text; `name` is used as the file name in messages.
PolicyResult load_policy_text(std::string_view text, const std::string& name);

inline const PolicyError* error_of(const PolicyResult& r) { return std::get_if<PolicyError>(&r); }
inline std::shared_ptr<const Policy> policy_of(const PolicyResult& r) {
  auto* p = std::get_if<std::shared_ptr<const Policy>>(&r);
  return p ? *p : nullptr;
}

}  // namespace sp
