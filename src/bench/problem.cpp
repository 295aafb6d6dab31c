#include "ktune/bench/problem.hpp"

#include <initializer_list>

namespace ktune::bench {

std::optional<cuda::DType> scalar_type_for(cuda::DType spec_type, std::size_t param_bytes) {
  using cuda::DType;
  if (cuda::dtype_bytes(spec_type) == param_bytes) return spec_type;
  const auto pick = [&](std::initializer_list<DType> kind) -> std::optional<DType> {
    for (const DType t : kind)
      if (cuda::dtype_bytes(t) == param_bytes) return t;
    return std::nullopt;
  };
  if (ktune::is_floating(spec_type)) return pick({DType::f64, DType::f32, DType::f16});
  switch (spec_type) {
    case DType::u64:
    case DType::u32:
    case DType::u16:
    case DType::u8:
      return pick({DType::u64, DType::u32, DType::u16, DType::u8});
    default:
      return pick({DType::i64, DType::i32, DType::i16, DType::i8});
  }
}

cuda::CompileOptions compile_options(const KernelLaunch& launch, const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.flags = launch.flags;
  o.name_expressions = {launch.kernel_name};
  o.headers = launch.headers;
  return o;
}

}  // namespace ktune::bench
