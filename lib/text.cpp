#include "text.hpp"

namespace sp {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

bool continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// The length of the valid UTF-8 sequence at the start of `s` (2 to 4 bytes), with its code
// point; 0 when it is not one (overlong forms, surrogates and code points past U+10FFFF
// included).
std::size_t utf8_sequence(std::string_view s, char32_t& cp) {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  std::size_t n = 0;
  char32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    n = 2, cp = lead & 0x1fU, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    n = 3, cp = lead & 0x0fU, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    n = 4, cp = lead & 0x07U, min = 0x10000;
  } else {
    return 0;
  }
  if (s.size() < n) return 0;
  for (std::size_t i = 1; i < n; ++i) {
    if (!continuation(b(i))) return 0;
    cp = (cp << 6) | (b(i) & 0x3fU);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Code points that move the cursor or reorder text in a log viewer or a terminal.
bool invisible_control(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

unsigned char lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

}  // namespace

std::string quote(std::string_view text, std::size_t limit) {
  const bool cut = text.size() > limit;
  const std::string_view shown = cut ? text.substr(0, limit) : text;
  std::string out;
  out.reserve(shown.size() + (cut ? 24 : 0));
  for (std::size_t i = 0; i < shown.size();) {
    const auto c = static_cast<unsigned char>(shown[i]);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (char32_t cp = 0; c >= 0x80) {
      const std::size_t n = utf8_sequence(shown.substr(i), cp);
      if (n > 0) {
        for (std::size_t k = 0; k < n; ++k) {
          if (invisible_control(cp)) {
            append_hex(out, static_cast<unsigned char>(shown[i + k]));
          } else {
            out += shown[i + k];
          }
        }
        i += n;
        continue;
      }
      append_hex(out, c);
    } else {
      append_hex(out, c);
    }
    ++i;
  }
  if (cut) out += "...(" + std::to_string(text.size()) + " bytes)";
  return out;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(static_cast<unsigned char>(a[i])) != lower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace sp
