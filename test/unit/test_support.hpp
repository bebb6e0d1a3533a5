// Helpers the unit tests share: policies loaded from text, and notes as the plugins write
// them into a job's story.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "checkpoint.hpp"
#include "policy_loader.hpp"

namespace sp::test {

// The policy of `text`; a test failure (and null) when it does not load.
inline std::shared_ptr<const Policy> load_ok(const std::string& text) {
  auto r = load_policy_text(text, "test.yaml");
  if (const auto* e = error_of(r)) ADD_FAILURE() << e->str();
  return policy_of(r);
}

// The error `text` loads with; a test failure when it loads.
inline PolicyError load_err(const std::string& text) {
  auto r = load_policy_text(text, "test.yaml");
  const auto* e = error_of(r);
  if (e == nullptr) {
    ADD_FAILURE() << "expected an error for:\n" << text;
    return {};
  }
  return *e;
}

// A note as it stands in the story: "slurm-preempt: NOTE;".
inline std::string ours(const std::string& note) { return "slurm-preempt: " + note + ";"; }

// The promise of a USR1 checkpoint with `grace` seconds.
inline JobCheckpoint usr1(int64_t grace) {
  JobCheckpoint c;
  c.signal = 10;
  c.grace_s = grace;
  return c;
}

}  // namespace sp::test
