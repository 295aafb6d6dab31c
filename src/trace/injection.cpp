// libktune_tracer.so: loaded by the CUDA driver through CUDA_INJECTION64_PATH, which calls
// InitializeInjection once per process at cuInit. Contract with the host program: never throw,
// never crash, never hang it. Every entry point (InitializeInjection, CUPTI callbacks, the
// atexit and signal handlers, the writer thread) catches everything; a failure prints one line on
// stderr and leaves the program running untraced.
//
// Hot path: CUPTI fills activity buffers from a pool of buffers the writer thread has already
// zeroed and faulted in (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER: CUPTI would otherwise zero
// each 8 MiB buffer on the application thread); the buffer-completed callback only queues the
// buffer. One writer thread decodes, demangles and inserts in one transaction per batch, re-zeroes
// the bytes CUPTI wrote and recycles the buffer. Record kinds whose measured cost buys little
// (memset GPU records: ~1.5 µs of GPU time per memset; synchronization records, whose calls the
// API records hold; overhead; queued/submitted timestamps) are off unless asked for (mode
// "full"), and no callbacks are enabled unless a capture range needs them.
//
// Periodic windows (--period, --window): the writer thread follows a CaptureSchedule. Between
// windows every activity kind is disabled, so a launch pays only for CUPTI being attached; as a
// window closes its records are flushed to its own trace (OUT.wK.ktrace), which stays open
// through the gap for records CUPTI hands over late and is closed, complete, as the next window
// opens or the process exits.
#include <cupti.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "capture_schedule.hpp"
#include "counter_profiler.hpp"
#include "decode.hpp"
#include "gemm_capture.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/version.hpp"
#include "ktune/cuda/cupti.hpp"
#include "ktune/cuda/device_attributes.hpp"
#include "ktune/trace/ktrace.hpp"
#include "ktune/trace/metrics.hpp"
#include "ktune/trace/options.hpp"

namespace ktune::trace {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// KTUNE_TRACE_EXPERIMENT: comma-separated switches that restore an older or CUPTI-default setting,
// for overhead measurements only (benchmarks/tracer/variants.sh); unknown words are ignored.
bool experiment(const char* word) {
  const char* v = std::getenv("KTUNE_TRACE_EXPERIMENT");
  if (!v) return false;
  const std::string_view all(v), w(word);
  for (std::size_t at = 0; at <= all.size();) {
    const auto comma = std::min(all.find(',', at), all.size());
    if (all.substr(at, comma - at) == w) return true;
    at = comma + 1;
  }
  return false;
}

void say(const std::string& line) {
  std::fprintf(stderr, "ktune tracer [pid %d]: %s\n", static_cast<int>(::getpid()), line.c_str());
}

// The tracer's checked CUPTI call (ktune/cuda/cupti.hpp says why it never throws): a failure
// prints one line and returns false. Calls made
// per buffer or per callback id pass `logged`, so a failure that repeats is printed once.
bool cupti_ok(CUptiResult r, const char* what, std::atomic<bool>* logged = nullptr) noexcept {
  if (r == CUPTI_SUCCESS) return true;
  if (logged && logged->exchange(true)) return false;
  try {
    say(std::string(what) + " failed: " + cuda::cupti_result_name(r) +
        (logged ? " (reported once)" : ""));
  } catch (...) {
  }
  return false;
}

std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> out;
  for (std::string arg; std::getline(in, arg, '\0');) out.push_back(arg);
  return out;
}

std::int64_t parent_pid() {
  return ::getppid();
}

// The identity block from the driver already loaded in this process (never loaded or linked by
// the tracer itself). Called on the writer thread once CUDA is up; anything missing stays empty.
// Not cuda::capture_identity(): that layer links NVRTC, which would load into every traced
// program, and it throws where the tracer must not.
std::optional<Identity> driver_identity() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return std::nullopt;
#define KTUNE_SYM(fn) auto p_##fn = reinterpret_cast<decltype(&::fn)>(::dlsym(lib, #fn))
  KTUNE_SYM(cuDriverGetVersion);
  KTUNE_SYM(cuDeviceGetCount);
  KTUNE_SYM(cuDeviceGet);
  KTUNE_SYM(cuDeviceGetName);
  KTUNE_SYM(cuDeviceGetAttribute);
  KTUNE_SYM(cuDeviceGetPCIBusId);
  KTUNE_SYM(cuDeviceGetUuid);
