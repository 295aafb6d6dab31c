// store::pack_from_json: tuning packs (`ktune cache import`, the runtime library), then what an
// import computes from them: each entry's bucket under its op's policy (shapes and multiples up to
// the top of int64 included) and its numbers' round trip through JSON (subnormals included). A
// bad pack must end in ktune::Error; anything else escaping, a bucket whose range is empty or not
// positive, a number that changes, or a sanitizer report, is a finding.
#include <cmath>

#include "json_input.hpp"
#include "ktune/core/error.hpp"
#include "ktune/store/bucket.hpp"
#include "ktune/store/pack.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto j = ktune::fuzz::json_input(data, size);
  if (!j) return 0;
  try {
    const auto pack = ktune::store::pack_from_json(*j, "fuzz_pack.json");
    const auto again = ktune::store::pack_from_json(
        nlohmann::json::parse(ktune::store::pack_to_json(pack).dump()), "fuzz_pack.json");
    if (again.entries.size() != pack.entries.size()) __builtin_trap();
    for (std::size_t i = 0; i < pack.entries.size(); ++i) {
      const auto& e = pack.entries[i];
      if (again.entries[i].median_ns != e.median_ns || again.entries[i].noise_ns != e.noise_ns ||
          again.entries[i].throughput != e.throughput)
        __builtin_trap();  // a number that does not round-trip
      for (const auto& op : pack.ops) {
        if (op.op != e.key.op) continue;
        for (const auto& r : ktune::store::bucket_of(op.buckets, e.shape))
          if (r.lo < 1 || r.hi < r.lo) __builtin_trap();
        (void)ktune::store::bucket_name(ktune::store::bucket_of(op.buckets, e.shape));
      }
    }
  } catch (const ktune::Error&) {
  }
  return 0;
}
