#include "ktune/calibrate/datasheet.hpp"

namespace ktune::calibrate {
namespace {

// Matched on the driver's device name, first match wins (so "H100 PCIe" before "H100", "L40S"
// before "L4"). Dense tensor rates; FP32 is the non-tensor FMA rate.
struct Model {
  std::string_view needle, also;  // both must appear in the name ("" matches anything)
  DatasheetCeilings figures;
};
const Model kModels[] = {
    {"H100", "PCIe", {"NVIDIA H100 PCIe 80GB", 2.0e12, 51.2e12, 756.0e12, 756.0e12}},
    {"H100", "NVL", {"NVIDIA H100 NVL 94GB", 3.9e12, 60.0e12, 835.0e12, 835.0e12}},
    {"H100", "", {"NVIDIA H100 SXM5 80GB", 3.35e12, 66.9e12, 989.4e12, 989.4e12}},
    {"H200", "", {"NVIDIA H200 SXM 141GB", 4.8e12, 66.9e12, 989.4e12, 989.4e12}},
    {"A100", "80GB PCIe", {"NVIDIA A100 PCIe 80GB", 1.935e12, 19.5e12, 312.0e12, 312.0e12}},
    {"A100", "80GB", {"NVIDIA A100 SXM4 80GB", 2.039e12, 19.5e12, 312.0e12, 312.0e12}},
    {"A100", "", {"NVIDIA A100 40GB", 1.555e12, 19.5e12, 312.0e12, 312.0e12}},
    {"L40S", "", {"NVIDIA L40S", 0.864e12, 91.6e12, 362.05e12, 362.05e12}},
    {"L4", "", {"NVIDIA L4", 0.3e12, 30.3e12, 121.0e12, 121.0e12}},
};

}  // namespace

std::optional<DatasheetCeilings> datasheet_ceilings(std::string_view device_name) {
  const auto has = [&](std::string_view s) {
    return device_name.find(s) != std::string_view::npos;
  };
  for (const Model& m : kModels)
    if (has(m.needle) && has(m.also)) return m.figures;
  return std::nullopt;
}

}  // namespace ktune::calibrate
