#include "association.hpp"

extern "C" {
#include "config.h"
#include <slurm/slurm.h>

#include "src/common/assoc_mgr.h"
#include "src/common/bitstring.h"
#include "src/slurmctld/slurmctld.h"
}

namespace sp {

Association lookup_association(uint32_t uid, const char* account, const char* qos) {
  Association out;
  slurmdb_assoc_rec_t want{};
  want.uid = uid;
  want.acct = const_cast<char*>(account);
  slurmdb_assoc_rec_t* assoc = nullptr;

  assoc_mgr_lock_t locks = {};
  locks.assoc = READ_LOCK;
  locks.qos = READ_LOCK;
  locks.user = READ_LOCK;
  assoc_mgr_lock(&locks);
  if (assoc_mgr_fill_in_assoc(acct_db_conn, &want, accounting_enforce, &assoc, true) ==
          SLURM_SUCCESS &&
      assoc != nullptr) {
    out.found = true;
    if (assoc->user) out.user = assoc->user;
    if (assoc->acct) out.account = assoc->acct;
    slurmdb_qos_rec_t want_qos{};
    want_qos.name = const_cast<char*>(qos);
    slurmdb_qos_rec_t* qos_rec = nullptr;
    if (qos && *qos && assoc->usage && assoc->usage->valid_qos &&
        assoc_mgr_fill_in_qos(acct_db_conn, &want_qos, accounting_enforce, &qos_rec, true) ==
            SLURM_SUCCESS &&
        qos_rec && qos_rec->id < static_cast<uint32_t>(bit_size(assoc->usage->valid_qos))) {
      out.qos_allowed =
          bit_test(assoc->usage->valid_qos, qos_rec->id) ? Tristate::Yes : Tristate::No;
    }
  }
  assoc_mgr_unlock(&locks);
  return out;
}

void add_association(SubmitView& view, const Policy& policy, Association& storage) {
  const bool governed_qos = !view.qos.empty() && policy.find_qos(view.qos) != nullptr;
  if (!view.account.empty() && !governed_qos) return;
  // The view's strings are views into the job description, which is NUL-terminated.
  storage = lookup_association(view.user_id, view.account.empty() ? nullptr : view.account.data(),
                               governed_qos ? view.qos.data() : nullptr);
  if (view.account.empty()) view.account = storage.account;
  view.qos_allowed = storage.qos_allowed;
  view.user_name = storage.user;
  view.assoc_account = storage.account;
}

}  // namespace sp
