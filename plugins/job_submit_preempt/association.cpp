#include "association.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/slurmctld/slurmctld.h"
}

#include "slurm_locks.hpp"

namespace sp {

Association lookup_association(uint32_t uid, const char* account, const char* qos) {
  Association out;
  slurmdb_assoc_rec_t want{};
  want.uid = uid;
  want.acct = const_cast<char*>(account);
  slurmdb_assoc_rec_t* assoc = nullptr;

  assoc_mgr_lock_t levels = assoc_qos_read();
  levels.user = READ_LOCK;  // a user without -A: their default account
  const AssocLock lock(levels);
  if (assoc_mgr_fill_in_assoc(acct_db_conn, &want, accounting_enforce, &assoc, true) !=
          SLURM_SUCCESS ||
      assoc == nullptr) {
    assoc = nullptr;
  } else {
    out.found = true;
    if (assoc->user) out.user = assoc->user;
    if (assoc->acct) out.account = assoc->acct;
  }
  if (qos == nullptr || *qos == '\0') {
    // The QOS Slurm will give the job (job_mgr.c _determine_and_validate_qos): the
    // association's default, its only QOS, the root association's default, or "normal".
    slurmdb_qos_rec_t default_qos{};
    if (assoc == nullptr || assoc->usage != nullptr) {
      assoc_mgr_get_default_qos_info(assoc, &default_qos);
    }
    slurmdb_qos_rec_t* qos_rec = nullptr;
    if (default_qos.name != nullptr) {
      out.default_qos = default_qos.name;
    } else if (default_qos.id != 0 &&
               assoc_mgr_fill_in_qos(acct_db_conn, &default_qos, accounting_enforce, &qos_rec,
                                     true) == SLURM_SUCCESS &&
               qos_rec != nullptr && qos_rec->name != nullptr) {
      out.default_qos = qos_rec->name;
    }
  } else if (assoc != nullptr && assoc->usage && assoc->usage->valid_qos) {
    slurmdb_qos_rec_t want_qos{};
    want_qos.name = const_cast<char*>(qos);
    slurmdb_qos_rec_t* qos_rec = nullptr;
    if (assoc_mgr_fill_in_qos(acct_db_conn, &want_qos, accounting_enforce, &qos_rec, true) ==
            SLURM_SUCCESS &&
        qos_rec && qos_rec->id < static_cast<uint32_t>(bit_size(assoc->usage->valid_qos))) {
      out.qos_allowed =
          bit_test(assoc->usage->valid_qos, qos_rec->id) ? Tristate::Yes : Tristate::No;
    }
  }
  return out;
}

void add_association(SubmitView& view, const Policy& policy, Association& storage) {
  const bool governed_qos = !view.qos.empty() && policy.find_qos(view.qos) != nullptr;
  // A job without -A always gets its account resolved: routing needs it, and with quotas its
  // project (default class, quota checks) is the account.
  if (!view.account.empty() && !view.qos.empty() && !governed_qos) return;
  // The view's strings are views into the job description, which is NUL-terminated.
  storage = lookup_association(view.user_id, view.account.empty() ? nullptr : view.account.data(),
                               governed_qos ? view.qos.data() : nullptr);
  if (view.account.empty()) view.account = storage.account;
  if (view.qos.empty()) view.default_qos = storage.default_qos;
  view.qos_allowed = storage.qos_allowed;
  view.user_name = storage.user;
  view.assoc_account = storage.account;
}

}  // namespace sp
