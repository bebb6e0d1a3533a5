// Plain views of Slurm jobs, filled by the plugins' translation layers. Views borrow strings
// from the Slurm structures they were made from and live only for one call.
#pragma once

#include <cstdint>
#include <string_view>

namespace sp {

enum class Tristate : uint8_t { Unset, No, Yes };

// SubmitView::time_limit_min for --time=UNLIMITED.
inline constexpr uint32_t kTimeUnlimited = UINT32_MAX;

// A submission as job_submit() sees it (job_desc_msg_t).
struct SubmitView {
  uint32_t user_id = 0;
  std::string_view account;    // empty: the user's default account
  std::string_view qos;        // empty: the association's default QOS (default_qos)
  std::string_view partition;  // empty: the default partition; may be a comma list
  Tristate requeue = Tristate::Unset;
  uint32_t time_limit_min = 0;  // 0: not given; kTimeUnlimited: --time=UNLIMITED
  uint32_t min_nodes = 0;
  uint32_t num_tasks = 0;
  uint64_t gpus = 0;          // total GPUs requested, when known
  std::string_view licenses;  // -L as Slurm passes it ("a:2,b@srv:1"); empty: none

  // Checkpoint options: the SPANK plugin's --checkpoint-signal / --checkpoint-dir as sbatch,
  // salloc or srun passed them (empty: not given), and a --signal the user gave (0: none).
  std::string_view checkpoint_signal;
  std::string_view checkpoint_dir;
  int warn_signal = 0;
  int64_t warn_seconds = 0;
  // An allocation for salloc or srun (no batch script). Its tasks learn their promise only from
  // the environment slurmctld returns with the allocation, which priority/fairshare fills
  // (interactive_promise: PriorityType is priority/fairshare). Without it such a job gets no
  // promise, so that no task of it meets the private trigger unprotected.
  bool interactive = false;
  bool interactive_promise = true;

  // The QOS Slurm gives the job when it names none, resolved from its association the way
  // Slurm does (assoc_mgr_get_default_qos_info); empty: unknown, and decide() assumes
  // "normal", Slurm's own last resort. Filled only when `qos` is empty.
  std::string_view default_qos;

  // Filled only for QOS the policy governs: whether the user's association may use `qos`
  // (Unset: unknown, Slurm decides), and the names to put in a refusal.
  Tristate qos_allowed = Tristate::Unset;
  std::string_view user_name;
  std::string_view assoc_account;
};

}  // namespace sp
