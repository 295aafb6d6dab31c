// libktune_route.so: preloaded into a program (ktune run sets LD_PRELOAD), it defines cuBLASLt's
// heuristic query and matmul and cuBLAS's GEMM entry points, so the program's calls come here
// first. Each call is read into its whole descriptor (trace/gemm_call.h); a call whose descriptor
// is exactly a winner's runs the winner, every other call goes to the program's own cuBLAS
// unchanged. Contract (the tracer's): nothing here throws into, aborts or blocks the program; any
// failure passes the call through. A call the router cannot size cheaply pays two attribute reads
// and a binary search before it is passed on.
//
// Where routing happens:
// - cuBLASLt: at the heuristic query (cublasLtMatmulAlgoGetHeuristic). A routed problem gets the
//   winner's algorithm as the query's answer, without running the query, and the program's own
//   cublasLtMatmul runs it with the program's own workspace: PyTorch and most callers ask once
//   per call, so a routed call costs the host less than the default does.
// - cuBLAS's legacy calls (cublasGemmEx, cublasSgemm_v2 and their strided-batched forms): run
//   through a cuBLASLt plan of the winner on the handle's stream, with a workspace of ktune's per
//   stream (allocated outside stream capture).
// A routed winner first goes through its field trial (route/field_trial.hpp); during capture, a
// winner not yet confirmed runs the call's default.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/bench/cublaslt_gemm.hpp"
#include "ktune/cuda/driver.hpp"
#include "ktune/route/router.hpp"
#include "ktune/trace/gemm_call.h"

#define KTUNE_EXPORT extern "C" __attribute__((visibility("default")))

namespace ktune::route {
namespace {

// --- the program's own functions ---------------------------------------------------------------

void* find_in_loaded(const char* fragment, const char* symbol) {
  struct Search {
    const char* fragment;
    std::string path;
  } s{fragment, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name && std::strstr(info->dlpi_name, s->fragment)) {
          s->path = info->dlpi_name;
          return 1;
        }
        return 0;
      },
      &s);
  if (s.path.empty()) return nullptr;
  void* lib = ::dlopen(s.path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  return lib ? ::dlsym(lib, symbol) : nullptr;
}

// The next definition after ours (RTLD_NEXT), else the loaded library's own, for a library the
// program loaded with RTLD_LOCAL (PyTorch's are).
template <typename F>
F real(std::atomic<F>& cache, const char* fragment, const char* symbol) {
  F f = cache.load(std::memory_order_acquire);
  if (f) return f;
  f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, symbol));
  if (!f) f = reinterpret_cast<F>(find_in_loaded(fragment, symbol));
  cache.store(f, std::memory_order_release);
  return f;
}

#define KTUNE_REAL(lib, fn, Type)            \
  ([]() {                                    \
    static std::atomic<Type> cache{nullptr}; \
    return real<Type>(cache, lib, #fn);      \
  }())
#define LT(fn) KTUNE_REAL("libcublasLt.so", fn, decltype(&::fn))
#define BLAS(fn) KTUNE_REAL("libcublas.so", fn, decltype(&::fn))
// cuBLAS's header adds C++ overloads of the Ex calls (a cudaDataType_t compute type): name the
// C entry point's type.
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void*, cudaDataType,
                                           int, long long, const void*, cudaDataType, int,
                                           long long, const void*, void*, cudaDataType, int,
                                           long long, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                           int, int, int, const void*, const void* const[],
                                           cudaDataType, int, const void* const[], cudaDataType,
                                           int, const void*, void* const[], cudaDataType, int, int,
                                           cublasComputeType_t, cublasGemmAlgo_t);

// Calls that cuBLAS makes into cuBLASLt from inside one of the program's calls are the program's
// call, not another: they pass straight through.
thread_local int t_depth = 0;
struct Nested {
  Nested() { ++t_depth; }
  ~Nested() { --t_depth; }
  bool outer() const { return t_depth == 1; }
};

// --- the router's state ------------------------------------------------------------------------

std::atomic<ktune_gemm_observer> g_observer{nullptr};
std::atomic<bool> g_enabled{true};

void say(const std::string& line) noexcept {
  std::fprintf(stderr, "ktune route: %s\n", line.c_str());
}

// One timed call of a trial: CUDA events around it on the program's stream.
struct Sample {
  Arm arm;
  CUevent start, end;
};

// The CUDA side of one winner's plan: built on its first use, in the program's context.
struct Device {
  bool tried = false;
  std::unique_ptr<bench::LtGemm> gemm;  // the legacy path's plan; also builds the algorithm
  cublasLtMatmulAlgo_t algo{};
  std::size_t workspace = 0;  // what the winner needs on ktune's own descriptors (legacy path)
  bool lt_checked = false, lt_ok = false;  // cublasLtMatmulAlgoCheck on the program's descriptors
  std::size_t lt_workspace = 0;            // what it needs on the program's descriptors
  bool have_default = false;
  cublasLtMatmulAlgo_t default_algo{};
  std::size_t default_workspace = 0;
  CUcontext ctx = nullptr;
  std::vector<Sample> pending;
  std::vector<CUevent> free_events;
};

