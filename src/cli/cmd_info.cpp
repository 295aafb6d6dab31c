// ktune info: everything that makes a number reproducible, as far as this machine shows it: the
// ktune build, the host, the CUDA libraries found (driver, NVRTC, CUPTI, cuBLASLt), the store, the
// Python package, and the GPU(s) with their clocks and throttle state. Without a GPU it reports
// the rest and says so on the GPU line; it exits 0 either way.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "command.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/cublaslt.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/cuda/identity.hpp"
#include "ktune/cuda/nvml.hpp"
#include "ktune/cuda/nvrtc.hpp"
#include "ktune/gate/gpu_measurer.hpp"
#include "ktune/store/store.hpp"
#include "print_json.hpp"

#ifndef KTUNE_BUILD_TYPE
#define KTUNE_BUILD_TYPE "unknown"
#endif

namespace ktune::cli {
namespace {

// 2: the build, libraries, store, Python and GPU status blocks beside the identity block.
constexpr int kInfoSchemaVersion = 2;

using nlohmann::json;

std::string yes_no(const std::optional<bool>& v) {
  return v ? (*v ? "on" : "off") : "unknown";
}

// A library found by the dynamic loader, the way ktune loads it at run time.
json library(const char* soname) {
  void* lib = ::dlopen(soname, RTLD_LAZY | RTLD_LOCAL);
  if (!lib) return {{"name", soname}, {"found", false}};
  ::dlclose(lib);
  return {{"name", soname}, {"found", true}};
}

// The facts that need no GPU, each found or said missing.
json host_facts(const GlobalOptions& g) {
  json j;
  j["build"] = {{"version", version()}, {"commit", git_commit()}, {"build_type", KTUNE_BUILD_TYPE}};
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  j["memory_bytes"] = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
  j["cpus"] = ::sysconf(_SC_NPROCESSORS_ONLN);

  json libs;
  json driver = library("libcuda.so.1");
  if (driver["found"]) {
    try {
      int api = 0;
      (void)cuda::driver().cuDriverGetVersion(&api);
      driver["cuda_driver_api"] = api;
    } catch (const Error& e) {
      driver["error"] = e.what();  // the driver is there, but cuInit found no GPU (or failed)
    }
  }
  libs["driver"] = driver;
  const auto [nvrtc_major, nvrtc_minor] = cuda::nvrtc_version();
  libs["nvrtc"] = {{"found", true}, {"version", fmt::format("{}.{}", nvrtc_major, nvrtc_minor)}};
  json nvml = library("libnvidia-ml.so.1");
  if (const cuda::Nvml* n = cuda::Nvml::get()) nvml["driver_version"] = n->driver_version();
  libs["nvml"] = nvml;
  try {
    const auto& lt = cuda::cublaslt();
    const std::size_t v = lt.cublasLtGetVersion();
    libs["cublaslt"] = {{"found", true},
                        {"version", fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)}};
  } catch (const Error& e) {
    libs["cublaslt"] = {{"found", false}, {"error", e.what()}};
  }
  try {
    libs["tracer"] = {{"found", true}, {"path", locate_tracer().string()}};
  } catch (const Error& e) {
    libs["tracer"] = {{"found", false}, {"error", e.what()}};
  }
  libs["cupti"] = library("libcupti.so");
  if (!libs["cupti"]["found"]) {
    json versioned = library(fmt::format("libcupti.so.{}", nvrtc_major).c_str());
    if (versioned["found"]) libs["cupti"] = versioned;
  }
  j["libraries"] = libs;

  json store = {{"location", store_location(g.db)}, {"backend", "sqlite"}};
  try {
    if (store::parse_locator(g.db).kind == store::Locator::Kind::postgresql)
      store["backend"] = "postgresql";
    if (const auto s = open_for_listing(g.db)) {
      store["exists"] = true;
      store["schema_version"] = s->schema_version();
    } else {
      store["exists"] = false;
    }
  } catch (const Error& e) {
    store["exists"] = nullptr;
    store["error"] = e.what();
  }
  j["store"] = store;

