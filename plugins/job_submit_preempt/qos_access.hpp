// Whether a submitting user may use the QOS they asked for, from slurmctld's in-memory
// association manager (no I/O, no RPC), so that a refusal can say what to do.
#pragma once

#include <cstdint>
#include <string>

#include "job_view.hpp"

namespace sp {

struct QosAccess {
  Tristate allowed = Tristate::Unset;  // Unset: no association or QOS found (Slurm decides)
  std::string user;                    // from the association, for the message
  std::string account;
};

// Takes the association manager's read locks. Call only from slurmctld.
QosAccess lookup_qos_access(uint32_t uid, const char* account, const char* qos);

}  // namespace sp