// The driver as ktune's cuda layer loads it (the program's own libcuda, already initialised); null
// without one, and then no winner is timed or given a workspace.
const cuda::DriverApi* driver() noexcept {
  static const cuda::DriverApi* const api = []() -> const cuda::DriverApi* {
    try {
      return &cuda::driver();
    } catch (...) {
      return nullptr;
    }
  }();
  return api;
}

struct State {
  std::unique_ptr<Router> router;
  std::vector<std::unique_ptr<Device>> devices;  // per winner
  std::mutex ws_mu;
  std::map<std::pair<CUcontext, CUstream>, std::pair<CUdeviceptr, std::size_t>> workspaces;
  std::string stats_dir;
};

State* load_state() noexcept {
  try {
    auto* s = new State;
    RouteTable table;
    if (const char* path = std::getenv("KTUNE_ROUTE_TABLE"); path && *path) {
      std::ifstream in(path);
      if (!in) {
        say(fmt::format("cannot read the route table {}; every GEMM call passes through.", path));
      } else {
        try {
          table = RouteTable::from_json(nlohmann::json::parse(in), path);
        } catch (const std::exception& e) {
          say(fmt::format("{}; every GEMM call passes through.", e.what()));
        }
      }
    }
    const char* trial = std::getenv("KTUNE_ROUTE_FIELD_TRIAL");
    const bool field_trial = !(trial && std::strcmp(trial, "0") == 0);
    s->router = std::make_unique<Router>(std::move(table), field_trial);
    for (std::size_t i = 0; i < s->router->table().winners().size(); ++i)
      s->devices.push_back(std::make_unique<Device>());
    if (const char* dir = std::getenv("KTUNE_ROUTE_STATS")) s->stats_dir = dir;
    return s;
  } catch (...) {
    return nullptr;
  }
}

State* state() noexcept {
  static State* const s = load_state();
  return s;
}

void write_stats() noexcept {
  State* s = state();
  if (!s || s->stats_dir.empty()) return;
  try {
    const std::string path = fmt::format("{}/route.{}.json", s->stats_dir, ::getpid());
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp);
      out << s->router->stats_json().dump(1) << "\n";
      if (!out) return;
    }
    std::rename(tmp.c_str(), path.c_str());
  } catch (...) {
  }
}

[[gnu::constructor]] void on_load() {
  if (State* s = state(); s && !s->stats_dir.empty()) std::atexit(write_stats);
}

Device& device_of(State& s, const Winner& w) {
  return *s.devices[static_cast<std::size_t>(&w - &s.router->table().winners()[0])];
}

// Builds the winner's algorithm once, in the caller's context; false when it cannot be (then
// the winner is demoted: it cannot run here).
bool ready(Plan& plan, Device& dev) {
  if (dev.tried) return dev.gemm != nullptr;
  dev.tried = true;
  try {
    auto gemm = std::make_unique<bench::LtGemm>(plan.winner->problem);
    // cuBLASLt must take the stored algorithm for this problem (its version may differ from the
    // one it was tuned under).
    const auto checked = gemm->check(plan.winner->config);
    if (!checked) throw std::runtime_error("cuBLASLt refuses the stored algorithm");
    dev.workspace = checked->workspace_bytes;
    dev.algo = gemm->prepare(plan.winner->config);
    if (const cuda::DriverApi* d = driver()) d->cuCtxGetCurrent(&dev.ctx);
    dev.gemm = std::move(gemm);
    return true;
  } catch (const std::exception& e) {
    say(fmt::format("the winner of {} cannot be built here ({}); those calls pass through.",
                    bench::gemm_tune_command(plan.winner->problem), e.what()));
    plan.verdict = static_cast<int>(Verdict::demoted);
    return false;
  }
}

// Reads the trial's finished samples (never waits).
void collect(Plan& plan, Device& dev) {
  const cuda::DriverApi* d = driver();
  if (!d) return;
  auto it = dev.pending.begin();
  while (it != dev.pending.end()) {
    const CUresult q = d->cuEventQuery(it->end);
    if (q == CUDA_ERROR_NOT_READY) {
      ++it;
      continue;
    }
    float ms = 0;
    if (q == CUDA_SUCCESS && d->cuEventElapsedTime(&ms, it->start, it->end) == CUDA_SUCCESS)
      plan.trial.add(it->arm, static_cast<double>(ms) * 1e6);
    dev.free_events.push_back(it->start);
    dev.free_events.push_back(it->end);
    it = dev.pending.erase(it);
  }
  if (plan.trial.verdict() != Verdict::trying)
    plan.verdict = static_cast<int>(plan.trial.verdict());
}

