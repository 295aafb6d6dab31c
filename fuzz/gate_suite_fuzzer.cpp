// gate::parse_suite: a benchmark suite file (TOML) as `ktune gate record/check` reads it. A bad
// suite must end in ktune::Error; anything else escaping, or a sanitizer report, is a finding.
// (load_suite's bounds on the file itself, FIFOs and /dev/zero, are tests/gate/suite_test.cpp's.)
#include <cstdint>
#include <string>

#include "ktune/core/error.hpp"
#include "ktune/gate/suite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ktune::gate::parse_suite(text, "fuzz_suite.toml");
  } catch (const ktune::Error&) {
  }
  return 0;
}