  json python = {{"found", false}};
  try {
    std::string out = gate::run_program(
        {"python3", "-c", "import ktune; print(ktune.__version__); print(ktune.__file__)"}, 20);
    const auto nl = out.find('\n');
    python = {{"found", true}, {"version", out.substr(0, nl)}};
    if (nl != std::string::npos) {
      std::string path = out.substr(nl + 1);
      while (!path.empty() && path.back() == '\n') path.pop_back();
      python["path"] = path;
    }
  } catch (const Error&) {
    // No python3, or no ktune package on its path: reported as not found.
  }
  j["python"] = python;
  return j;
}

std::string found(const json& lib) {
  if (!lib.value("found", false))
    return lib.contains("error") ? "not found (" + lib["error"].get<std::string>() + ")"
                                 : "not found";
  std::string s = "found";
  if (lib.contains("version")) s += " " + lib["version"].get<std::string>();
  if (lib.contains("path")) s += " (" + lib["path"].get<std::string>() + ")";
  return s;
}

void print_text(const Identity& id, const json& facts, const std::string& gpu_error) {
  const json& b = facts["build"];
  fmt::print("ktune       {} ({}), {} build\n", b["version"].get<std::string>(),
             b["commit"].get<std::string>(), b["build_type"].get<std::string>());
  fmt::print("host        {} | {} | {}\n", id.host.hostname, id.host.cpu, id.host.os);
  fmt::print("            {} CPUs, {:.1f} GiB memory\n", facts["cpus"].get<long>(),
             facts["memory_bytes"].get<double>() / 1073741824.0);
  const json& l = facts["libraries"];
  const json& drv = l["driver"];
  std::string driver = drv["found"].get<bool>() ? "libcuda.so.1 found" : "libcuda.so.1 not found";
  if (drv.contains("cuda_driver_api")) {
    const int api = drv["cuda_driver_api"].get<int>();
    driver += fmt::format(", CUDA driver API {}.{}", api / 1000, api % 1000 / 10);
  }
  if (!id.software.driver_version.empty()) driver += ", driver " + id.software.driver_version;
  fmt::print("driver      {}\n", driver);
  fmt::print("NVRTC       {} (the toolkit ktune compiles with)\n", found(l["nvrtc"]));
  fmt::print("cuBLASLt    {}\n", found(l["cublaslt"]));
  fmt::print("CUPTI       {}; tracer {}\n", found(l["cupti"]), found(l["tracer"]));
  fmt::print("NVML        {}\n", found(l["nvml"]));
  const json& s = facts["store"];
  fmt::print("store       {} ({}, {})\n", s["location"].get<std::string>(),
             s["backend"].get<std::string>(),
             s.contains("error")       ? s["error"].get<std::string>()
             : s["exists"].get<bool>() ? fmt::format("schema {}", s["schema_version"].get<int>())
                                       : std::string("none there yet"));
  const json& p = facts["python"];
  fmt::print("python      {}\n",
             p["found"].get<bool>()
                 ? fmt::format("ktune {} ({})", p["version"].get<std::string>(),
                               p.value("path", std::string()))
                 : std::string("the ktune package is not importable by python3"));
  if (id.devices.empty()) fmt::print("GPU         none: {}\n", gpu_error);
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
    {"info",
     "Show the ktune build, host, CUDA libraries, store, Python package and the GPU(s): driver, "
     "clocks, throttle state",
     10, [](CLI::App& app, const GlobalOptions& globals) -> Runner {
       auto as_json = std::make_shared<bool>(false);
       app.add_flag("--json", *as_json,
                    "Print JSON (schema_version " + std::to_string(kInfoSchemaVersion) + ")");
       return [as_json, &globals] {
         Identity id;
         std::string gpu_error;
         try {
           id = cuda::capture_identity();
         } catch (const Error& e) {  // no driver or no GPU: the rest is still worth reporting
           gpu_error = e.what();
           id.host = host_identity();
           id.captured_at = utc_now_iso8601();
           std::tie(id.software.nvrtc_major, id.software.nvrtc_minor) = cuda::nvrtc_version();
           id.software.ktune_version = version();
           id.software.ktune_commit = git_commit();
           if (const cuda::Nvml* nvml = cuda::Nvml::get())
             id.software.driver_version = nvml->driver_version();
         }
         const json facts = host_facts(globals);
         if (*as_json) {
           json j = id;
           for (const auto& [k, v] : facts.items()) j[k] = v;
           j["gpu"] = {{"count", id.devices.size()},
                       {"error", gpu_error.empty() ? json(nullptr) : json(gpu_error)}};
           print_json(j, kInfoSchemaVersion);
         } else {
           print_text(id, facts, gpu_error);
         }
         return 0;
       };
     }});

}  // namespace
}  // namespace ktune::cli
