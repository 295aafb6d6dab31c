// ktune._ktune: the Python package's bindings over the C++ library. Data crosses as JSON text (the
// same versioned forms the CLI prints), so Python receives plain dicts and lists and no C++ type
// needs a Python twin; python/ktune/__init__.py parses it.
#include <cstdint>
#include <string>
#include <vector>

#include <nvtx3/nvToolsExt.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/version.hpp"
#include "ktune/report/report.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/bucket.hpp"
#include "ktune/store/store.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace ktune::python {
namespace {

// Store calls go through here; the GIL is released so that a PostgreSQL round trip or a busy
// SQLite file does not stall the caller's other Python threads.
std::unique_ptr<store::Store> open_store(const std::string& db, store::Access access) {
  py::gil_scoped_release release;
  return store::Store::open(db, access);
}

store::Environment environment_from(const json& j) {
  store::Environment env;
  env.arch = j.value("arch", "");
  env.device_name = j.value("device_name", "");
  env.toolkit = j.value("toolkit", "");
  env.driver_major = j.value("driver_major", 0);
  return env;
}

json environment_json(const store::Environment& env) {
  return {{"arch", env.arch},
          {"device_name", env.device_name},
          {"toolkit", env.toolkit},
          {"driver_major", env.driver_major}};
}

std::string report_json(const std::string& path, const std::string& by) {
  analyze::AnalysisOptions options;
  options.group_by = analyze::parse_group_by(by);
  py::gil_scoped_release release;
  analyze::KtraceSource source(path);
  return report::to_json(analyze::analyze(source, options)).dump();
}

std::string lookup_json(const std::string& db, const std::string& op, const std::string& dtype,
                        const std::vector<std::int64_t>& shape, const std::string& env_json) {
  store::validate_shape(shape, "shape");
  auto s = open_store(db, store::Access::read_only);
  store::LookupQuery q{op, dtype, shape, environment_from(json::parse(env_json))};
  py::gil_scoped_release release;
  json out = s->lookup(q);
  out["schema_version"] = 1;
  return out.dump();
}

std::string get_entry_json(const std::string& db, const std::string& key_json) {
  const json k = json::parse(key_json);
  store::CacheKey key{k.at("op"),
                      k.at("dtype"),
                      k.at("bucket"),
                      k.at("arch"),
                      k.at("device_name"),
                      k.at("toolkit"),
                      k.value("driver_major", 0)};
  auto s = open_store(db, store::Access::read_write);
  py::gil_scoped_release release;
  const auto e = s->get_entry(key);
  return e ? json(*e).dump() : "null";
}

std::string put_entry_json(const std::string& db, const std::string& entry_json, bool force) {
  auto e = json::parse(entry_json).get<store::CacheEntry>();
  store::validate(e, "the entry handed to ktune.put_entry");
  auto s = open_store(db, store::Access::read_write);
  py::gil_scoped_release release;
  const auto r = s->put_entry(e, force);
  json out = {{"winner", r.winner}, {"reason", r.reason}, {"bucket", r.bucket}};
  if (r.previous_median_ns) out["previous_median_ns"] = *r.previous_median_ns;
  return out.dump();
}

void put_op(const std::string& db, const std::string& op, const std::string& policy_json) {
  store::OpSpec spec{op, json::parse(policy_json).get<store::BucketPolicy>(), std::nullopt};
  store::validate(spec, "the bucket policy of " + op);
  auto s = open_store(db, store::Access::read_write);
  py::gil_scoped_release release;
  s->put_op(spec);
}

std::string bucket_name(const std::string& policy_json, const std::vector<std::int64_t>& shape) {
  const auto policy = json::parse(policy_json).get<store::BucketPolicy>();
  store::validate(policy, "bucket policy");
  store::validate_shape(shape, "key arguments");
  return store::bucket_name(store::bucket_of(policy, shape));
}

std::string list_entries_json(const std::string& db, const std::string& op, const std::string& arch,
                              const std::string& device_name) {
  store::EntryFilter filter;
  filter.op = op;
  filter.arch = arch;
  filter.device_name = device_name;
  auto s = open_store(db, store::Access::read_only);
  py::gil_scoped_release release;
  return json(s->list_entries(filter)).dump();
}

// A cached cuBLASLt configuration ready to run on caller-owned device memory (PyTorch tensors'
// data_ptr()), on the caller's stream: descriptors and the algorithm are built once.
class GemmPlan {
 public:
  GemmPlan(const std::string& problem_json, const std::string& config_json)
      : gemm_(json::parse(problem_json).get<bench::GemmProblem>()),
        config_(json::parse(config_json).get<bench::LtAlgoConfig>()) {
    const auto checked = gemm_.check(config_);
    if (!checked)
      throw Error(
          fmt::format("cuBLASLt rejects the cached algorithm {} for the {} GEMM; tune it "
                      "again with {}.",
                      config_.algo_id, bench::gemm_cache_op(gemm_.problem()),
                      bench::gemm_tune_command(gemm_.problem())));
    workspace_bytes_ = checked->workspace_bytes;
    algo_ = gemm_.prepare(config_);
  }
  void run(std::uintptr_t a, std::uintptr_t b, std::uintptr_t c, std::uintptr_t d,
           std::uintptr_t bias, std::uintptr_t workspace, std::size_t workspace_bytes,
           std::uintptr_t stream, float alpha, float beta) const {
    bench::GemmBuffers buf;
    buf.a = reinterpret_cast<const void*>(a);
    buf.b = reinterpret_cast<const void*>(b);
    buf.c = reinterpret_cast<const void*>(c);
    buf.d = reinterpret_cast<void*>(d);
    buf.bias = reinterpret_cast<const void*>(bias);
    gemm_.run(algo_, buf, reinterpret_cast<void*>(workspace), workspace_bytes,
              reinterpret_cast<CUstream>(stream), alpha, beta);
  }
  std::size_t workspace_bytes() const { return workspace_bytes_; }

