#pragma once
// The vendor's published peak rates of the GPUs ktune knows, for a trace profiled on a GPU that
// was never calibrated: the roofline then has ceilings, labelled as the datasheet's (a datasheet
// peak is above what any kernel reaches, so "% of roof" reads lower than against a calibration).
#include <optional>
#include <string>
#include <string_view>

namespace ktune::calibrate {

struct DatasheetCeilings {
  std::string model;            // "NVIDIA H100 SXM5 80GB"
  double dram_bytes_per_s = 0;  // read + write
  double fp32_flop_per_s = 0;   // FMA = 2 FLOP, non-tensor
  double bf16_flop_per_s = 0;   // tensor cores, dense (no sparsity)
  double fp16_flop_per_s = 0;
};

// The datasheet of the model `device_name` (as the driver names it: "NVIDIA H100 80GB HBM3"),
// nullopt for a model ktune has no figures for.
std::optional<DatasheetCeilings> datasheet_ceilings(std::string_view device_name);

}  // namespace ktune::calibrate
