// libFuzzer target: the SPANK options' parsers (--checkpoint-signal, --checkpoint-dir; the
// plugin's option callbacks in plugins/spank_checkpoint/options.cpp only call these), and
// resolve_checkpoint(), which job_submit runs on the same raw strings in slurmctld.
// Input: SIGNAL_OPTION '\n' DIR_OPTION ['\n' flags byte].
// Properties: no crash/UB; a refusal says why; what is accepted is a catchable signal within
// the QOS grace and survives the promise codec unchanged.
// (Issue 12 item 10 will quote user text in refusals: then also assert one_line(error).)
#include <cstddef>
#include <cstdint>
#include <csignal>
#include <string>
#include <string_view>

#include "checkpoint.hpp"
#include "fuzz_check.hpp"
#include "policy.hpp"
#include "units.hpp"

namespace {

const sp::Policy& policy() {
  static const sp::Policy p = sp::default_policy();
  return p;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto nl = in.find('\n');
  const std::string_view sig = in.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  const auto nl2 = rest.find('\n');
  const std::string_view dir = rest.substr(0, nl2);
  const std::string_view flags =
      nl2 == std::string_view::npos ? std::string_view() : rest.substr(nl2 + 1);

  std::string error;
  const auto opt = sp::parse_checkpoint_signal(sig, &error);
  if (opt) {
    SP_FUZZ_CHECK(opt->signal >= 1 && opt->signal <= 64);
    SP_FUZZ_CHECK(opt->signal != SIGKILL && opt->signal != SIGSTOP);
    SP_FUZZ_CHECK(!sp::reason_for_trigger(opt->signal).has_value());
    SP_FUZZ_CHECK(opt->seconds == -1 ||
                  (opt->seconds >= 1 && opt->seconds <= sp::kMaxCheckpointSeconds));
  } else {
    SP_FUZZ_CHECK(!error.empty());
  }
  // The same text without the error sink gives the same answer.
  SP_FUZZ_CHECK(sp::parse_checkpoint_signal(sig, nullptr) == opt);

  error.clear();
  const bool dir_ok = sp::valid_checkpoint_dir(dir, &error);
  if (dir_ok) {
    SP_FUZZ_CHECK(!dir.empty() && dir.front() == '/' && dir.size() <= 4095);
  } else {
    SP_FUZZ_CHECK(!error.empty());
  }

  // job_submit's view of the same options, for a job of each default QOS.
  const uint8_t f = flags.empty() ? 0 : static_cast<uint8_t>(flags.front());
  sp::CheckpointRequest req;
  req.signal_option = sig;
  req.dir_option = dir;
  req.requeue = (f & 1U) != 0;
  req.user_signal = (f & 2U) != 0 ? 1 + (f >> 2) % 64 : 0;
  req.user_seconds = (f & 0x80U) != 0 ? 30 : 0;
  const sp::QosRule* rules[] = {nullptr, policy().find_qos("standby"), policy().find_qos("normal")};
  for (const sp::QosRule* rule : rules) {
    error.clear();
    const auto c = sp::resolve_checkpoint(req, policy(), rule, &error);
    if (!c) continue;
    SP_FUZZ_CHECK(c->signal >= 1 && c->signal <= 64);
    SP_FUZZ_CHECK(!sp::reason_for_trigger(c->signal).has_value());
    SP_FUZZ_CHECK(c->grace_s >= 0 && c->lead_s >= 0);
    if (rule != nullptr && rule->preemptible) {
      SP_FUZZ_CHECK(c->grace_s <= policy().grace_for(*rule));
    }
    // The promise travels through the codec to the watcher and the nodes unchanged.
    SP_FUZZ_CHECK(sp::decode_checkpoint(sp::encode_checkpoint(*c)) == *c);
  }
  return 0;
}
