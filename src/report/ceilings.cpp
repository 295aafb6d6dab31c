#include "ktune/report/ceilings.hpp"

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "ktune/calibrate/datasheet.hpp"
#include "ktune/core/paths.hpp"
#include "ktune/store/store.hpp"

namespace ktune::report {

std::vector<trace::TraceCeilings> resolve_ceilings(const trace::TraceMetadata& metadata,
                                                   const std::string& db) {
  std::vector<trace::TraceCeilings> out;
  if (!metadata.identity) return out;
  // A store file that does not exist yet (the default one, or a --db file nothing has been
  // stored in) is no error: nothing was calibrated. (A profile run's fresh KTUNE_DB made the
  // report exit 1 before ingest had created it.)
  std::unique_ptr<store::Store> store;
  bool exists = true;
  if (const auto where = store::parse_locator(db); where.kind == store::Locator::Kind::sqlite)
    exists = std::filesystem::exists(where.location);
  if (exists) store = store::Store::open(db, store::Access::read_only);
  for (const DeviceIdentity& device : metadata.identity->devices) {
    trace::TraceCeilings c;
    c.device_uuid = device.uuid;
    if (const auto record = store ? store->latest_calibration(device.uuid) : std::nullopt) {
      c.dram_bytes_per_s = record->dram_bytes_per_s;
      c.fp32_flop_per_s = record->fp32_flop_per_s;
      c.bf16_flop_per_s = record->bf16_flop_per_s;
      c.fp16_flop_per_s = record->fp16_flop_per_s;
      c.kind = "calibration";
      c.source =
          fmt::format("ktune calibrate on {} at {}", record->device_name, record->measured_at);
    } else if (const auto sheet = calibrate::datasheet_ceilings(device.name)) {
      c.dram_bytes_per_s = sheet->dram_bytes_per_s;
      c.fp32_flop_per_s = sheet->fp32_flop_per_s;
      c.bf16_flop_per_s = sheet->bf16_flop_per_s;
      c.fp16_flop_per_s = sheet->fp16_flop_per_s;
      c.kind = "datasheet";
      c.source = fmt::format("datasheet of the {} (not calibrated: ktune calibrate measures it)",
                             sheet->model);
    } else {
      continue;
    }
    out.push_back(std::move(c));
  }
  return out;
}

analyze::Ceilings report_ceilings(const trace::TraceMetadata& metadata, const std::string& db) {
  if (auto own = analyze::trace_ceilings(metadata)) return *own;
  const auto found = resolve_ceilings(metadata, db);
  if (found.empty()) return {};
  analyze::Ceilings c = analyze::to_ceilings(found.front(), analyze::CeilingsOrigin::reading_store);
  c.source += "; read on this machine: the trace predates carried ceilings";
  return c;
}

}  // namespace ktune::report
