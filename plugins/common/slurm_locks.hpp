// Every Slurm lock our code takes goes through one of these scoped objects, so no exception,
// early return or forgotten branch can leave slurmctld's or assoc_mgr's locks held. Slurm's
// order applies: a CtldLock before an AssocLock, released in reverse (destruction order of
// two locals declared in that order does exactly that).
//
// Rules for the code that runs inside one (README "Inside slurmctld"): no waiting for a thread,
// a file, a child process or the network; nothing that grows with the whole job list where
// Slurm itself does it every 30 s or less.
#pragma once

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/assoc_mgr.h"
#include "src/slurmctld/locks.h"
}

namespace sp {

// slurmctld's config/job/node/part/fed locks, in Slurm's order.
class CtldLock {
 public:
  explicit CtldLock(slurmctld_lock_t levels) noexcept : levels_(levels) { lock_slurmctld(levels_); }
  ~CtldLock() { unlock_slurmctld(levels_); }
  CtldLock(const CtldLock&) = delete;
  CtldLock& operator=(const CtldLock&) = delete;

 private:
  slurmctld_lock_t levels_;
};

// assoc_mgr's locks (assoc, file, qos, res, tres, user, wckey).
class AssocLock {
 public:
  explicit AssocLock(assoc_mgr_lock_t levels) noexcept : levels_(levels) {
    assoc_mgr_lock(&levels_);
  }
  ~AssocLock() { assoc_mgr_unlock(&levels_); }
  AssocLock(const AssocLock&) = delete;
  AssocLock& operator=(const AssocLock&) = delete;

 private:
  assoc_mgr_lock_t levels_;
};

// The common read set: associations and QOS.
inline assoc_mgr_lock_t assoc_qos_read() noexcept {
  assoc_mgr_lock_t l = {};
  l.assoc = READ_LOCK;
  l.qos = READ_LOCK;
  return l;
}

}  // namespace sp
