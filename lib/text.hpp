// User text on its way into a log line or a message, and names compared the way Slurm
// compares them. Pure; no Slurm headers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace sp {

// How many bytes of one user string a log line or a message shows.
inline constexpr std::size_t kQuoteLimit = 128;

// `text` made safe for one log line: control characters (newlines included), DEL, C1
// controls, Unicode line separators and bidirectional overrides, invalid UTF-8 bytes and the
// backslash are escaped (\n, \r, \t, \\, \xNN); printable ASCII and other valid UTF-8 are
// kept. Only the first `limit` bytes are shown; a longer text ends in "...(N bytes)" with its
// full size. Every user-supplied string that goes into a log line or a user's message passes
// through here.
std::string quote(std::string_view text, std::size_t limit = kQuoteLimit);

// Slurm compares QOS and account names without regard to ASCII case (assoc_mgr uses
// xstrcasecmp; sacctmgr stores them in lower case), partition names exactly (list_find_part
// uses xstrcmp). same_name is the former; partitions use ==.
bool same_name(std::string_view a, std::string_view b);

}  // namespace sp
