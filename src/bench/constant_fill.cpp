#include "constant_fill.hpp"

#include <algorithm>
#include <cstring>

namespace ktune::bench::detail {

ConstantFill plan_constant_fill(const std::vector<std::byte>& element, std::size_t count) {
  ConstantFill f;
  if (count == 0 || element.empty()) return f;
  if (std::all_of(element.begin(), element.end(), [&](std::byte b) { return b == element[0]; })) {
    f.kind = ConstantFill::Kind::memset8;
    f.value = std::to_integer<std::uint32_t>(element[0]);
    f.units = count * element.size();
  } else if (element.size() == 4) {
    f.kind = ConstantFill::Kind::memset32;
    std::memcpy(&f.value, element.data(), 4);  // host and device are both little-endian
    f.units = count;
  } else {
    f.kind = ConstantFill::Kind::copy;
    f.host.resize(count * element.size());
    for (std::size_t k = 0; k < count; ++k)
      std::memcpy(f.host.data() + k * element.size(), element.data(), element.size());
  }
  return f;
}

}  // namespace ktune::bench::detail
