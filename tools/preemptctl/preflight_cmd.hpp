// preemptctl check: the policy file, then the running cluster against it (lib/preflight.hpp).
#pragma once

#include "policy.hpp"

namespace sp::tool {

// Prints the policy's QOS rules, then one line per problem of the cluster's configuration
// (or that slurmctld does not answer) and a summary; 0 when the cluster is ready for the
// policy. policy_only: the file alone, no cluster.
int check_command(const Policy& p, bool policy_only);

}  // namespace sp::tool
