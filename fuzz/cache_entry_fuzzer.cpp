// store: a cache entry and an op spec as JSON (`ktune cache put`, the stores' JSON columns), then
// the writer-side validation. A bad entry must end in ktune::Error; anything else escaping, or a
// sanitizer report, is a finding.
#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/store/cache_entry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = ktune::fuzz::json_input(data, size);
  if (!j) return 0;
  try {
    const auto entry = j->get<ktune::store::CacheEntry>();
    ktune::store::validate(entry, "fuzz entry");
    (void)nlohmann::json(entry).dump();
  } catch (const ktune::Error&) {
  }
  try {
    const auto spec = j->get<ktune::store::OpSpec>();
    ktune::store::validate(spec, "fuzz op");
  } catch (const ktune::Error&) {
  }
  return 0;
}
