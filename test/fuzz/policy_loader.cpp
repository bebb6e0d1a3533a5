// libFuzzer target: the YAML policy loader (lib/policy_loader.cpp), fed any bytes.
// Properties: it returns (no crash, leak, UB, or runaway time: libFuzzer's -timeout), an error
// names the file, and a loaded policy is consistent (every preempted QOS exists and is
// preemptible, the checkpoint signal survives the trip to the nodes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint.hpp"
#include "fuzz_check.hpp"
#include "policy_loader.hpp"
#include "units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const sp::PolicyResult r = sp::load_policy_text(text, "fuzz.yaml");
  if (const sp::PolicyError* e = sp::error_of(r)) {
    SP_FUZZ_CHECK(e->file == "fuzz.yaml");
    SP_FUZZ_CHECK(!e->message.empty());
    SP_FUZZ_CHECK(e->line >= 0 && e->column >= 0);
    SP_FUZZ_CHECK(e->str().rfind("fuzz.yaml", 0) == 0);
    return 0;
  }
  const auto p = sp::policy_of(r);
  SP_FUZZ_CHECK(p != nullptr);
  SP_FUZZ_CHECK(p->source == "fuzz.yaml");
  for (const auto& q : p->qos) {
    SP_FUZZ_CHECK(!q.name.empty());
    SP_FUZZ_CHECK(p->grace_for(q) >= 0 && p->grace_for(q) <= sp::kMaxGraceS);
    for (const auto& victim : q.preempts) {
      const sp::QosRule* v = p->find_qos(victim);
      SP_FUZZ_CHECK(v != nullptr && v->preemptible && !q.preemptible);
    }
  }
  for (const auto& g : p->owners) {
    SP_FUZZ_CHECK(!g.node_names.empty() && !g.partitions.empty());
    SP_FUZZ_CHECK(p->find_owner(g.account) != nullptr);
  }
  // Quotas: a limit never below the quota, a license per project, default classes that exist,
  // and each preemptible class has its QOS rule (the checkpoint promise's grace).
  for (const auto& q : p->quotas) {
    SP_FUZZ_CHECK(q.limit < 0 || q.limit >= q.gpus);
    SP_FUZZ_CHECK(q.license.rfind("quota_", 0) == 0);
    SP_FUZZ_CHECK(p->find_quota(q.account) == &q);
  }
  if (!p->quotas.empty()) {
    SP_FUZZ_CHECK(p->find_class(p->default_class.batch) != nullptr);
    SP_FUZZ_CHECK(p->find_class(p->default_class.interactive) != nullptr);
  }
  for (const auto& c : p->classes) {
    SP_FUZZ_CHECK(p->find_qos(c.name) == nullptr);
    SP_FUZZ_CHECK(c.preemptible == (p->find_class_rule(c.name) != nullptr));
    SP_FUZZ_CHECK(p->grace_for(c) >= 0 && p->grace_for(c) <= sp::kMaxGraceS);
  }
  // The checkpoint signal reads back from the name the nodes get in their environment, and can
  // be delivered (not KILL, STOP, CONT or a private trigger).
  SP_FUZZ_CHECK(sp::parse_signal(sp::signal_name(p->checkpoint.signal)) == p->checkpoint.signal);
  SP_FUZZ_CHECK(sp::deliverable_signal(p->checkpoint.signal));
  SP_FUZZ_CHECK(p->checkpoint.notice_file.find('/') == std::string::npos);
  // What the loader accepts, it accepts again (no state across calls).
  SP_FUZZ_CHECK(sp::policy_of(sp::load_policy_text(text, "fuzz.yaml")) != nullptr);
  return 0;
}