 private:
  bench::LtGemm gemm_;
  bench::LtAlgoConfig config_;
  cublasLtMatmulAlgo_t algo_{};
  std::size_t workspace_bytes_ = 0;
};

}  // namespace
}  // namespace ktune::python

PYBIND11_MODULE(_ktune, m) {
  using namespace ktune::python;
  m.doc() = "ktune's C++ library; use the ktune package, not this module.";
  // NoGpuError derives from Error on both sides, so `except ktune.Error` catches both.
  // Held for the life of the process (never destroyed after the interpreter has gone).
  static PyObject* const error =
      py::exception<ktune::Error>(m, "Error", PyExc_RuntimeError).release().ptr();
  static PyObject* const no_gpu =
      py::exception<ktune::NoGpuError>(m, "NoGpuError", error).release().ptr();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ktune::NoGpuError& e) {
      PyErr_SetString(no_gpu, e.what());
    } catch (const ktune::Error& e) {
      PyErr_SetString(error, e.what());
    } catch (const nlohmann::json::exception& e) {
      PyErr_SetString(error, (std::string("malformed data for ktune: ") + e.what()).c_str());
    }
  });

  m.def("version", [] { return std::string(ktune::version()) + " (" + ktune::git_commit() + ")"; });
  m.def("report_json", &report_json, py::arg("path"), py::arg("by") = "name");
  m.def("lookup_json", &lookup_json, py::arg("db"), py::arg("op"), py::arg("dtype"),
        py::arg("shape"), py::arg("env_json"));
  m.def("get_entry_json", &get_entry_json, py::arg("db"), py::arg("key_json"));
  m.def("put_entry_json", &put_entry_json, py::arg("db"), py::arg("entry_json"),
        py::arg("force") = false);
  m.def("put_op", &put_op, py::arg("db"), py::arg("op"), py::arg("policy_json"));
  m.def("bucket_name", &bucket_name, py::arg("policy_json"), py::arg("shape"));
  m.def("list_entries_json", &list_entries_json, py::arg("db"), py::arg("op"), py::arg("arch") = "",
        py::arg("device_name") = "");
  py::class_<GemmPlan>(m, "GemmPlan")
      .def(py::init<const std::string&, const std::string&>(), py::arg("problem_json"),
           py::arg("config_json"))
      .def("run", &GemmPlan::run, py::arg("a"), py::arg("b"), py::arg("c"), py::arg("d"),
           py::arg("bias"), py::arg("workspace"), py::arg("workspace_bytes"), py::arg("stream"),
           py::arg("alpha"), py::arg("beta"))
      .def_property_readonly("workspace_bytes", &GemmPlan::workspace_bytes);
  m.def("detect_environment",
        [] { return environment_json(ktune::runtime::detect_environment(0)).dump(); });
  m.def("nvtx_push", [](const std::string& name) { nvtxRangePushA(name.c_str()); });
  m.def("nvtx_pop", [] { nvtxRangePop(); });
  m.attr("TRACER_BUILD_PATH") = KTUNE_TRACER_BUILD_PATH;
}