#undef KTUNE_SYM
  // cuda.h maps cuDeviceTotalMem to its _v2 symbol.
  auto p_total =
      reinterpret_cast<CUresult (*)(size_t*, CUdevice)>(::dlsym(lib, "cuDeviceTotalMem_v2"));
  Identity id;
  id.host = host_identity();
  id.captured_at = utc_now_iso8601();
  id.software.ktune_version = version();
  id.software.ktune_commit = git_commit();
  int count = 0;
  if (!p_cuDeviceGetCount || p_cuDeviceGetCount(&count) != CUDA_SUCCESS) {
    ::dlclose(lib);
    return id;
  }
  if (p_cuDriverGetVersion) p_cuDriverGetVersion(&id.software.cuda_driver_api);
  for (int i = 0; i < count; ++i) {
    CUdevice dev = 0;
    if (!p_cuDeviceGet || p_cuDeviceGet(&dev, i) != CUDA_SUCCESS) continue;
    DeviceIdentity d;
    d.ordinal = i;
    char buf[256] = {};
    if (p_cuDeviceGetName && p_cuDeviceGetName(buf, sizeof buf, dev) == CUDA_SUCCESS) d.name = buf;
    auto attr = [&](CUdevice_attribute a) {
      int v = 0;
      if (p_cuDeviceGetAttribute) p_cuDeviceGetAttribute(&v, a, dev);
      return v;
    };
    cuda::fill_from_attributes(d, attr);
    size_t total = 0;
    if (p_total && p_total(&total, dev) == CUDA_SUCCESS)
      d.memory_bytes = static_cast<std::int64_t>(total);
    char pci[32] = {};
    if (p_cuDeviceGetPCIBusId && p_cuDeviceGetPCIBusId(pci, sizeof pci, dev) == CUDA_SUCCESS)
      d.pci_bus_id = pci;
    CUuuid uuid{};
    if (p_cuDeviceGetUuid && p_cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS) {
      d.uuid = cuda::format_gpu_uuid(uuid);
    }
    id.devices.push_back(std::move(d));
  }
  ::dlclose(lib);
  return id;
}

// CUPTI's clock, which every record carries.
std::uint64_t cupti_now_ns() {
  std::uint64_t t = 0;
  if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) t = 0;
  return t;
}

// The id CUPTI's API records give the calling thread (pthread_self, or the kernel's thread id
// when the process chose CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), so a GEMM call and the launches
// that follow it on its thread can be matched.
std::uint32_t cupti_thread_id() {
  static const bool system = [] {
    CUpti_ActivityThreadIdType type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
    return cuptiGetThreadIdType(&type) == CUPTI_SUCCESS &&
           type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM;
  }();
  return system ? static_cast<std::uint32_t>(::syscall(SYS_gettid))
                : static_cast<std::uint32_t>(
                      reinterpret_cast<std::uintptr_t>(reinterpret_cast<void*>(::pthread_self())));
}

struct Completed {
  std::uint8_t* data;
  std::size_t valid_bytes;
  std::uint32_t context_id, stream_id;
  std::size_t dropped;
};

class Tracer {
 public:
  explicit Tracer(TracerOptions o) : opts_(std::move(o)) {}

  bool start();
  void stop();  // flush everything and close the trace; idempotent

  // CUPTI buffer callbacks (any thread, never blocking on the writer).
  void request_buffer(std::uint8_t** buffer, std::size_t* size);
  void complete_buffer(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                       std::size_t valid);

  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
  void request_signal_flush(bool final_flush) {
    signal_flush_.store(final_flush ? 2 : 1, std::memory_order_relaxed);
  }
  bool finished() const { return finished_.load(); }
  void set_init_ms(double ms) { init_ms_ = ms; }
  std::thread::id writer_id() const { return writer_id_; }
  bool debug() const { return debug_; }
  void disown_after_fork() { forked_ = true; }

 private:
  void set_capturing(bool on);
  bool closing() {
    std::lock_guard lock(capture_mu_);
    return closing_;
  }
  double seconds_since(Clock::time_point t) const {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  void writer_main() noexcept;
  void disable(const char* why) noexcept;
  void writer_loop();
  void drain(KtraceWriter* writer);
  void finish(KtraceWriter* writer);
  void flush_on_signal(KtraceWriter* writer);  // a forced flush that a held driver lock cannot hang
  std::uint8_t* fresh_buffer() const;
  void recycle(std::uint8_t* buffer, std::size_t valid_bytes);
  void mark_finished();

  // Tracer::start's steps.
  void fill_metadata();
  bool subscribe();
  void set_buffer_attributes();
  void choose_api_records();
  void enable_range_callbacks();
  void start_counters();
  void start_gemm_capture(const std::string& logger_conflict);
  void place_profiled(std::vector<KernelRecord>& kernels);

  TracerOptions opts_;
  TraceMetadata meta_;
  // A member, not a function-local static: the writer drains at exit, after the atexit handlers
  // registered later than ours have run, and a static's destructor is one of them (the writer
  // crashed in a destroyed name map when a process exited while it drained).
  ActivityDecoder decoder_{[](std::string_view api, std::uint32_t cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(
            api == "runtime" ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid,
            &name) != CUPTI_SUCCESS)
      name = nullptr;  // the record keeps an empty name
    return std::string(name ? name : "");
  }};
  // The counter tier (null: activity tier only) and the records it hands to the writer thread.
  std::unique_ptr<CounterProfiler> counters_;
  std::vector<bool> counter_cbids_[2];  // launch callbacks it owns: [0] runtime, [1] driver
  std::mutex counters_mu_;
  std::vector<CounterRecord> pending_counters_;
  std::unordered_map<std::uint32_t, ProfiledLaunch> profiled_;  // by correlation id, until placed
  CUpti_SubscriberHandle subscriber_ = nullptr;
  std::vector<std::uint32_t> runtime_cbids_, driver_cbids_;
  // --gemm-shapes: cuBLASLt's calls (null: off).
  std::unique_ptr<GemmCapture> gemm_;

  std::mutex pool_mu_;
  std::vector<std::uint8_t*> pool_;  // zeroed (unless cupti_zero_), ready for CUPTI
  bool cupti_zero_ = false;          // CUPTI zeroes buffers itself, on the requesting thread
  std::atomic<std::uint64_t> buffers_requested_{0}, buffers_fresh_{0};

  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Completed> queue_;
  bool stopping_ = false;

