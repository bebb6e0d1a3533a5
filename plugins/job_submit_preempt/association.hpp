// A submitter's association, from slurmctld's in-memory association manager (no I/O, no
// RPC): the account the job will run under when the user named none, and whether the user
// may use the QOS they asked for, so that routing and refusals can be decided up front.
#pragma once

#include <cstdint>
#include <string>

#include "job_view.hpp"
#include "policy.hpp"

namespace sp {

struct Association {
  bool found = false;
  std::string user;
  std::string account;                     // the named account, or the user's default
  Tristate qos_allowed = Tristate::Unset;  // for `qos`; Unset when no QOS was asked about
  std::string default_qos;  // without `qos`: the QOS Slurm will give the job; "" if unknown
};

// Takes the association manager's read locks (sp::AssocLock). Call only from slurmctld.
// `account` and `qos` may be null; without `qos`, the default QOS is resolved as Slurm does.
Association lookup_association(uint32_t uid, const char* account, const char* qos);

// Completes a submission's view with what only the association knows, when it matters: the
// account (routing needs it; most users name none), the default QOS of a job that names
// none, and, for a QOS the policy governs, whether the user holds it. `storage` keeps the strings
// the view then borrows.
void add_association(SubmitView& view, const Policy& policy, Association& storage);

}  // namespace sp
