// tune::parse_t4: the T4 tuning-results reader (replay input). A malformed file must end in
// ktune::Error; anything else escaping, or a sanitizer report, is a finding.
#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/tune/t4.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = ktune::fuzz::json_input(data, size);
  if (!j) return 0;
  try {
    (void)ktune::tune::parse_t4(*j, "fuzz_T4.json");
  } catch (const ktune::Error&) {
  }
  return 0;
}
