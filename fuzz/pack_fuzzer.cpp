// store::pack_from_json: tuning packs (`ktune cache import`, the runtime library). A bad pack must
// end in ktune::Error; anything else escaping, or a sanitizer report, is a finding.
#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/store/pack.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = ktune::fuzz::json_input(data, size);
  if (!j) return 0;
  try {
    const auto pack = ktune::store::pack_from_json(*j, "fuzz_pack.json");
    (void)ktune::store::pack_to_json(pack).dump();
  } catch (const ktune::Error&) {
  }
  return 0;
}