  std::mutex capture_mu_;
  bool capturing_ = false;
  std::atomic<bool> capturing_now_{false};  // capturing_, for the launch callbacks' lock-free read
  bool capped_ = false;
  bool closing_ = false;  // stop() began: no capture opens again (a window on the schedule)
  std::atomic<int> nvtx_open_{0};

  Clock::time_point started_;  // the schedule's time 0 (--delay counts from here)
  std::thread writer_;
  std::thread::id writer_id_;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<bool> finished_{false};
  std::atomic<int> signal_flush_{0};  // 1: commit now, 2: close the trace
  // Set when the writer thread failed: buffers are then freed unread (and counted), none handed
  // out.
  std::atomic<bool> disabled_{false};
  std::atomic<std::uint64_t> lost_buffers_{0};
  std::atomic<bool> logged_dropped_{false}, logged_context_{false}, logged_api_{false},
      logged_records_{false};
  bool forked_ = false;
  std::once_flag stop_once_;

  std::uint64_t records_ = 0, capped_records_ = 0, dropped_ = 0;
  bool identity_done_ = false;
  bool failed_ = false;
  bool debug_ = false;  // KTUNE_TRACE_DEBUG=1: print own timings at exit
  double init_ms_ = 0, writer_ms_ = 0, open_ms_ = 0;
};

Tracer* g_tracer = nullptr;  // leaked on purpose: alive until the process is gone

void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                  std::size_t* max_records) {
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  try {
    if (g_tracer) g_tracer->request_buffer(buffer, size);
  } catch (...) {
    *buffer = nullptr;  // CUPTI counts the records it cannot store as dropped
  }
}

void CUPTIAPI on_buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                                  std::size_t /*size*/, std::size_t valid) {
  try {
    if (g_tracer) g_tracer->complete_buffer(ctx, stream, buffer, valid);
  } catch (...) {
  }
}

void CUPTIAPI on_cupti_callback(void* /*userdata*/, CUpti_CallbackDomain domain,
                                CUpti_CallbackId cbid, const void* data) {
  try {
    if (g_tracer) g_tracer->on_callback(domain, cbid, data);
  } catch (...) {
  }
}

std::uint8_t* Tracer::fresh_buffer() const {
  const std::size_t bytes = std::size_t{opts_.buffer_mib} << 20;
  // calloc of this size maps fresh zero pages: no memset on the calling thread. malloc aligns to
  // 16 bytes, more than the 8 CUPTI needs.
  return static_cast<std::uint8_t*>(cupti_zero_ ? std::aligned_alloc(8, bytes)
                                                : std::calloc(1, bytes));
}

void Tracer::request_buffer(std::uint8_t** buffer, std::size_t* size) {
  if (disabled_.load(std::memory_order_relaxed)) return;  // CUPTI counts what it cannot store
  const std::size_t bytes = std::size_t{opts_.buffer_mib} << 20;
  std::uint8_t* b = nullptr;
  {
    std::lock_guard lock(pool_mu_);
    if (!pool_.empty()) {
      b = pool_.back();
      pool_.pop_back();
    }
  }
  buffers_requested_.fetch_add(1, std::memory_order_relaxed);
  if (!b) {
    buffers_fresh_.fetch_add(1, std::memory_order_relaxed);
    b = fresh_buffer();
  }
  *buffer = b;
  *size = b ? bytes : 0;
}

void Tracer::complete_buffer(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer,
                             std::size_t valid) {
  if (disabled_.load()) {
    lost_buffers_.fetch_add(1, std::memory_order_relaxed);
    std::free(buffer);
    return;
  }
  std::size_t dropped = 0;
  std::uint32_t ctx_id = 0;
  if (ctx) {
    if (!cupti_ok(cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped),
                  "cuptiActivityGetNumDroppedRecords", &logged_dropped_))
      dropped = 0;
    if (!cupti_ok(cuptiGetContextId(ctx, &ctx_id), "cuptiGetContextId", &logged_context_))
      ctx_id = 0;
  }
  {
    std::lock_guard lock(queue_mu_);
    queue_.push_back({buffer, valid, ctx_id, stream, dropped});
  }
  queue_cv_.notify_one();
}

void Tracer::recycle(std::uint8_t* buffer, std::size_t valid_bytes) {
  constexpr std::size_t kPoolMax = 4;  // more than this are returned to the system
  const std::size_t bytes = std::size_t{opts_.buffer_mib} << 20;
  if (!cupti_zero_) std::memset(buffer, 0, std::min(bytes, valid_bytes + 4096));
  {
    std::lock_guard lock(pool_mu_);
    if (pool_.size() < kPoolMax) {
      pool_.push_back(buffer);
      return;
    }
  }
  std::free(buffer);
}

void Tracer::mark_finished() {
  {
    std::lock_guard lock(done_mu_);
    finished_ = true;
  }
  done_cv_.notify_all();
}

