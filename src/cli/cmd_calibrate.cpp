// ktune calibrate: measure this GPU's ceilings and keep them in the store for the roofline.
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/calibrate/calibrate.hpp"
#include "ktune/core/progress.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

namespace ktune::cli {
namespace {

struct CalibrateOptions {
  bool json = false;
  bool no_store = false;
  calibrate::Options measure;
};

store::CalibrationRecord to_record(const calibrate::Result& r, int device) {
  const DeviceIdentity& d = r.identity.devices.at(static_cast<std::size_t>(device));
  store::CalibrationRecord rec;
  rec.device_uuid = d.uuid;
  rec.device_name = d.name;
  rec.arch = d.arch();
  rec.mem_clock_mhz = d.mem_clock_mhz;
  auto value = [&](const char* name) {
    const calibrate::Ceiling* c = r.find(name);
    return c ? c->value : 0.0;
  };
  rec.dram_bytes_per_s = value("dram_bandwidth");
  rec.fp32_flop_per_s = value("fp32_fma");
  rec.bf16_flop_per_s = value("bf16_tensor");
  rec.fp16_flop_per_s = value("fp16_tensor");
  if (const calibrate::Ceiling* c = r.find("bf16_tensor")) rec.sm_clock_mhz = c->sm_clock_mhz;
  rec.measured_at = r.identity.captured_at;
  rec.details = r;
  return rec;
}

void print_table(const calibrate::Result& r, int device) {
  const DeviceIdentity& d = r.identity.devices.at(static_cast<std::size_t>(device));
  fmt::print("{} ({}), driver {}, toolkit {}\n\n", d.name, d.uuid,
             r.identity.software.driver_version, r.identity.software.toolkit());
  fmt::print("{:<16} {:>14} {:>10} {:>9} {:>8} {:>9}  {}\n", "ceiling", "rate", "median ms",
             "noise %", "samples", "SM MHz", "method");
  for (const auto& c : r.ceilings) {
    const bool bw = c.unit == "bytes/s";
    fmt::print(
        "{:<16} {:>9.1f} {:<4} {:>10.4f} {:>9.2f} {:>8} {:>9}  {}{}\n", c.name,
        bw ? c.value / 1e9 : c.value / 1e12, bw ? "GB/s" : "TF/s", c.time_ms.median,
        100 * c.time_ms.relative_stddev(), c.time_ms.count, c.sm_clock_mhz, c.method,
        c.throttled_samples ? fmt::format(" ({} samples throttled)", c.throttled_samples) : "");
  }
}

const bool registered = register_command(
    {"calibrate", "Measure this GPU's DRAM bandwidth, FP32 and tensor-core rates; store them", 20,
     [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto o = std::make_shared<CalibrateOptions>();
       app.add_flag(
           "--json", o->json,
           "Print JSON (schema_version " + std::to_string(calibrate::kSchemaVersion) + ")");
       app.add_flag("--no-store", o->no_store, "Measure and print only; keep the store unchanged");
       app.add_option("--samples", o->measure.samples, "Timed runs per ceiling (median reported)")
           ->check(CLI::Range(3, 10000));
       app.add_option("--copy-gib", o->measure.copy_bytes, "Bytes per copy buffer")
           ->transform([](std::string s) { return std::to_string(std::stoull(s) << 30); })
           ->description("Size of each copy buffer in GiB (default 2)");
       app.add_option("--gemm-size", o->measure.gemm_size, "m = n = k of the tensor-core GEMM")
           ->check(CLI::Range(256, 32768));
       return [o, &globals] {
         o->measure.device = globals.device;
         cuda::driver();  // no GPU: one sentence, before anything is opened or created
         // Open the store next: a bad --db should fail before minutes of measuring.
         std::unique_ptr<store::Store> db = o->no_store ? nullptr : store::Store::open(globals.db);
         Progress progress("calibrate", 4);
         std::size_t done = 0;
         const calibrate::Result r = calibrate::run(
             o->measure, [&](const std::string& step) { progress.update(done++, step); });
         progress.finish();
         if (db) db->put_calibration(to_record(r, globals.device));
         if (o->json) {
           print_json(nlohmann::json(r));
         } else {
           print_table(r, globals.device);
           if (db) fmt::print("\nstored in {}\n", db->describe());
         }
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