CUevent take_event(Device& dev) {
  if (!dev.free_events.empty()) {
    CUevent e = dev.free_events.back();
    dev.free_events.pop_back();
    return e;
  }
  CUevent e = nullptr;
  return driver()->cuEventCreate(&e, CU_EVENT_DEFAULT) == CUDA_SUCCESS ? e : nullptr;
}

// Whether a trial call on `stream` can be timed: not captured, in the plan's context.
bool timeable(const Device& dev, CUstream stream) {
  const cuda::DriverApi* d = driver();
  if (!d || dev.pending.size() > 64) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (d->cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_NONE)
    return false;
  CUcontext ctx = nullptr;
  return d->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx == dev.ctx;
}

// Runs `call` between two events on `stream` when it can be timed, and files the sample.
template <typename Call>
auto timed(Plan& plan, Device& dev, Arm arm, CUstream stream, bool time, Call&& call) {
  CUevent start = time ? take_event(dev) : nullptr;
  CUevent end = start ? take_event(dev) : nullptr;
  if (end && driver()->cuEventRecord(start, stream) != CUDA_SUCCESS) end = nullptr;
  auto status = call();
  if (end && driver()->cuEventRecord(end, stream) == CUDA_SUCCESS)
    dev.pending.push_back({arm, start, end});
  else {
    if (start) dev.free_events.push_back(start);
    if (end) dev.free_events.push_back(end);
  }
  plan.trial_calls.fetch_add(1, std::memory_order_relaxed);
  return status;
}

void observe(const ktune_gemm_call& call) noexcept {
  if (ktune_gemm_observer o = g_observer.load(std::memory_order_acquire)) o(&call);
}

// --- cuBLASLt ----------------------------------------------------------------------------------

template <typename T>
T layout_attr(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, T fallback) {
  T v = fallback;
  std::size_t written = 0;
  if (LT(cublasLtMatrixLayoutGetAttribute)(l, a, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
    return fallback;
  return v;
}

template <typename T>
T desc_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, T fallback) {
  T v = fallback;
  std::size_t written = 0;
  if (LT(cublasLtMatmulDescGetAttribute)(d, a, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
    return fallback;
  return v;
}

template <typename T>
T pref_attr(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, T fallback) {
  T v = fallback;
  std::size_t written = 0;
  if (!p || LT(cublasLtMatmulPreferenceGetAttribute)(p, a, &v, sizeof v, &written) !=
                CUBLAS_STATUS_SUCCESS)
    return fallback;
  return v;
}

// The descriptor of a cuBLASLt call. `aligned` comes from the preference (the heuristic query)
// or from the pointers (the matmul).
ktune_gemm_call lt_call(cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                        cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d, bool aligned) {
  ktune_gemm_call x{};
  x.entry = KTUNE_GEMM_LT_MATMUL;
  x.transa = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
  x.transb = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  x.compute_type = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, -1);
  x.scale_type = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_SCALE_TYPE, -1);
  x.epilogue =
      desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  x.pointer_mode = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_POINTER_MODE, 0);
  // A bias of another type than D, or fp8 scales, make a problem the search does not run.
  const auto bias_type = desc_attr<std::int32_t>(op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, -1);
  const auto matrix = [](cublasLtMatrixLayout_t l, std::int32_t& type, std::int64_t& ld,
                         std::int64_t& stride, std::int32_t& order) {
    type = layout_attr<std::int32_t>(l, CUBLASLT_MATRIX_LAYOUT_TYPE, -1);
    ld = layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_LD, 0);
    stride = layout_attr<std::int64_t>(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 0);
    order |= layout_attr<std::int32_t>(l, CUBLASLT_MATRIX_LAYOUT_ORDER, CUBLASLT_ORDER_COL);
  };
  x.order = 0;
  matrix(a, x.a_type, x.lda, x.stride_a, x.order);
  matrix(b, x.b_type, x.ldb, x.stride_b, x.order);
  matrix(c ? c : d, x.c_type, x.ldc, x.stride_c, x.order);
  matrix(d, x.d_type, x.ldd, x.stride_d, x.order);
  x.m = static_cast<std::int64_t>(layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_ROWS, 0));
  x.n = static_cast<std::int64_t>(layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_COLS, 0));
  const auto a_rows = layout_attr<std::uint64_t>(a, CUBLASLT_MATRIX_LAYOUT_ROWS, 0);
  const auto a_cols = layout_attr<std::uint64_t>(a, CUBLASLT_MATRIX_LAYOUT_COLS, 0);
  x.k = static_cast<std::int64_t>(x.transa == CUBLAS_OP_N ? a_cols : a_rows);
  x.batch = layout_attr<std::int32_t>(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1);
  if (x.epilogue != CUBLASLT_EPILOGUE_DEFAULT && bias_type >= 0 && bias_type != x.d_type)
    x.epilogue = -1;
  x.aligned = aligned;
  x.algo_id = x.tile = x.stages = x.splits = x.reduction = -1;
  return x;
}