void Tracer::set_capturing(bool on) {
  std::lock_guard lock(capture_mu_);
  if (on && (capped_ || closing_)) return;
  if (on == capturing_) return;
  capturing_ = on;
  capturing_now_.store(on, std::memory_order_relaxed);
  auto kind = [&](CUpti_ActivityKind k, const char* what) {
    cupti_ok(on ? cuptiActivityEnable(k) : cuptiActivityDisable(k), what);
  };
  kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "enabling kernel records");
  if (opts_.kernels_only) return;
  kind(CUPTI_ACTIVITY_KIND_MEMCPY, "enabling memcpy records");
  if (opts_.memset_records) kind(CUPTI_ACTIVITY_KIND_MEMSET, "enabling memset records");
  if (opts_.sync_records) kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "enabling sync records");
  kind(CUPTI_ACTIVITY_KIND_MARKER, "enabling NVTX records");
  if (opts_.overhead_records) kind(CUPTI_ACTIVITY_KIND_OVERHEAD, "enabling overhead records");
  for (auto cbid : runtime_cbids_)
    cupti_ok(cuptiActivityEnableRuntimeApi(cbid, on), "switching runtime API records",
             &logged_api_);
  for (auto cbid : driver_cbids_)
    cupti_ok(cuptiActivityEnableDriverApi(cbid, on), "switching driver API records", &logged_api_);
}

void Tracer::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    // A cuBLASLt the program loaded after cuInit is hooked as its first modules load.
    if (gemm_ && cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED && !gemm_->attached() && gemm_->attach())
      cupti_ok(cuptiEnableCallback(0, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                                   CUPTI_CBID_RESOURCE_MODULE_LOADED),
               "disabling the module-load callback");
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    const auto& owned = counter_cbids_[domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1];
    if (counters_ && cbid < owned.size() && owned[cbid]) {
      // Counters follow the capture window (--delay, --duration, --range) like every record.
      counters_->on_launch(domain, cbid, info, capturing_now_.load(std::memory_order_relaxed));
      return;
    }
    const bool start = domain == CUPTI_CB_DOMAIN_RUNTIME_API
                           ? cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                           : cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
    // Capture opens once Start has returned and closes as Stop is entered.
    if (start && info->callbackSite == CUPTI_API_EXIT) set_capturing(true);
    if (!start && info->callbackSite == CUPTI_API_ENTER) set_capturing(false);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_NVTX) return;
  // Push/pop ranges only; a thread's stack records which of its open ranges is the named one.
  thread_local std::vector<bool> stack;
  const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
  const std::string_view wanted = std::string_view(opts_.window.range).substr(5);
  auto message_of = [](const nvtxEventAttributes_t* a) -> std::string_view {
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii) return a->message.ascii;
    return {};
  };
  std::string_view message;
  bool push = true;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA: {
      const char* m = static_cast<const nvtxRangePushA_params*>(nvtx->functionParams)->message;
      message = m ? m : "";
      break;
    }
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      message =
          message_of(static_cast<const nvtxRangePushEx_params*>(nvtx->functionParams)->eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      message = message_of(
          static_cast<const nvtxDomainRangePushEx_params*>(nvtx->functionParams)->core.eventAttrib);
      break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
      push = false;
      break;
    default:
      return;
  }
  if (push) {
    const bool match = message == wanted;
    stack.push_back(match);
    if (match && nvtx_open_.fetch_add(1) == 0) set_capturing(true);
  } else if (!stack.empty()) {
    const bool match = stack.back();
    stack.pop_back();
    if (match && nvtx_open_.fetch_sub(1) == 1) set_capturing(false);
  }
}

// Start-up, in the order CUPTI needs it: claim CUPTI, set how buffers are handed out, register
// the buffer callbacks, choose the API records, arm the capture range, then start the writer.
// A failure before the callbacks are registered leaves the program untraced.
bool Tracer::start() {
  started_ = Clock::now();
  debug_ =
      std::getenv("KTUNE_TRACE_DEBUG") && std::string_view(std::getenv("KTUNE_TRACE_DEBUG")) == "1";
  cupti_zero_ = experiment("cupti_zero");
  fill_metadata();
  if (!subscribe()) return false;
  set_buffer_attributes();
  // Stream/event queries that find work still pending are polling, not waiting: no record.
  if (opts_.sync_records && !experiment("all_sync"))
    cupti_ok(cuptiActivityEnableAllSyncRecords(0), "leaving out polling sync records");
  if (opts_.latency_timestamps)
    cupti_ok(cuptiActivityEnableLatencyTimestamps(1), "enabling queued/submitted timestamps");
  if (!cupti_ok(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed),
                "cuptiActivityRegisterCallbacks"))
    return false;
  choose_api_records();
  enable_range_callbacks();
  if (!experiment("cupti_flush"))
    cupti_ok(cuptiActivityFlushPeriod(opts_.flush_period_ms), "setting the flush period");

  if (!opts_.metrics.empty()) start_counters();
  if (opts_.gemm_shapes) {
    // The router (ktune profile preloads it) reports every call; without it, the fallback takes
    // over cuBLASLt's logger, unless the user configured that logger: then it says so and leaves
    // the user's logging alone.
    try {
      std::string logger_conflict;
      try {
        check_gemm_shapes(opts_);
      } catch (const std::exception& e) {
        logger_conflict = e.what();
      }
      start_gemm_capture(logger_conflict);
    } catch (const std::exception& e) {
      say(std::string(e.what()) + " No GEMM call is recorded.");
    }
  }

  writer_ = std::thread([this] { writer_main(); });
  writer_id_ = writer_.get_id();
  if (opts_.window.delay_s <= 0 && opts_.window.range.empty()) set_capturing(true);
  return true;
}

