#include "fleet_test_util.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "ktune/core/paths.hpp"
#include "ktune/trace/cublaslt_log.hpp"

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
      r.grid_y = k.grid_y;
      r.grid_z = 1;
      r.block_x = k.block_x;
      r.block_y = k.block_y;
      r.block_z = 1;
      r.correlation_id = corr++;
      r.device_id = k.device;
      t += d_ns + 100;
      w.add(r);
    }
  w.commit();
}

void write_gemm_trace(const std::filesystem::path& path,
                      const std::vector<std::pair<int, int>>& line_calls, std::uint64_t kernel_ns,
                      std::int64_t pid, const std::string& started_at) {
  std::vector<std::string> lines;
  {
    std::ifstream in(std::filesystem::path(KTUNE_SOURCE_DIR) / "tests/fixtures/cublaslt" /
                     "h100-bf16.log");
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  trace::TraceMetadata m;
  m.mode = "default";
  m.records = {"kernel", "api_call", "gemm_call", "gemm_event"};
  m.pid = pid;
  m.ppid = 1;
  m.started_at = started_at;
  m.complete = true;
  m.command_line = {"python", "attention.py"};
  Identity id;
  id.host.hostname = "node-7";
  id.software.driver_version = "580.159.04";
  id.software.nvrtc_major = 13;
  DeviceIdentity d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  id.devices.push_back(d);
  m.identity = id;
  trace::CublasLtLogParser parser;
  trace::Trace t;
  std::uint64_t time = 1'000'000;
  std::uint32_t corr = 1;
  for (const auto& [line, calls] : line_calls)
    for (int c = 0; c < calls; ++c) {
      // "[date][cublasLt][pid][Trace][function] fields", as cuBLASLt's logger callback gets it.
      const std::string& text = lines.at(static_cast<std::size_t>(line));
      std::size_t at = 0, open = 0;
      for (int g = 0; g < 5; ++g) {
        open = at;
        at = text.find(']', at) + 1;
      }
      const auto index =
          parser.add_call(text.substr(open + 1, at - open - 2), std::string_view(text).substr(at));
      const trace::GemmEventRecord e{static_cast<std::uint32_t>(pid), 11, time, index.value()};
      t.gemm_events.push_back(e);
      trace::ApiRecord a;
      a.api = "driver";
      a.name = "cuLaunchKernelEx";
      a.start_ns = time + 100;
      a.end_ns = time + 200;
      a.process_id = static_cast<std::uint32_t>(pid);
      a.thread_id = 11;
      a.correlation_id = corr;
      t.api_calls.push_back(a);
      trace::KernelRecord k;
      k.name = "nvjet_sm90_tst_64x24_64x16_2x4_h_bz_NNT";
      k.start_ns = time + 300;
      k.end_ns = time + 300 + kernel_ns;
      k.grid_x = k.grid_y = k.grid_z = 1;
      k.block_x = 384;
      k.block_y = k.block_z = 1;
      k.correlation_id = corr++;
      t.kernels.push_back(k);
      time += kernel_ns + 1000;
    }
  t.gemm_calls = parser.log().calls;
  t.metadata = m;
  trace::write_ktrace(path, t);
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