bool aligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

bool pref_aligned(cublasLtMatmulPreference_t p) {
  for (const auto a :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (pref_attr<std::uint32_t>(p, a, 256) % 16 != 0) return false;
  return true;
}

void algo_fields(const cublasLtMatmulAlgo_t* algo, ktune_gemm_call& x) {
  if (!algo) return;
  const auto get = [&](cublasLtMatmulAlgoConfigAttributes_t a) {
    std::uint32_t v = 0;
    std::size_t written = 0;
    return LT(cublasLtMatmulAlgoConfigGetAttribute)(algo, a, &v, sizeof v, &written) ==
                   CUBLAS_STATUS_SUCCESS
               ? static_cast<std::int32_t>(v)
               : -1;
  };
  x.algo_id = get(CUBLASLT_ALGO_CONFIG_ID);
  x.tile = get(CUBLASLT_ALGO_CONFIG_TILE_ID);
  x.stages = get(CUBLASLT_ALGO_CONFIG_STAGES_ID);
  x.splits = get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  x.reduction = get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
}

// The winner for a call, or null (the call passes; a near miss is counted with why). Each thread
// remembers its last descriptors' answers: a program repeats a few descriptors, and comparing one
// costs far less than working its problem and key out again.
struct Remembered {
  ktune_gemm_call key;  // every field that names the problem (those before algo_id), route 0
  Plan* plan = nullptr;
  std::string why;  // of a near miss
  bool valid = false;
};
constexpr std::size_t kKeyBytes = offsetof(ktune_gemm_call, algo_id);
static_assert(kKeyBytes == 2 * 4 + 12 * 8 + 12 * 4, "the key fields hold no padding to compare");
thread_local std::array<Remembered, 16> t_remembered;
thread_local std::size_t t_next_slot = 0;

Plan* match(Router& r, const ktune_gemm_call& call) {
  ktune_gemm_call key;
  std::memcpy(&key, &call, kKeyBytes);
  key.route = 0;
  for (const Remembered& m : t_remembered)
    if (m.valid && std::memcmp(&m.key, &key, kKeyBytes) == 0) {
      if (!m.plan) r.near_miss(m.why);
      return m.plan;
    }
  Remembered& slot = t_remembered[t_next_slot++ % t_remembered.size()];
  std::memcpy(&slot.key, &key, kKeyBytes);
  slot.plan = nullptr;
  slot.why.clear();
  slot.valid = true;
  const auto problem = problem_of(call, &slot.why);
  if (problem) {
    if (const Winner* w = r.table().find(*problem))
      slot.plan = &r.plan(*w);
    else
      slot.why = "no winner was tuned on its exact leading dimensions, strides and types";
  }
  if (!slot.plan) r.near_miss(slot.why);
  return slot.plan;
}

// What the last heuristic query of this thread answered, so its matmul knows whose it is.
struct Served {
  Plan* plan = nullptr;
  Arm arm = Arm::winner;
  int route = KTUNE_ROUTE_PASSED;  // ROUTED, KEPT or TRIAL
  cublasLtMatmulAlgo_t algo{};
};
thread_local Served t_served;

void answer(cublasLtMatmulHeuristicResult_t* results, int* returned,
            const cublasLtMatmulAlgo_t& algo, std::size_t workspace) {
  std::memset(results, 0, sizeof *results);
  results->algo = algo;
  results->workspaceSize = workspace;
  results->state = CUBLAS_STATUS_SUCCESS;
  results->wavesCount = 1.0f;
  *returned = 1;
}

}  // namespace
}  // namespace ktune::route

using namespace ktune::route;  // NOLINT: the exported functions below are C entry points

