#pragma once
// Kernel names as a table shows them: the demangled name's base (Nsight Compute's short form),
// without return type, namespaces, template arguments and parameters:
//   "void at::native::vectorized_elementwise_kernel<4, ...>(int, ...)" ->
//   "vectorized_elementwise_kernel"
// Names that are not C++ signatures (nvjet_..., sm90_xmma_..., triton_...) come back unchanged, and
// so does anything unbalanced the parser cannot read. JSON and HTML keep the full name.
#include <string>
#include <string_view>

namespace ktune::analyze {

std::string base_name(std::string_view demangled);

// How reports show names: `--names full|base`.
enum class NameStyle { base, full };
NameStyle parse_name_style(std::string_view text);  // ktune::Error naming the choices otherwise
std::string shown_name(std::string_view demangled, NameStyle style);

}  // namespace ktune::analyze
