// libFuzzer target: the checkpoint-promise codec (decode_checkpoint / encode_checkpoint), which
// reads a SPANK environment entry a user can forge.
// Properties: no crash/UB; what decodes has a signal number and a valid directory, and
// encoding it is stable: decode(encode(decode(x))) == decode(x); every number is within its
// bounds and the signal can be delivered (not KILL, STOP, CONT or a private trigger).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto c = sp::decode_checkpoint(text);
  if (!c) return 0;
  SP_FUZZ_CHECK(c->signal >= 1 && c->signal <= 64 && sp::deliverable_signal(c->signal));
  SP_FUZZ_CHECK(c->grace_s >= 0 && c->grace_s <= sp::kMaxCheckpointSeconds);
  SP_FUZZ_CHECK(c->lead_s >= 0 && c->lead_s <= sp::kMaxCheckpointSeconds);
  SP_FUZZ_CHECK(c->dir.empty() || sp::valid_checkpoint_dir(c->dir, nullptr));
  const std::string encoded = sp::encode_checkpoint(*c);
  const auto again = sp::decode_checkpoint(encoded);
  SP_FUZZ_CHECK(again.has_value() && *again == *c);
  SP_FUZZ_CHECK(sp::encode_checkpoint(*again) == encoded);
  return 0;
}