KTUNE_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  const auto real_query = LT(cublasLtMatmulAlgoGetHeuristic);
  if (!real_query) return CUBLAS_STATUS_NOT_INITIALIZED;
  const auto pass = [&] {
    return real_query(handle, op, a, b, c, d, pref, requested, results, returned);
  };
  Nested nested;
  t_served.plan = nullptr;
  State* s = state();
  if (!nested.outer() || !s || !g_enabled.load(std::memory_order_relaxed) || requested != 1 ||
      !results || !returned || s->router->table().empty())
    return pass();
  Router& r = *s->router;
  try {
    const auto m = layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_ROWS, 0);
    const auto n = layout_attr<std::uint64_t>(d, CUBLASLT_MATRIX_LAYOUT_COLS, 0);
    Plan* plan = r.table().may_hold(static_cast<std::int64_t>(m), static_cast<std::int64_t>(n))
                     ? match(r, lt_call(op, a, b, c, d, pref_aligned(pref)))
                     : nullptr;
    if (!plan) return pass();
    Device& dev = device_of(*s, *plan->winner);
    const auto max_ws = pref_attr<std::uint64_t>(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 0);
    std::unique_lock lock(plan->mu);
    if (!ready(*plan, dev)) {
      lock.unlock();
      return pass();
    }
    if (!dev.lt_checked) {
      dev.lt_checked = true;
      cublasLtMatmulHeuristicResult_t checked{};
      dev.lt_ok = LT(cublasLtMatmulAlgoCheck)(handle, op, a, b, c, d, &dev.algo, &checked) ==
                  CUBLAS_STATUS_SUCCESS;
      dev.lt_workspace = checked.workspaceSize;
      if (!dev.lt_ok) plan->verdict = static_cast<int>(Verdict::demoted);
    }
    // The call's own answer, learned once: a demoted or kept winner serves it from then on.
    if (!dev.have_default) {
      const cublasStatus_t st = pass();
      if (st == CUBLAS_STATUS_SUCCESS && *returned == 1) {
        dev.have_default = true;
        dev.default_algo = results[0].algo;
        dev.default_workspace = results[0].workspaceSize;
      }
      if (plan->winner->kept || plan->verdict == static_cast<int>(Verdict::demoted)) {
        if (dev.have_default) {
          plan->kept.fetch_add(1, std::memory_order_relaxed);
          t_served = {plan, Arm::fallback, KTUNE_ROUTE_KEPT, dev.default_algo};
        }
        return st;
      }
    }
    const auto verdict = static_cast<Verdict>(plan->verdict.load());
    if (verdict == Verdict::demoted || plan->winner->kept) {
      if (!dev.have_default || dev.default_workspace > max_ws) {
        lock.unlock();
        return pass();
      }
      plan->kept.fetch_add(1, std::memory_order_relaxed);
      answer(results, returned, dev.default_algo, dev.default_workspace);
      t_served = {plan, Arm::fallback, KTUNE_ROUTE_KEPT, dev.default_algo};
      return CUBLAS_STATUS_SUCCESS;
    }
    if (dev.lt_workspace > max_ws) {
      lock.unlock();
      r.near_miss("the winner needs more workspace than the call allows");
      return pass();
    }
    if (verdict == Verdict::routed) {
      plan->routed.fetch_add(1, std::memory_order_relaxed);
      answer(results, returned, dev.algo, dev.lt_workspace);
      t_served = {plan, Arm::winner, KTUNE_ROUTE_ROUTED, dev.algo};
      return CUBLAS_STATUS_SUCCESS;
    }
    // Trying: this call is one arm of the trial; its matmul times it.
    collect(*plan, dev);
    const Arm arm = plan->trial.next_arm();
    if (arm == Arm::winner) {
      answer(results, returned, dev.algo, dev.lt_workspace);
    } else if (dev.have_default && dev.default_workspace <= max_ws) {
      answer(results, returned, dev.default_algo, dev.default_workspace);
    } else {
      lock.unlock();
      return pass();
    }
    t_served = {plan, arm, KTUNE_ROUTE_TRIAL, results[0].algo};
    return CUBLAS_STATUS_SUCCESS;
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                           const void* alpha, const void* A,
                                           cublasLtMatrixLayout_t a, const void* B,
                                           cublasLtMatrixLayout_t b, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t c, void* D,
                                           cublasLtMatrixLayout_t d,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspace_bytes, cudaStream_t stream) {
  const auto real_matmul = LT(cublasLtMatmul);
  if (!real_matmul) return CUBLAS_STATUS_NOT_INITIALIZED;
  Nested nested;
  const Served served = std::exchange(t_served, Served{});
  const bool ours = served.plan && algo && std::memcmp(algo, &served.algo, sizeof *algo) == 0;
  const auto run = [&](const cublasLtMatmulAlgo_t* with) {
    return real_matmul(handle, op, alpha, A, a, B, b, beta, C, c, D, d, with, workspace,
                       workspace_bytes, stream);
  };
  if (!nested.outer()) return run(algo);
  try {
    if (State* s = state()) {
      s->router->count(KTUNE_GEMM_LT_MATMUL);
      if (!ours) s->router->passed(KTUNE_GEMM_LT_MATMUL);
    }
    if (g_observer.load(std::memory_order_relaxed)) {
      ktune_gemm_call x =
          lt_call(op, a, b, c, d, aligned(A) && aligned(B) && aligned(C ? C : D) && aligned(D));
      algo_fields(algo, x);
      x.route = ours ? served.route : KTUNE_ROUTE_PASSED;
      observe(x);
    }
    if (!ours || served.route != KTUNE_ROUTE_TRIAL) return run(algo);
    State* s = state();
    Plan& plan = *served.plan;
    Device& dev = device_of(*s, *plan.winner);
    std::lock_guard lock(plan.mu);
    const auto cu_stream = reinterpret_cast<CUstream>(stream);
    if (!timeable(dev, cu_stream)) {
      // Captured (or another context): a winner not yet confirmed does not go into a graph.
      const bool fallback =
          served.arm == Arm::winner && dev.have_default && dev.default_workspace <= workspace_bytes;
      return run(fallback ? &dev.default_algo : algo);
    }
    return timed(plan, dev, served.arm, cu_stream, true, [&] { return run(algo); });
  } catch (...) {
    return run(algo);
  }
}

