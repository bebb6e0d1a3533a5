// libFuzzer target: the value parsers of lib/units.hpp (durations, signals, hostlists, lists).
// Properties: no crash/UB; a parsed duration prints as a Slurm time that parses back to the
// same seconds; a parsed signal's name parses back to the same signal; a hostlist expands to
// non-empty names within the bound.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.hpp"
#include "units.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto d = sp::parse_duration(text)) {
    SP_FUZZ_CHECK(*d >= 0);
    const std::string formatted = sp::format_duration(*d);
    SP_FUZZ_CHECK(sp::parse_duration(formatted) == *d);
  }

  if (const auto s = sp::parse_signal(text)) {
    SP_FUZZ_CHECK(*s >= 1 && *s <= 64);
    SP_FUZZ_CHECK(sp::parse_signal(sp::signal_name(*s)) == *s);
  }

  constexpr std::size_t kMaxHosts = 4096;
  if (const auto hosts = sp::expand_hostlist(text, kMaxHosts)) {
    SP_FUZZ_CHECK(!hosts->empty() && hosts->size() <= kMaxHosts);
    for (const auto& h : *hosts) SP_FUZZ_CHECK(!h.empty() && h.find(',') == std::string::npos);
  }

  const std::string_view first = sp::first_in_list(text, [](std::string_view) { return true; });
  SP_FUZZ_CHECK(first.empty() == (text.find_first_not_of(',') == std::string_view::npos));
  if (!first.empty()) SP_FUZZ_CHECK(sp::list_contains(text, first));
  return 0;
}
