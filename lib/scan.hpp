// Small scanners for the notes' codecs (story.cpp, pause_mark.cpp): read a written text back
// piece by piece. Pure; no Slurm headers.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include "pause_mark.hpp"

namespace sp::scan {

// `s` starts with `p`: drop it and say so.
inline bool eat(std::string_view& s, std::string_view p) {
  if (!s.starts_with(p)) return false;
  s.remove_prefix(p.size());
  return true;
}

// The text up to `delim` (dropped too); nullopt when there is none.
inline std::optional<std::string_view> upto(std::string_view& s, std::string_view delim) {
  const auto at = s.find(delim);
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view head = s.substr(0, at);
  s.remove_prefix(at + delim.size());
  return head;
}

template <typename T>
std::optional<T> number(std::string_view s) {
  T v{};
  if (s.empty()) return std::nullopt;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

// A leading UTC time stamp as the notes write it (format_utc).
inline std::optional<int64_t> eat_time(std::string_view& s) {
  constexpr std::size_t kLen = 20;  // 2026-11-22T10:04:05Z
  if (s.size() < kLen) return std::nullopt;
  const int64_t t = parse_utc(s.substr(0, kLen));
  if (t == 0) return std::nullopt;
  s.remove_prefix(kLen);
  return t;
}

}  // namespace sp::scan
