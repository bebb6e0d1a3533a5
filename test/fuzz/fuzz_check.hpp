// Shared by the libFuzzer targets: a property that does not hold is a finding, reported with
// the input's context and turned into a crash so libFuzzer saves the input.
#pragma once

#include <cstdio>
#include <cstdlib>

#define SP_FUZZ_CHECK(cond)                                                            \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)
