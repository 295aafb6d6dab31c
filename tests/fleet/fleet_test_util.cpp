#include "fleet_test_util.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"

namespace ktune::test {

void write_trace(const std::filesystem::path& path, const std::vector<FakeKernel>& kernels,
                 std::int64_t pid, const std::string& started_at, bool complete,
                 std::optional<std::uint64_t> window, int gpus) {
  trace::TraceMetadata m;
  m.mode = "kernels";
  m.pid = pid;
  m.ppid = 1;
  m.started_at = started_at;
  m.complete = complete;
  m.command_line = {"python", "train.py"};
  if (window) {
    m.window.period_s = 60;
    m.window.window_s = 2;
    m.window.index = *window;
  }
  Identity id;
  id.host.hostname = "node-7";
  id.software.driver_version = "580.159.04";
  id.software.nvrtc_major = 13;
  for (int g = 0; g < gpus; ++g) {
    DeviceIdentity d;
    d.ordinal = g;
    d.name = "NVIDIA H100 80GB HBM3";
    d.cc_major = 9;
    id.devices.push_back(d);
  }
  m.identity = id;
  trace::KtraceWriter w(path, m);
  std::uint64_t t = 1'000'000;
  std::uint32_t corr = 1;
  for (const auto& k : kernels)
    for (auto d_ns : k.durations_ns) {
      trace::KernelRecord r;
      r.name = k.name;
      r.start_ns = t;
      r.end_ns = t + d_ns;
      r.grid_x = k.grid_x;
      r.grid_y = r.grid_z = 1;
      r.block_x = k.block_x;
      r.block_y = r.block_z = 1;
      r.correlation_id = corr++;
      r.device_id = k.device;
      t += d_ns + 100;
      w.add(r);
    }
  w.commit();
}

std::filesystem::path copy_spec(const std::filesystem::path& dir, std::int64_t n) {
  const std::filesystem::path src = std::filesystem::path(KTUNE_SOURCE_DIR) / "kernels" / "copy";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(src / "copy.cu", dir / "copy.cu",
                             std::filesystem::copy_options::overwrite_existing);
  auto j = nlohmann::json::parse(read_file(src / "copy.json"));
  j["KernelSpecification"]["ProblemSize"] = {n};
  j["KernelSpecification"]["Arguments"][2]["FillValue"] = n;
  const auto path = dir / ("copy_" + std::to_string(n) + ".json");
  std::ofstream(path) << j.dump(2);
  return path;
}

}  // namespace ktune::test
