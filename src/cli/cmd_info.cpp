// ktune info: the identity block (GPU, driver, toolkit, clocks, host, ktune build).
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/cuda/identity.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

constexpr int kInfoSchemaVersion = 1;

std::string yes_no(const std::optional<bool>& v) {
  return v ? (*v ? "on" : "off") : "unknown";
}

void print_text(const Identity& id) {
  fmt::print("ktune {} ({})\n", id.software.ktune_version, id.software.ktune_commit);
  fmt::print("host        {} | {} | {}\n", id.host.hostname, id.host.cpu, id.host.os);
  fmt::print("driver      {} (CUDA driver API {}.{}), toolkit {} (NVRTC)\n",
             id.software.driver_version.empty() ? "unknown" : id.software.driver_version,
             id.software.cuda_driver_api / 1000, id.software.cuda_driver_api % 1000 / 10,
             id.software.toolkit());
  for (const auto& d : id.devices) {
    fmt::print("\nGPU {}       {} ({})\n", d.ordinal, d.name, d.uuid);
    fmt::print("  arch      {} (compute capability {}.{}), {} SMs, L2 {:.1f} MiB\n", d.arch(),
               d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes / 1048576.0);
    fmt::print("  memory    {:.1f} GiB, {}-bit bus, PCI {}\n", d.memory_bytes / 1073741824.0,
               d.memory_bus_width_bits, d.pci_bus_id);
    fmt::print("  SM clock  {} MHz now, {} MHz max;  memory clock {} MHz now, {} MHz max\n",
               d.sm_clock_mhz, d.sm_clock_max_mhz, d.mem_clock_mhz, d.mem_clock_max_mhz);
    fmt::print("  throttle  {}\n",
               d.throttle_reason_names.empty()
                   ? std::string("none")
                   : fmt::format("{}", fmt::join(d.throttle_reason_names, ", ")));
    fmt::print("  thermal   {} C, power {:.0f} W of {:.0f} W limit\n", d.temperature_c,
               d.power_draw_w, d.power_limit_w);
    fmt::print("  modes     persistence {}, ECC {}, MIG {}{}\n", yes_no(d.persistence_mode),
               yes_no(d.ecc_enabled), yes_no(d.mig_enabled),
               d.nvml_available ? "" : "  (NVML unavailable: clocks and power unknown)");
  }
}

const bool registered = register_command(
    {"info", "Show the GPU(s), driver, toolkit, clocks, throttle state and ktune build", 10,
     [](CLI::App& app, const GlobalOptions&) -> Runner {
       auto json = std::make_shared<bool>(false);
       app.add_flag("--json", *json,
                    "Print JSON (schema_version " + std::to_string(kInfoSchemaVersion) + ")");
       return [json] {
         const Identity id = cuda::capture_identity();
         if (*json) {
           print_json(nlohmann::json(id), kInfoSchemaVersion);
         } else {
           print_text(id);
         }
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
