#include "ktune/analyze/triton_kernels.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/core/error.hpp"

namespace ktune::analyze {

namespace fs = std::filesystem;
using nlohmann::json;

TritonKernels parse_inductor_scan(const json& scan, const std::string& where) {
  TritonKernels out;
  std::string at = "schema_version";
  try {
    if (scan.at("schema_version").get<int>() != kInductorScanSchemaVersion)
      throw Error(fmt::format("is {}, not {}", scan.at("schema_version").dump(),
                              kInductorScanSchemaVersion));
    at = "torch";
    out.torch = scan.at("torch").get<std::string>();
    at = "triton";
    out.triton = scan.at("triton").get<std::string>();
    const json& kernels = scan.at("kernels");
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const json& k = kernels.at(i);
      TritonKernel t;
      at = fmt::format("kernels[{}]", i);
      t.name = k.at("name").get<std::string>();
      t.kind = k.at("kind").get<std::string>();
      t.lookup_hash = k.at("lookup_hash").get<std::string>();
      t.source_hash = k.at("source_hash").get<std::string>();
      t.path = k.at("path").get<std::string>();
      t.dtype = k.at("dtype").get<std::string>();
      for (const auto& [name, v] : k.at("numels").items())
        t.numels.emplace_back(name, v.get<std::int64_t>());
      std::stable_sort(t.numels.begin(), t.numels.end(), [](const auto& a, const auto& b) {
        const bool ra = a.first[0] == 'r', rb = b.first[0] == 'r';
        return ra != rb ? rb : a.first < b.first;
      });
      t.ops = k.at("ops").get<std::vector<std::string>>();
      t.stack_traces = k.value("stack_traces", std::vector<std::string>{});
      t.tunable = k.at("tunable").get<bool>();
      t.why_not = k.value("why_not", "");
      if (t.name.empty()) throw Error("has an empty name");
      out.kernels.push_back(std::move(t));
    }
  } catch (const std::exception& e) {
    throw Error(fmt::format(
        "{}: {} is not what `python3 -m ktune.inductor scan` writes ({}); run the scan again "
        "(ktune profile does it for a Python program) or remove the file.",
        where, at, e.what()));
  }
  out.recorded = true;
  out.file = where;
  return out;
}

std::optional<fs::path> inductor_scan_for(const fs::path& trace) {
  // OUT.ktrace, OUT.<pid>.ktrace, OUT.wK.ktrace, OUT.<pid>.wK.ktrace: drop the suffixes in turn.
  std::string stem = trace.filename().string();
  if (stem.size() > 7 && stem.ends_with(".ktrace")) stem.resize(stem.size() - 7);
  for (;;) {
    const fs::path candidate = trace.parent_path() / (stem + ".inductor.json");
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return candidate;
    const std::size_t dot = stem.rfind('.');
    if (dot == std::string::npos) return std::nullopt;
    std::string_view last(stem.c_str() + dot + 1);
    if (!last.empty() && last[0] == 'w') last.remove_prefix(1);
    if (last.empty() ||
        !std::all_of(last.begin(), last.end(), [](char c) { return std::isdigit(c); }))
      return std::nullopt;
    stem.resize(dot);
  }
}

void attach_triton_kernels(Analysis& a, TritonKernels scan) {
  for (TritonKernel& t : scan.kernels)
    for (std::size_t i = 0; i < a.kernels.size(); ++i)
      if (a.kernels[i].name == t.name) {
        t.kernel_row = i;
        t.gpu_ns = a.kernels[i].total_ns;
        t.launches = a.kernels[i].duration_ns.count;
        break;
      }
  std::stable_sort(scan.kernels.begin(), scan.kernels.end(),
                   [](const TritonKernel& x, const TritonKernel& y) {
                     return x.gpu_ns != y.gpu_ns ? x.gpu_ns > y.gpu_ns : x.name < y.name;
                   });
  a.triton = std::move(scan);
}

std::string numels_text(const TritonKernel& k) {
  std::string out;
  for (const auto& [name, v] : k.numels)
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, v);
  return out;
}

std::string inductor_tune_command(const TritonKernel& k) {
  return k.tunable ? "ktune tune --inductor-kernel " + k.path : "";
}

}  // namespace ktune::analyze
