#pragma once
// Kernel names as people read them. A demangled kernel name can run to thousands of characters
// (PyTorch's elementwise kernels carry their functor's whole lambda chain), yet its base name
// alone ("vectorized_elementwise_kernel") is shared by dozens of different kernels. Three forms:
//   full    the demangled name as the trace holds it;
//   middle  the base name plus the one template argument that tells its instances apart, reduced
//           to its readable core (the default everywhere names are shown):
//             vectorized_elementwise_kernel<GeluCUDAKernelImpl>, elementwise_kernel<MulFunctor>,
//             device_kernel<KernelTmaWarpSpecializedCooperative 128x256x64>;
//   base    Nsight Compute's short form: no return type, namespaces, templates or parameters.
// Names that are not C++ signatures (nvjet_..., sm90_xmma_..., triton_...) carry their tile names
// already and come back unchanged in every form (cut when absurdly long), and so does anything
// unbalanced the parser cannot read. docs/report.md describes the rule.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::analyze {

std::string base_name(std::string_view demangled);
// The middle form of one name, on its own; NameTable makes the forms of one report distinct.
std::string middle_name(std::string_view demangled);

// Longest middle form shown; longer ones are cut with "..." (and made distinct by NameTable).
inline constexpr std::size_t kMaxMiddleNameChars = 160;

// How reports show names: `--names middle|base|full`.
enum class NameStyle { middle, base, full };
NameStyle parse_name_style(std::string_view text);  // ktune::Error naming the choices otherwise
std::string shown_name(std::string_view demangled, NameStyle style);

// The names one report (or fleet listing) shows. In the middle style, full names that would read
// the same are told apart: each gets the first reduced template argument (or parameter) at which
// they differ, and names still alike get " #1", " #2"... in the order of their full names.
class NameTable {
 public:
  NameTable() = default;
  NameTable(const std::vector<std::string>& full_names, NameStyle style);
  // The shown form of `full`; a name the table was not built with gets its form on its own.
  std::string operator()(std::string_view full) const;
  NameStyle style() const { return style_; }

 private:
  NameStyle style_ = NameStyle::middle;
  std::map<std::string, std::string, std::less<>> shown_;
};

}  // namespace ktune::analyze
