#include "gemm_capture.hpp"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <fmt/format.h>

namespace ktune::trace {
namespace {

// The one capture a process has: cuBLASLt's logger callback carries no user data.
GemmCapture* g_capture = nullptr;

void on_cublaslt_message(int level, const char* function, const char* message) {
  if (GemmCapture* c = g_capture) c->on_message(level, function, message);
}

void on_router_call(const ktune_gemm_call* call) {
  if (GemmCapture* c = g_capture; c && call) c->on_call(*call);
}

using SetObserver = void (*)(ktune_gemm_observer);

// The path of a loaded cuBLASLt (libcublasLt.so.N, whichever major the program uses), or "".
std::string loaded_cublaslt() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* out) {
        const char* name = info->dlpi_name;
        if (name && std::strstr(name, "libcublasLt.so")) {
          *static_cast<std::string*>(out) = name;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
}

// cuBLASLt's logger API, as cublasLt.h declares it (no header needed: the tracer builds without
// cuBLAS).
using SetCallback = int (*)(void (*)(int, const char*, const char*));
using SetLevel = int (*)(int);
using SetFile = int (*)(FILE*);

constexpr int kTraceLevel = 2;  // one message per matmul, with its descriptors and algorithm

}  // namespace

GemmCapture::GemmCapture(const std::atomic<bool>* capturing, std::uint64_t (*now_ns)(),
                         std::uint32_t (*thread_id)())
    : capturing_(capturing),
      now_ns_(now_ns),
      thread_id_(thread_id),
      pid_(static_cast<std::uint32_t>(::getpid())) {}

bool GemmCapture::attach() noexcept {
  if (attached()) return true;
  try {
    // The router, when ktune profile preloaded it: every entry point, with whole descriptors.
    if (auto set_observer =
            reinterpret_cast<SetObserver>(::dlsym(RTLD_DEFAULT, "ktune_route_set_observer"))) {
      g_capture = this;
      set_observer(on_router_call);
      from_router_.store(true);
      attached_.store(true);
      return true;
    }
    if (!logger_allowed_) return false;
    const std::string path = loaded_cublaslt();
    if (path.empty()) return false;
    // RTLD_NOLOAD: the program's own copy, never one loaded for the tracer.
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return false;
    auto set_callback = reinterpret_cast<SetCallback>(::dlsym(lib, "cublasLtLoggerSetCallback"));
    auto set_level = reinterpret_cast<SetLevel>(::dlsym(lib, "cublasLtLoggerSetLevel"));
    auto set_file = reinterpret_cast<SetFile>(::dlsym(lib, "cublasLtLoggerSetFile"));
    if (!set_callback || !set_level || !set_file) return false;
    // cuBLASLt writes every message to its file as well (stdout by default): the program's
    // output must stay its own.
    static FILE* const devnull = std::fopen("/dev/null", "w");
    if (!devnull) return false;
    g_capture = this;
    if (set_file(devnull) != 0 || set_callback(on_cublaslt_message) != 0 ||
        set_level(kTraceLevel) != 0)
      return false;
    attached_.store(true);
    return true;
  } catch (...) {
    return false;
  }
}

void GemmCapture::on_message(int level, const char* function, const char* message) noexcept {
  if (level != kTraceLevel || !function || !message) return;
  struct Message {
    const char* function;
    const char* message;
  } m{function, message};
  add(
      [](CublasLtLogParser& p, const void* what) {
        const auto* m = static_cast<const Message*>(what);
        return p.add_call(m->function, m->message);
      },
      &m);
}

void GemmCapture::on_call(const ktune_gemm_call& call) noexcept {
  add(
      [](CublasLtLogParser& p, const void* what) {
        return p.add_record(gemm_call_record(*static_cast<const ktune_gemm_call*>(what)));
      },
      &call);
}

void GemmCapture::add(std::optional<std::size_t> (*read)(CublasLtLogParser&, const void*),
                      const void* what) noexcept {
  if (capturing_ && !capturing_->load(std::memory_order_relaxed)) return;
  try {
    GemmEventRecord e;
    e.process_id = pid_;
    e.thread_id = thread_id_();
    e.time_ns = now_ns_();
    std::lock_guard lock(mu_);
    const auto index = read(parser_, what);
    if (!index) return;
    if (counted_.size() <= *index) counted_.resize(*index + 1, 0);
    ++counted_[*index];
    e.call = *index;
    events_.push_back(e);
  } catch (...) {
    // A call that cannot be kept is lost, never the program.
  }
}

void GemmCapture::take_events(std::vector<GemmEventRecord>& out) {
  std::lock_guard lock(mu_);
  out.insert(out.end(), events_.begin(), events_.end());
  events_.clear();
}

std::vector<GemmCallRecord> GemmCapture::take_calls() {
  std::lock_guard lock(mu_);
  std::vector<GemmCallRecord> out = parser_.log().calls;
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i].calls = i < counted_.size() ? counted_[i] : 0;
    if (i < counted_.size()) counted_[i] = 0;
  }
  return out;
}

std::string GemmCapture::summary() const {
  std::lock_guard lock(mu_);
  const CublasLtLog& log = parser_.log();
  if (log.malformed_lines == 0) return "";
  return fmt::format(
      "{} cuBLASLt matmul messages could not be read (first: {}); those calls "
      "are not in the trace.",
      log.malformed_lines, log.first_malformed);
}

}  // namespace ktune::trace