void Tracer::fill_metadata() {
  meta_.mode = to_string(mode_of(opts_));
  meta_.records = record_kinds(opts_);
  meta_.command_line = own_command_line();
  meta_.pid = ::getpid();
  meta_.ppid = parent_pid();
  meta_.started_at = utc_now_iso8601();
  meta_.window = opts_.window;
  meta_.tracer_version = std::string(version()) + " (" + git_commit() + ")";
}

// Subscribing enables no callback; it claims CUPTI, so another profiler is detected here.
bool Tracer::subscribe() {
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "ktune tracer";
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof other - 1;
  const bool subscribe = !experiment("no_subscribe") || !opts_.window.range.empty();
  const CUptiResult sub = subscribe
                              ? cuptiSubscribe_v2(&subscriber_, on_cupti_callback, nullptr, &params)
                              : CUPTI_SUCCESS;
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    say(std::string("another profiler already holds CUPTI (") + (other[0] ? other : "unnamed") +
        "); this process runs untraced.");
    return false;
  }
  return cupti_ok(sub, "cuptiSubscribe (this process runs untraced)");
}

void Tracer::set_buffer_attributes() {
  auto set = [](CUpti_ActivityAttribute attribute, std::uint8_t value) {
    std::size_t size = sizeof value;
    return cuptiActivitySetAttribute(attribute, &size, &value);
  };
  // The pool hands out zeroed buffers, so CUPTI need not zero them on the application thread;
  // where CUPTI refuses, every buffer is zeroed by CUPTI, as before.
  if (!cupti_zero_ && set(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 1) != CUPTI_SUCCESS)
    cupti_zero_ = true;
  if (experiment("shared_buffers"))
    cupti_ok(set(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, 0),
             "sharing activity buffers between threads");
  if (experiment("pinned"))
    cupti_ok(set(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, 1),
             "pinning activity buffers");
}

// The callback ids of `domain` whose API records the trace keeps (is_traced_api).
std::vector<std::uint32_t> traced_callbacks(CUpti_CallbackDomain domain, std::uint32_t size) {
  std::vector<std::uint32_t> out;
  for (std::uint32_t cbid = 1; cbid < size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS && name && is_traced_api(name))
      out.push_back(cbid);
  }
  return out;
}

void Tracer::choose_api_records() {
  if (opts_.kernels_only) return;
  if (!experiment("no_runtime"))
    runtime_cbids_ = traced_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
  // Driver-API records: CUPTI reports only the program's (and its libraries') own driver
  // calls, not those the runtime makes inside cudaLaunchKernel, so a runtime launch costs the
  // same with them on. cuBLASLt (and Triton, NVRTC launchers) launch through the driver: without
  // these records their kernels have no launch record.
  if (opts_.driver_api)
    driver_cbids_ = traced_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
}

// --range profiler: the profiler start/stop calls of both APIs; --range nvtx:NAME: NVTX.
void Tracer::enable_range_callbacks() {
  const std::string& range = opts_.window.range;
  if (range == "profiler") {
    const struct {
      CUpti_CallbackDomain domain;
      CUpti_CallbackId cbid;
      const char* what;
    } calls[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
         "enabling the cudaProfilerStart callback"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
         "enabling the cudaProfilerStop callback"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
         "enabling the cuProfilerStart callback"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
         "enabling the cuProfilerStop callback"},
    };
    for (const auto& c : calls)
      cupti_ok(cuptiEnableCallback(1, subscriber_, c.domain, c.cbid), c.what);
  } else if (range.rfind("nvtx:", 0) == 0) {
    cupti_ok(cuptiEnableDomain(1, subscriber_, CUPTI_CB_DOMAIN_NVTX), "enabling NVTX callbacks");
  }
}