// --- cuBLAS's legacy GEMMs ---------------------------------------------------------------------

namespace ktune::route {
namespace {

// The legacy call's descriptor: cuBLAS's own arguments, with the handle's TF32 math mode and
// pointer mode applied.
ktune_gemm_call legacy_call(int entry, cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                            std::int64_t m, std::int64_t n, std::int64_t k, const void* A,
                            cudaDataType at, std::int64_t lda, std::int64_t sa, const void* B,
                            cudaDataType bt, std::int64_t ldb, std::int64_t sb, const void* C,
                            cudaDataType ct, std::int64_t ldc, std::int64_t sc, std::int64_t batch,
                            int compute) {
  ktune_gemm_call x{};
  x.entry = entry;
  x.transa = ta;
  x.transb = tb;
  x.m = m;
  x.n = n;
  x.k = k;
  x.batch = batch;
  x.lda = lda;
  x.ldb = ldb;
  x.ldc = x.ldd = ldc;
  x.stride_a = sa;
  x.stride_b = sb;
  x.stride_c = x.stride_d = sc;
  x.a_type = at;
  x.b_type = bt;
  x.c_type = x.d_type = ct;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  if (BLAS(cublasGetMathMode)(h, &math) == CUBLAS_STATUS_SUCCESS && compute == CUBLAS_COMPUTE_32F &&
      at == CUDA_R_32F && (static_cast<int>(math) & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH)
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  x.compute_type = compute;
  x.scale_type = (compute == CUBLAS_COMPUTE_16F || compute == CUBLAS_COMPUTE_16F_PEDANTIC)
                     ? CUDA_R_16F
                     : CUDA_R_32F;
  x.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
  x.pointer_mode = BLAS(cublasGetPointerMode_v2)(h, &pm) == CUBLAS_STATUS_SUCCESS ? pm : 1;
  // Batch strides are part of the problem, so every batch is as aligned as it was when measured.
  x.aligned = aligned(A) && aligned(B) && aligned(C);
  x.algo_id = x.tile = x.stages = x.splits = x.reduction = -1;
  return x;
}

// A workspace of ktune's on the stream, for the legacy path; 0 bytes needs none. Null when none
// can be had now (the stream is being captured, or memory is short).
bool workspace_for(State& s, CUstream stream, std::size_t bytes, CUdeviceptr* out) {
  *out = 0;
  if (bytes == 0) return true;
  const cuda::DriverApi* d = driver();
  if (!d) return false;
  CUcontext ctx = nullptr;
  d->cuCtxGetCurrent(&ctx);
  std::lock_guard lock(s.ws_mu);
  auto& slot = s.workspaces[{ctx, stream}];
  if (slot.second >= bytes) {
    *out = slot.first;
    return true;
  }
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (d->cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS ||
      status != CU_STREAM_CAPTURE_STATUS_NONE)
    return false;
  CUdeviceptr p = 0;
  if (d->cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return false;
  slot = {p, bytes};  // the smaller one is kept: a stream's earlier work may still use it
  *out = p;
  return true;
}

// One legacy call: observed, then routed when its descriptor is a winner's, else `pass()`.
template <typename Pass>
cublasStatus_t legacy(int entry, cublasHandle_t h, const ktune_gemm_call& call, const void* alpha,
                      const void* beta, const void* A, const void* B, void* C, Pass&& pass) {
  State* s = state();
  Router& r = *s->router;
  Plan* plan = nullptr;
  if (g_enabled.load(std::memory_order_relaxed) && r.table().may_hold(call.m, call.n, true) &&
      entry != KTUNE_GEMM_GEMM_BATCHED_EX)
    plan = match(r, call);
  // Only fp32-scaled problems run here: alpha and beta are read as floats.
  if (plan && call.scale_type != CUDA_R_32F) plan = nullptr;
  cudaStream_t stream = nullptr;
  if (plan && BLAS(cublasGetStream_v2)(h, &stream) != CUBLAS_STATUS_SUCCESS) plan = nullptr;
  Verdict verdict = plan ? static_cast<Verdict>(plan->verdict.load()) : Verdict::demoted;
  if (!plan || verdict == Verdict::demoted) {
    ktune_gemm_call x = call;
    x.route = plan ? KTUNE_ROUTE_KEPT : KTUNE_ROUTE_PASSED;
    observe(x);
    if (plan)
      plan->kept.fetch_add(1, std::memory_order_relaxed);
    else
      r.passed(entry);
    return pass();
  }
  Device& dev = device_of(*s, *plan->winner);
  std::unique_lock lock(plan->mu);
  CUdeviceptr ws = 0;
  const auto cu_stream = reinterpret_cast<CUstream>(stream);
  if (!ready(*plan, dev) || !workspace_for(*s, cu_stream, dev.workspace, &ws)) {
    lock.unlock();
    r.passed(entry);
    return pass();
  }
  Arm arm = Arm::winner;
  bool time = false;
  if (verdict == Verdict::trying) {
    collect(*plan, dev);
    time = timeable(dev, cu_stream);
    // Captured before the trial decided: the default goes into the graph.
    arm = time ? plan->trial.next_arm() : Arm::fallback;
  }
  ktune_gemm_call x = call;
  x.route = verdict == Verdict::trying ? KTUNE_ROUTE_TRIAL : KTUNE_ROUTE_ROUTED;
  observe(x);
  const auto run_winner = [&] {
    try {
      dev.gemm->run(dev.algo, {A, B, C, C, nullptr}, reinterpret_cast<void*>(ws), dev.workspace,
                    cu_stream, *static_cast<const float*>(alpha), *static_cast<const float*>(beta));
      return CUBLAS_STATUS_SUCCESS;
    } catch (...) {
      return CUBLAS_STATUS_EXECUTION_FAILED;
    }
  };
  if (verdict == Verdict::routed) {
    plan->routed.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    const cublasStatus_t st = run_winner();
    return st == CUBLAS_STATUS_SUCCESS ? st : pass();
  }
  if (arm == Arm::fallback) return timed(*plan, dev, arm, cu_stream, time, pass);
  const cublasStatus_t st = timed(*plan, dev, arm, cu_stream, time, run_winner);
  return st == CUBLAS_STATUS_SUCCESS ? st : pass();
}

}  // namespace
}  // namespace ktune::route

// Every legacy entry point starts so: the real function, the pass-through, and the cheap exit
// (nested call, no router, or no winner of its output size and no tracer listening).
#define KTUNE_LEGACY_GUARD(fn, Type, entry, ...)             \
  const auto real_fn = KTUNE_REAL("libcublas.so", fn, Type); \
  if (!real_fn) return CUBLAS_STATUS_NOT_INITIALIZED;        \
  const auto pass = [&] { return real_fn(__VA_ARGS__); };    \
  Nested nested;                                             \
  if (!nested.outer() || !state()) return pass();            \
  state()->router->count(entry);                             \
  if (!g_observer.load(std::memory_order_relaxed) &&         \
      !state()->router->table().may_hold(m, n, true)) {      \
    state()->router->passed(entry);                          \
    return pass();                                           \
  }

KTUNE_EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const void* alpha, const void* A, cudaDataType at, int lda,
                                         const void* B, cudaDataType bt, int ldb, const void* beta,
                                         void* C, cudaDataType ct, int ldc,
                                         cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  KTUNE_LEGACY_GUARD(cublasGemmEx, GemmExFn, KTUNE_GEMM_GEMM_EX, h, ta, tb, m, n, k, alpha, A, at,
                     lda, B, bt, ldb, beta, C, ct, ldc, compute, algo)
  try {
    const auto call = legacy_call(KTUNE_GEMM_GEMM_EX, h, ta, tb, m, n, k, A, at, lda, 0, B, bt, ldb,
                                  0, C, ct, ldc, 0, 1, compute);
    return legacy(KTUNE_GEMM_GEMM_EX, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,
    cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct, int ldc,
    long long sc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  KTUNE_LEGACY_GUARD(cublasGemmStridedBatchedEx, GemmStridedExFn, KTUNE_GEMM_GEMM_STRIDED_EX, h, ta,
                     tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                     batch, compute, algo)
  try {
    const auto call = legacy_call(KTUNE_GEMM_GEMM_STRIDED_EX, h, ta, tb, m, n, k, A, at, lda, sa, B,
                                  bt, ldb, sb, C, ct, ldc, sc, batch, compute);
    return legacy(KTUNE_GEMM_GEMM_STRIDED_EX, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta,
                                           cublasOperation_t tb, int m, int n, int k,
                                           const float* alpha, const float* A, int lda,
                                           const float* B, int ldb, const float* beta, float* C,
                                           int ldc) {
  KTUNE_LEGACY_GUARD(cublasSgemm_v2, decltype(&::cublasSgemm_v2), KTUNE_GEMM_SGEMM, h, ta, tb, m, n,
                     k, alpha, A, lda, B, ldb, beta, C, ldc)
  try {
    const auto call = legacy_call(KTUNE_GEMM_SGEMM, h, ta, tb, m, n, k, A, CUDA_R_32F, lda, 0, B,
                                  CUDA_R_32F, ldb, 0, C, CUDA_R_32F, ldc, 0, 1, CUBLAS_COMPUTE_32F);
    return legacy(KTUNE_GEMM_SGEMM, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                                      cublasOperation_t tb, int m, int n, int k,
                                                      const float* alpha, const float* A, int lda,
                                                      long long sa, const float* B, int ldb,
                                                      long long sb, const float* beta, float* C,
                                                      int ldc, long long sc, int batch) {
  KTUNE_LEGACY_GUARD(cublasSgemmStridedBatched, decltype(&::cublasSgemmStridedBatched),
                     KTUNE_GEMM_SGEMM_STRIDED, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                     beta, C, ldc, sc, batch)
  try {
    const auto call =
        legacy_call(KTUNE_GEMM_SGEMM_STRIDED, h, ta, tb, m, n, k, A, CUDA_R_32F, lda, sa, B,
                    CUDA_R_32F, ldb, sb, C, CUDA_R_32F, ldc, sc, batch, CUBLAS_COMPUTE_32F);
    return legacy(KTUNE_GEMM_SGEMM_STRIDED, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasHgemm(cublasHandle_t h, cublasOperation_t ta,
                                        cublasOperation_t tb, int m, int n, int k,
                                        const __half* alpha, const __half* A, int lda,
                                        const __half* B, int ldb, const __half* beta, __half* C,
                                        int ldc) {
  KTUNE_LEGACY_GUARD(cublasHgemm, decltype(&::cublasHgemm), KTUNE_GEMM_HGEMM, h, ta, tb, m, n, k,
                     alpha, A, lda, B, ldb, beta, C, ldc)
  try {
    const auto call = legacy_call(KTUNE_GEMM_HGEMM, h, ta, tb, m, n, k, A, CUDA_R_16F, lda, 0, B,
                                  CUDA_R_16F, ldb, 0, C, CUDA_R_16F, ldc, 0, 1, CUBLAS_COMPUTE_16F);
    return legacy(KTUNE_GEMM_HGEMM, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                                      cublasOperation_t tb, int m, int n, int k,
                                                      const __half* alpha, const __half* A, int lda,
                                                      long long sa, const __half* B, int ldb,
                                                      long long sb, const __half* beta, __half* C,
                                                      int ldc, long long sc, int batch) {
  KTUNE_LEGACY_GUARD(cublasHgemmStridedBatched, decltype(&::cublasHgemmStridedBatched),
                     KTUNE_GEMM_HGEMM_STRIDED, h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb,
                     beta, C, ldc, sc, batch)
  try {
    const auto call =
        legacy_call(KTUNE_GEMM_HGEMM_STRIDED, h, ta, tb, m, n, k, A, CUDA_R_16F, lda, sa, B,
                    CUDA_R_16F, ldb, sb, C, CUDA_R_16F, ldc, sc, batch, CUBLAS_COMPUTE_16F);
    return legacy(KTUNE_GEMM_HGEMM_STRIDED, h, call, alpha, beta, A, B, C, pass);
  } catch (...) {
    return pass();
  }
}

KTUNE_EXPORT cublasStatus_t cublasGemmBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* const A[], cudaDataType at, int lda, const void* const B[],
    cudaDataType bt, int ldb, const void* beta, void* const C[], cudaDataType ct, int ldc,
    int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  KTUNE_LEGACY_GUARD(cublasGemmBatchedEx, GemmBatchedExFn, KTUNE_GEMM_GEMM_BATCHED_EX, h, ta, tb, m,
                     n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, batch, compute, algo)
  try {
    // Recorded, never routed: a pointer per batch is no strided problem.
    auto call = legacy_call(KTUNE_GEMM_GEMM_BATCHED_EX, h, ta, tb, m, n, k, nullptr, at, lda, 0,
                            nullptr, bt, ldb, 0, nullptr, ct, ldc, 0, batch, compute);
    call.route = KTUNE_ROUTE_PASSED;
    observe(call);
    state()->router->passed(KTUNE_GEMM_GEMM_BATCHED_EX);
    return pass();
  } catch (...) {
    return pass();
  }
}

// --- control, for the tracer and the Python package --------------------------------------------

// The tracer registers its observer here (null: none); every later call is handed to it.
KTUNE_EXPORT void ktune_route_set_observer(ktune_gemm_observer observer) {
  g_observer.store(observer, std::memory_order_release);
}

// 0: every call passes through (routing off, counts go on); 1: routing on. Returns the old state.
KTUNE_EXPORT int ktune_route_set_enabled(int on) {
  return g_enabled.exchange(on != 0) ? 1 : 0;
}

// The stats as JSON (schema_version 1), in a buffer the caller frees with free(); null on failure.
KTUNE_EXPORT char* ktune_route_stats_json() {
  try {
    State* s = state();
    if (!s) return nullptr;
    const std::string text = s->router->stats_json().dump();
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (out) std::memcpy(out, text.c_str(), text.size() + 1);
    return out;
  } catch (...) {
    return nullptr;
  }
}
