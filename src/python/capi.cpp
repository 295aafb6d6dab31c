// libktune_python.so: the C ABI of capi.h over the C++ library. Each entry point runs its body in
// guarded(), which turns what the body throws into a status and this thread's last error, so no
// exception reaches ctypes.
#include "capi.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nvtx3/nvToolsExt.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/analysis.hpp"
#include "ktune/analyze/source.hpp"
#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/report/ceilings.hpp"
#include "ktune/report/report.hpp"
#include "ktune/route/table.hpp"
#include "ktune/runtime/environment.hpp"
#include "ktune/store/bucket.hpp"
#include "ktune/store/store.hpp"

using nlohmann::json;

namespace ktune::python {
namespace {

thread_local std::string last_error;
// What ktune_last_error hands out: last_error, or a fixed sentence when even that could not be set.
thread_local const char* last_error_text = "";

int fail(int status, std::string_view message) noexcept {
  try {
    last_error.assign(message);
    last_error_text = last_error.c_str();
  } catch (...) {
    last_error_text = "ktune's library ran out of memory while reporting an error.";
  }
  return status;
}

// Runs `body`; what it throws becomes the status, its sentence the last error. `call` names the
// entry point in messages that would not say where they come from.
template <class Body>
int guarded(const char* call, Body&& body) noexcept {
  try {
    try {
      body();
      return KTUNE_OK;
    } catch (const NoGpuError& e) {
      return fail(KTUNE_NO_GPU, e.what());
    } catch (const Error& e) {
      return fail(KTUNE_ERROR, e.what());
    } catch (const json::exception& e) {
      return fail(KTUNE_ERROR, fmt::format("malformed JSON handed to {}: {}", call, e.what()));
    } catch (const std::exception& e) {
      return fail(
          KTUNE_ERROR,
          fmt::format("{} failed: {}; this is a bug in ktune, please report it.", call, e.what()));
    }
  } catch (...) {  // also a message that could not be formatted
    return fail(KTUNE_ERROR,
                "a call into ktune's library failed with an unknown exception; this is a bug in "
                "ktune, please report it.");
  }
}

// Arguments come from ctypes, where None becomes NULL: a NULL is the caller's bug, said as an Error
// rather than a crash.
template <class T>
T* not_null(T* p, const char* what) {
  if (!p)
    throw Error(fmt::format(
        "ktune's library was handed NULL for {}; pass a value (\"\" for an empty string).", what));
  return p;
}

std::string text(const char* s, const char* what) {
  return not_null(s, what);
}

std::vector<std::int64_t> shape_of(const std::int64_t* shape, std::size_t len) {
  if (len == 0) return {};
  return std::vector<std::int64_t>(not_null(shape, "shape"), shape + len);
}

// Hands `s` to the caller, who releases it with ktune_free.
void hand_out(std::string_view s, char** out) {
  char** const dest = not_null(out, "out");
  auto* copy = static_cast<char*>(std::malloc(s.size() + 1));
  if (!copy) throw std::bad_alloc();
  std::memcpy(copy, s.data(), s.size());
  copy[s.size()] = '\0';
  *dest = copy;
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

}  // namespace
}  // namespace ktune::python

using namespace ktune;
using namespace ktune::python;

extern "C" {

const char* ktune_last_error(void) {
  return last_error_text;
}

void ktune_free(char* s) {
  std::free(s);
}

int ktune_version(char** out) {
  return guarded(__func__,
                 [&] { hand_out(fmt::format("{} ({})", ktune::version(), git_commit()), out); });
}

int ktune_tracer_build_path(char** out) {
  return guarded(__func__, [&] { hand_out(KTUNE_TRACER_BUILD_PATH, out); });
}

int ktune_report_json(const char* path, const char* by, char** out) {
  return guarded(__func__, [&] {
    analyze::AnalysisOptions options;
    options.group_by = analyze::parse_group_by(text(by, "by"));
    const auto source = analyze::open_trace(text(path, "path"));
    // The store the CLI reads without --db (KTUNE_DB, else the default): the same ceilings for
    // an older trace.
    const char* db = std::getenv("KTUNE_DB");
    options.ceilings = report::report_ceilings(source->metadata(), db ? db : "");
    hand_out(report::to_json(analyze::analyze(*source, options)).dump(), out);
  });
}

int ktune_lookup_json(const char* db, const char* op, const char* dtype, const int64_t* shape,
                      size_t shape_len, const char* env_json, char** out) {
  return guarded(__func__, [&] {
    store::LookupQuery q{text(op, "op"), text(dtype, "dtype"), shape_of(shape, shape_len),
                         environment_from(json::parse(text(env_json, "env_json")))};
    store::validate_shape(q.shape, "shape");
    const auto s = store::Store::open(text(db, "db"), store::Access::read_only);
    json answer = s->lookup(q);
    answer["schema_version"] = 1;
    hand_out(answer.dump(), out);
  });
}

int ktune_get_entry_json(const char* db, const char* key_json, char** out) {
  return guarded(__func__, [&] {
    const json k = json::parse(text(key_json, "key_json"));
    const store::CacheKey key{k.at("op"),
                              k.at("dtype"),
                              k.at("bucket"),
                              k.at("arch"),
                              k.at("device_name"),
                              k.at("toolkit"),
                              k.value("driver_major", 0)};
    const auto s = store::Store::open(text(db, "db"), store::Access::read_write);
    const auto e = s->get_entry(key);
    hand_out(e ? json(*e).dump() : "null", out);
  });
}

int ktune_put_entry_json(const char* db, const char* entry_json, int force, char** out) {
  return guarded(__func__, [&] {
    const auto e = json::parse(text(entry_json, "entry_json")).get<store::CacheEntry>();
    store::validate(e, "the entry handed to ktune.put_entry");
    const auto s = store::Store::open(text(db, "db"), store::Access::read_write);
    const auto r = s->put_entry(e, force != 0);
    json answer = {{"winner", r.winner}, {"reason", r.reason}, {"bucket", r.bucket}};
    if (r.previous_median_ns) answer["previous_median_ns"] = *r.previous_median_ns;
    hand_out(answer.dump(), out);
  });
}

int ktune_put_op(const char* db, const char* op, const char* policy_json) {
  return guarded(__func__, [&] {
    const store::OpSpec spec{
        text(op, "op"), json::parse(text(policy_json, "policy_json")).get<store::BucketPolicy>(),
        std::nullopt};
    store::validate(spec, "the bucket policy of " + spec.op);
    store::Store::open(text(db, "db"), store::Access::read_write)->put_op(spec);
  });
}

int ktune_bucket_name(const char* policy_json, const int64_t* shape, size_t shape_len, char** out) {
  return guarded(__func__, [&] {
    const auto policy = json::parse(text(policy_json, "policy_json")).get<store::BucketPolicy>();
    store::validate(policy, "bucket policy");
    const auto dims = shape_of(shape, shape_len);
    store::validate_shape(dims, "key arguments");
    hand_out(store::bucket_name(store::bucket_of(policy, dims)), out);
  });
}

int ktune_list_entries_json(const char* db, const char* op, const char* arch,
                            const char* device_name, char** out) {
  return guarded(__func__, [&] {
    store::EntryFilter filter;
    filter.op = text(op, "op");
    filter.arch = text(arch, "arch");
    filter.device_name = text(device_name, "device_name");
    const auto s = store::Store::open(text(db, "db"), store::Access::read_only);
    hand_out(json(s->list_entries(filter)).dump(), out);
  });
}

int ktune_detect_environment(char** out) {
  return guarded(__func__,
                 [&] { hand_out(environment_json(runtime::detect_environment(0)).dump(), out); });
}

int ktune_nvtx_push(const char* name) {
  return guarded(__func__, [&] { nvtxRangePushA(text(name, "name").c_str()); });
}

int ktune_nvtx_pop(void) {
  return guarded(__func__, [] { nvtxRangePop(); });
}

int ktune_router_build_path(char** out) {
  return guarded(__func__, [&] { hand_out(KTUNE_ROUTER_BUILD_PATH, out); });
}

int ktune_route_table_json(const char* db, const char* arch, const char* device_name, char** out) {
  return guarded(__func__, [&] {
    store::EntryFilter filter;
    filter.arch = text(arch, "arch");
    filter.device_name = text(device_name, "device_name");
    const auto s = store::Store::open(text(db, "db"), store::Access::read_only);
    hand_out(route::RouteTable::from_entries(s->list_entries(filter)).to_json().dump(), out);
  });
}

}  // extern "C"