// The counter tier is an addition: whatever goes wrong here leaves the activity tier as it was.
void Tracer::start_counters() {
  std::vector<std::string> metrics;
  try {
    metrics = metric::resolve_metrics(opts_.metrics);
    counters_ = std::make_unique<CounterProfiler>(
        std::move(metrics), opts_.counters,
        [this](std::vector<CounterRecord>&& records, const ProfiledLaunch& launch) {
          std::lock_guard lock(counters_mu_);
          pending_counters_.insert(pending_counters_.end(),
                                   std::make_move_iterator(records.begin()),
                                   std::make_move_iterator(records.end()));
          profiled_[launch.correlation_id] = launch;
        },
        [](const std::string& line) { say(line); });
  } catch (const std::exception& e) {
    say(std::string(e.what()) + " Hardware counters are off; the activity trace is recorded.");
    return;
  }
  for (auto domain : {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    auto& owned = counter_cbids_[domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1];
    for (std::uint32_t cbid : CounterProfiler::launch_callbacks(domain)) {
      if (cbid >= owned.size()) owned.resize(cbid + 1);
      owned[cbid] = cupti_ok(cuptiEnableCallback(1, subscriber_, domain, cbid),
                             "enabling a launch callback for hardware counters");
    }
  }
}

// --gemm-shapes: registers with the router, else hooks the program's cuBLASLt logger now, or as
// modules load when it is not loaded yet.
void Tracer::start_gemm_capture(const std::string& logger_conflict) {
  gemm_ = std::make_unique<GemmCapture>(&capturing_now_, cupti_now_ns, cupti_thread_id);
  gemm_->allow_logger(logger_conflict.empty());
  if (gemm_->attach()) return;
  if (!logger_conflict.empty()) {
    say(logger_conflict +
        " No GEMM call is recorded (ktune profile preloads the GEMM router, "
        "which needs no logger).");
    return;
  }
  cupti_ok(cuptiEnableCallback(1, subscriber_, CUPTI_CB_DOMAIN_RESOURCE,
                               CUPTI_CBID_RESOURCE_MODULE_LOADED),
           "enabling the module-load callback (GEMM calls of a cuBLASLt loaded later are lost)");
}

void Tracer::place_profiled(std::vector<KernelRecord>& kernels) {
  std::lock_guard lock(counters_mu_);
  for (KernelRecord& k : kernels) {
    if (k.start_ns != 0) continue;
    const auto it = profiled_.find(k.correlation_id);
    if (it == profiled_.end() || it->second.enter_ns == 0) continue;
    k.start_ns = it->second.enter_ns;
    k.end_ns = it->second.enter_ns + it->second.duration_ns;
    profiled_.erase(it);
  }
}

void Tracer::drain(KtraceWriter* writer) {
  std::deque<Completed> batch;
  {
    std::lock_guard lock(queue_mu_);
    batch.swap(queue_);
  }
  std::vector<CounterRecord> counters;
  {
    std::lock_guard lock(counters_mu_);
    counters.swap(pending_counters_);
  }
  std::vector<GemmEventRecord> gemm_events;
  if (gemm_) gemm_->take_events(gemm_events);
  if (batch.empty() && counters.empty() && gemm_events.empty()) return;
  const auto t0 = Clock::now();
  Trace records;
  records.counters = std::move(counters);
  records.gemm_events = std::move(gemm_events);
  for (const Completed& c : batch) {
    CUpti_Activity* rec = nullptr;
    CUptiResult next = CUPTI_ERROR_MAX_LIMIT_REACHED;  // an empty buffer ends as a full one does
    while (c.valid_bytes > 0 &&
           (next = cuptiActivityGetNextRecord(c.data, c.valid_bytes, &rec)) == CUPTI_SUCCESS) {
      if (opts_.window.max_records && records_ >= opts_.window.max_records) {
        ++capped_records_;
        continue;
      }
      if (decoder_.decode(*rec, records)) ++records_;
    }
    // MAX_LIMIT_REACHED is the end of the buffer; anything else lost the rest of it.
    if (next != CUPTI_ERROR_MAX_LIMIT_REACHED)
      cupti_ok(next, "reading an activity buffer (the rest of it is lost)", &logged_records_);
    if (c.dropped) {
      records.drops.push_back({c.context_id, c.stream_id, c.dropped});
      dropped_ += c.dropped;
    }
    recycle(c.data, c.valid_bytes);
  }
  if (counters_) place_profiled(records.kernels);
  if (opts_.window.max_records && records_ >= opts_.window.max_records && !capped_) {
    set_capturing(false);  // the cap is reached: stop paying for records nobody keeps
    std::lock_guard lock(capture_mu_);
    capped_ = true;
  }
  if (writer && !failed_) {
    try {
      writer->add_records(records);
      if (!identity_done_ && !records.kernels.empty()) {
        identity_done_ = true;
        meta_.identity = driver_identity();
        writer->write_metadata(meta_);
      }
      writer->commit();
    } catch (const std::exception& e) {
      failed_ = true;
      say(std::string("stopped writing the trace: ") + e.what());
    }
  }
  writer_ms_ += ms_since(t0);
}

void Tracer::finish(KtraceWriter* writer) {
  if (!writer || failed_) return;
  try {
    // Every problem seen so far, in the order the trace's GEMM events refer to them, with the
    // calls this trace counted.
    if (gemm_)
      for (const GemmCallRecord& r : gemm_->take_calls()) writer->add(r);
    if (!identity_done_) meta_.identity = driver_identity();
    meta_.finished_at = utc_now_iso8601();
    meta_.complete = true;
    meta_.dropped_records = dropped_;
    meta_.capped_records = capped_records_;
    writer->write_metadata(meta_);
    writer->commit();
  } catch (const std::exception& e) {
    say(std::string("could not close the trace: ") + e.what());
  }
}

// The writer thread's boundary: an exception leaving a std::thread calls std::terminate, which
// would end the host program (a bad_alloc while decoding did). Whatever escapes writer_loop is
// logged once and the tracer disables itself; the trace keeps everything committed before, and
// the KtraceWriter's destructor, run during unwinding, commits the open batch.
void Tracer::writer_main() noexcept {
  try {
    writer_loop();
    return;
  } catch (const std::exception& e) {
    disable(e.what());
  } catch (...) {
    disable("an unknown exception");
  }
  mark_finished();  // stop() need not wait for a writer that is gone
}

void Tracer::disable(const char* why) noexcept {
  if (disabled_.exchange(true)) return;
  try {
    say(std::string("the trace writer failed (") + why +
        "); tracing stops here and the trace keeps what was written before.");
    set_capturing(false);
    std::deque<Completed> unread;
    {
      std::lock_guard lock(queue_mu_);
      unread.swap(queue_);
    }
    for (const Completed& c : unread) std::free(c.data);
    lost_buffers_.fetch_add(unread.size());
  } catch (...) {
  }
}

// A signal can arrive while the program's thread holds the driver's lock inside a CUDA call, and
// its handler then waits for this thread: a forced flush here would wait for that lock until the
// handler gives up, and the trace would lose everything. So the flush runs on a thread of its own,
// and the trace closes after at most kSignalFlushWait with what has arrived (everything up to the
// last periodic flush at least).
void Tracer::flush_on_signal(KtraceWriter* writer) {
  constexpr auto kSignalFlushWait = std::chrono::milliseconds(1000);
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread([this, done] {
    cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flushing on a signal");
    done->store(true);
  }).detach();
  const auto until = Clock::now() + kSignalFlushWait;
  while (!done->load() && Clock::now() < until) {
    drain(writer);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  drain(writer);
}

void Tracer::writer_loop() {
  // Signals go to the program's threads, never to this one.
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &block, nullptr);
  // Two buffers zeroed and faulted in here, so the first requests cost the program nothing.
  for (int i = 0; i < 2 && !cupti_zero_; ++i) {
    std::uint8_t* b = fresh_buffer();
    if (!b) break;
    recycle(b, std::size_t{opts_.buffer_mib} << 20);
  }
  std::unique_ptr<KtraceWriter> writer;
  auto open = [&](std::optional<std::uint64_t> window) {
    const auto t_open = Clock::now();
    try {
      writer = std::make_unique<KtraceWriter>(
          trace_path(opts_.output, opts_.root_pid, ::getpid(), window), meta_);
    } catch (const std::exception& e) {
      failed_ = true;
      say(std::string(e.what()) + " This process runs untraced.");
    }
    open_ms_ += ms_since(t_open);
  };
  // --range: the program opens and closes capture (callbacks); otherwise the schedule does.
  const bool scheduled = opts_.window.range.empty();
  const CaptureSchedule schedule(opts_.window);
  const bool periodic = scheduled && schedule.periodic();
  if (!periodic) open(std::nullopt);
  std::optional<std::uint64_t> window_open;  // periodic: the window whose trace is open
  bool capturing = false;                    // as the schedule last set it
  bool stopping = false;
  const auto flush_period = std::chrono::milliseconds(opts_.flush_period_ms);
  auto next_flush = Clock::now() + flush_period;
  for (;;) {
    double wake_s = std::numeric_limits<double>::infinity();
    if (scheduled && !stopping) {
      const CaptureSchedule::State now = schedule.at(seconds_since(started_));
      wake_s = now.next_change_s;
      if (periodic && now.capturing && window_open != now.window && !closing()) {
        // The previous window's trace stayed open through the gap, so records CUPTI delivered
        // late are in it; it is complete once they are flushed.
        if (writer) {
          cupti_ok(cuptiActivityFlushAll(0), "flushing before a capture window opens");
          drain(writer.get());
          finish(writer.get());
          writer.reset();
        }
        meta_.window.index = now.window;
        meta_.complete = false;
        meta_.finished_at.clear();
        if (!failed_) open(now.window);
        window_open = now.window;
      }
      if (now.capturing != capturing) {
        capturing = now.capturing;
        set_capturing(capturing);
        // The window's records reach the writer now, not at the next periodic flush.
        if (!capturing)
          cupti_ok(cuptiActivityFlushAll(0), "flushing at the end of a capture window");
      }
    }
    if (const int sig = signal_flush_.exchange(0)) {
      flush_on_signal(writer.get());
      if (sig == 2) {
        finish(writer.get());
        mark_finished();
      }
    }
    // CUPTI's own periodic flush hands over full buffers only; this one hands over the partly
    // filled ones too, so that a program that dies keeps its trace up to the last period.
    if (capturing_now_.load(std::memory_order_relaxed) && Clock::now() >= next_flush) {
      cupti_ok(cuptiActivityFlushAll(0), "flushing at the commit period");
      next_flush = Clock::now() + flush_period;
    }
    drain(writer.get());
    if (stopping) break;
    // Wake for the next buffer, for stop(), and at the schedule's next change (windows open and
    // close on time, not on the 50 ms tick).
    auto timeout = std::chrono::duration<double>(0.05);
    if (wake_s < std::numeric_limits<double>::infinity())
      timeout = std::clamp(std::chrono::duration<double>(wake_s - seconds_since(started_)),
                           std::chrono::duration<double>(0), timeout);
    std::unique_lock lock(queue_mu_);
    queue_cv_.wait_for(lock, timeout, [&] { return stopping_ || !queue_.empty(); });
    stopping = stopping_;
  }
  drain(writer.get());
  finish(writer.get());
  writer.reset();
  mark_finished();
}

void Tracer::stop() {
  std::call_once(stop_once_, [this] {
    if (forked_ || !writer_.joinable()) return;
    const auto t0 = Clock::now();
    {
      std::lock_guard lock(capture_mu_);
      closing_ = true;  // first, so the writer's schedule cannot reopen what closes next
    }
    set_capturing(false);
    cupti_ok(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flushing at exit");
    const double flush_ms = ms_since(t0);
    {
      std::lock_guard lock(queue_mu_);
      stopping_ = true;
    }
    queue_cv_.notify_one();
    // Never hang the exiting program on a stuck disk: give the writer 10 s, then leave.
    bool done;
    {
      std::unique_lock lock(done_mu_);
      done = done_cv_.wait_for(lock, std::chrono::seconds(10), [&] { return finished_.load(); });
    }
    if (done)
      writer_.join();
    else
      writer_.detach();
    if (debug_)
      say(
          fmt::format("timings: start-up {:.1f} ms, trace file created in {:.1f} ms (writer "
                      "thread), exit {:.1f} ms (CUPTI flush {:.1f} ms), writer busy {:.1f} ms in "
                      "all; {} records; buffers {} requested, {} newly allocated",
                      init_ms_, open_ms_, ms_since(t0), flush_ms, writer_ms_, records_,
                      buffers_requested_.load(), buffers_fresh_.load()));
    if (dropped_ > 0)
      say(std::to_string(dropped_) +
          " activity records were dropped (CUPTI buffers full); raise KTUNE_TRACE_BUFFER_MB.");
    if (lost_buffers_ > 0)
      say(std::to_string(lost_buffers_.load()) +
          " activity buffers were discarded unread after the trace writer failed.");
    if (counters_) say(counters_->summary());
    if (gemm_ && !gemm_->attached())
      say("--gemm-shapes: the program loaded no cuBLASLt, so no GEMM call was recorded.");
    else if (gemm_ && !gemm_->summary().empty())
      say(gemm_->summary());
    if (capped_records_ > 0)
      say(std::to_string(capped_records_) + " records were not written: the cap of " +
          std::to_string(opts_.window.max_records) + " records was reached.");
  });
}

struct sigaction g_old_int, g_old_term;

void on_signal(int sig, siginfo_t* info, void* ctx) {
  struct sigaction& old = sig == SIGINT ? g_old_int : g_old_term;
  const bool program_handles = (old.sa_flags & SA_SIGINFO)
                                   ? old.sa_sigaction != nullptr
                                   : (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN);
  if (g_tracer && !g_tracer->finished() && std::this_thread::get_id() != g_tracer->writer_id()) {
    // The program survives its own handler (Python's KeyboardInterrupt): commit what we have and
    // let atexit close the trace. Otherwise the default action kills it: close the trace first.
    g_tracer->request_signal_flush(!program_handles);
    if (!program_handles) {
      const timespec tick{0, 10'000'000};
      for (int i = 0; i < 300 && !g_tracer->finished(); ++i) ::nanosleep(&tick, nullptr);
    }
  }
  if (program_handles) {
    if (old.sa_flags & SA_SIGINFO)
      old.sa_sigaction(sig, info, ctx);
    else
      old.sa_handler(sig);
    return;
  }
  if (old.sa_handler == SIG_IGN) return;
  ::sigaction(sig, &old, nullptr);
  ::raise(sig);
}

// KTUNE_TRACE_DEBUG=1 only: a crash prints its thread (the tracer's writer or the program's) and
// backtrace on stderr, then goes on as it would have (the default action, a core if enabled).
void on_crash(int sig) {
  const bool writer = g_tracer && std::this_thread::get_id() == g_tracer->writer_id();
  char line[160];
  const int n = std::snprintf(line, sizeof line, "ktune tracer [pid %d]: %s in %s; backtrace:\n",
                              static_cast<int>(::getpid()), ::strsignal(sig),
                              writer ? "the tracer's writer thread" : "a thread of the program");
  if (n > 0) (void)!::write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
  void* frames[64];
  ::backtrace_symbols_fd(frames, ::backtrace(frames, 64), 2);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_crash_reporter() {
  void* warm[1];
  ::backtrace(warm, 1);  // loads the unwinder now: the handler must not be the first to allocate
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL}) ::signal(sig, on_crash);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

// NVTX reaches CUPTI only through NVTX's own injection variable; point it at the libcupti this
// library already loaded, unless the user set it.
void route_nvtx_to_cupti() {
  if (std::getenv("NVTX_INJECTION64_PATH")) return;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) && info.dli_fname)
    ::setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

int initialize() {
  static std::atomic<bool> once{false};
  if (once.exchange(true)) return 1;
  const auto t0 = Clock::now();
  TracerOptions opts;
  try {
    opts = options_from_env();
  } catch (const std::exception& e) {
    say(std::string(e.what()) + " This process runs untraced.");
    return 1;
  }
  if (!sampled_in(opts.window, process_key())) return 1;
  if (!opts.kernels_only || opts.window.range.rfind("nvtx:", 0) == 0) route_nvtx_to_cupti();
  auto* tracer = new Tracer(std::move(opts));
  g_tracer = tracer;
  if (!tracer->start()) {
    g_tracer = nullptr;  // leaked: CUPTI may still hold callbacks into it
    return 1;
  }
  install_signal_handlers();
  if (tracer->debug()) install_crash_reporter();
  tracer->set_init_ms(ms_since(t0));
  pthread_atfork(nullptr, nullptr, [] {
    if (g_tracer) g_tracer->disown_after_fork();
    g_tracer = nullptr;  // a forked child has no writer thread; it runs untraced
  });
  std::atexit([] {
    try {
      if (g_tracer) g_tracer->stop();
    } catch (...) {
    }
  });
  return 1;
}

}  // namespace

// ktune.profile's exit: the trace of an in-process start is complete when the block ends, not at
// process exit. Idempotent; the atexit handler then has nothing left to do.
void stop_in_process() noexcept {
  try {
    if (g_tracer) g_tracer->stop();
  } catch (...) {
  }
}

}  // namespace ktune::trace

// The one exported symbol. The driver calls it at cuInit; the return value is ignored by CUDA
// (1 by convention for success). It never throws.
extern "C" __attribute__((visibility("default"))) int InitializeInjection() {
  try {
    return ktune::trace::initialize();
  } catch (...) {
    return 1;
  }
}

// The Python package starts the tracer in-process through InitializeInjection and ends it here.
extern "C" __attribute__((visibility("default"))) void ktune_tracer_stop() {
  ktune::trace::stop_in_process();
}
