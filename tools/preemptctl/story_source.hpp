// Where preemptctl reads a job's story: the field preempt.yaml's story.field names (the policy
// the plugins read, beside $SLURM_CONF, or --policy FILE), as sacct's column and scontrol's key.
#pragma once

#include <optional>
#include <string>

#include "story_field.hpp"

namespace sp::tool {

// preempt.yaml beside $SLURM_CONF (else /etc/slurm/slurm.conf).
std::string default_policy_path();

// The policy's story.field; nullopt, with one line on stderr saying so, when the policy
// cannot be read.
std::optional<StoryField> story_field_from(const std::string& policy_path);

}  // namespace sp::tool
