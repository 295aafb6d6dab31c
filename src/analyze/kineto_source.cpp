// Reading a PyTorch profiler (Kineto) trace: the Chrome trace-event JSON is parsed as a stream of
// SAX events, each trace event is turned into ktune's record as its object closes and is then
// forgotten, and the records go into a temporary .ktrace. The JSON is never held whole.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <istream>
#include <limits>
#include <map>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/analyze/source.hpp"
#include "ktune/core/compressed.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"

namespace ktune::analyze {
namespace {

using json = nlohmann::json;

// One JSON scalar as the SAX parser handed it; `text` keeps a float's digits for exact times.
struct Scalar {
  enum class Kind { absent, null, boolean, integer, unsigned_integer, floating, string, other };
  Kind kind = Kind::absent;
  std::int64_t integer = 0;
  std::uint64_t unsigned_integer = 0;
  double floating = 0;
  std::string text;  // the string, or the float's digits as written
};

// The event fields ktune reads, and the args among them; every other field is parsed and dropped.
enum class Field { ph, cat, name, ts, dur, pid, tid, count };
constexpr std::array<std::string_view, static_cast<int>(Field::count)> kFieldNames = {
    "ph", "cat", "name", "ts", "dur", "pid", "tid"};
enum class Arg {
  correlation,
  device,
  context,
  stream,
  registers,
  shared_memory,
  bytes,
  cbid,
  graph_id,
  graph_node_id,
  grid,
  block,
  count
};
constexpr std::array<std::string_view, static_cast<int>(Arg::count)> kArgNames = {
    "correlation",   "device", "context", "stream",   "registers per thread",
    "shared memory", "bytes",  "cbid",    "graph id", "graph node id",
    "grid",          "block"};

template <typename E, std::size_t N>
int index_of(const std::array<std::string_view, N>& names, std::string_view key) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == key) return static_cast<int>(i);
  return -1;
}

struct Event {
  std::array<Scalar, static_cast<int>(Field::count)> fields;
  std::array<Scalar, static_cast<int>(Arg::count)> args;
  std::array<std::array<Scalar, 3>, 2> dims;  // grid, block
  void clear() {
    for (auto& f : fields) f = Scalar{};
    for (auto& a : args) a = Scalar{};
    for (auto& d : dims)
      for (auto& x : d) x = Scalar{};
  }
  const Scalar& operator[](Field f) const { return fields[static_cast<int>(f)]; }
  const Scalar& operator[](Arg a) const { return args[static_cast<int>(a)]; }
};

// What the trace held, for the metadata and the notes.
struct Seen {
  std::uint64_t events = 0, kernels = 0, memcpys = 0, memsets = 0, runtime = 0, driver = 0, ops = 0,
                annotations = 0, syncs = 0;
  std::string schema_version;
};

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Kineto's microseconds in nanoseconds, from the number's own digits where it has them: a double
// holds an epoch-based microsecond count only to a quarter of a microsecond.
std::optional<std::int64_t> microseconds_to_ns(const Scalar& v) {
  constexpr std::int64_t kMaxUs = std::numeric_limits<std::int64_t>::max() / 1000 - 1;
  switch (v.kind) {
    case Scalar::Kind::integer:
      if (v.integer > kMaxUs || v.integer < -kMaxUs) return std::nullopt;
      return v.integer * 1000;
    case Scalar::Kind::unsigned_integer:
      if (v.unsigned_integer > static_cast<std::uint64_t>(kMaxUs)) return std::nullopt;
      return static_cast<std::int64_t>(v.unsigned_integer) * 1000;
    case Scalar::Kind::floating: {
      const std::string& t = v.text;
      if (t.find_first_of("eE") == std::string::npos) {
        const bool negative = !t.empty() && t[0] == '-';
        const std::size_t dot = t.find('.');
        const std::string_view whole = std::string_view(t).substr(
            negative ? 1 : 0,
            dot == std::string::npos ? std::string::npos : dot - (negative ? 1 : 0));
        std::int64_t us = 0;
        auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), us);
        if (ec != std::errc() || p != whole.data() + whole.size() || us > kMaxUs)
          return std::nullopt;
        std::int64_t frac_ns = 0;
        if (dot != std::string::npos) {
          const std::string_view frac = std::string_view(t).substr(dot + 1);
          for (std::size_t i = 0; i < 3; ++i)
            frac_ns = frac_ns * 10 + (i < frac.size() ? frac[i] - '0' : 0);
          if (frac.size() > 3 && frac[3] >= '5') ++frac_ns;  // rounded to the nanosecond
        }
        const std::int64_t ns = us * 1000 + frac_ns;
        return negative ? -ns : ns;
      }
      const double ns = std::round(v.floating * 1000.0);
      if (!std::isfinite(ns) || std::fabs(ns) > static_cast<double>(kMaxUs) * 1000.0)
        return std::nullopt;
      return static_cast<std::int64_t>(ns);
    }
    default:
      return std::nullopt;
  }
}

class Converter {
 public:
  Converter(const std::filesystem::path& json_path, trace::KtraceWriter& writer)
      : path_(json_path.string()), writer_(writer) {}

  // The SAX interface nlohmann::json::sax_parse drives.
  bool null() { return scalar(Scalar{Scalar::Kind::null}); }
  bool boolean(bool) { return scalar(Scalar{Scalar::Kind::boolean}); }
  bool number_integer(json::number_integer_t v) {
    Scalar s{Scalar::Kind::integer};
    s.integer = v;
    return scalar(s);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    Scalar s{Scalar::Kind::unsigned_integer};
    s.unsigned_integer = v;
    return scalar(s);
  }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    Scalar s{Scalar::Kind::floating};
    s.floating = v;
    s.text = text;
    return scalar(s);
  }
  bool string(json::string_t& v) {
    Scalar s{Scalar::Kind::string};
    s.text = std::move(v);
    return scalar(s);
  }
  bool binary(json::binary_t&) { return scalar(Scalar{Scalar::Kind::other}); }
  bool start_object(std::size_t) { return open(true); }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(false); }
  bool end_array() { return close(); }
  bool key(json::string_t& k) {
    if (depth_ == 1) top_key_ = k;
    if (depth_ == 3) field_ = k;
    if (depth_ == 4) arg_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception&) {
    (void)last_token;
    if (file_ && position >= file_->inflated_bytes())
      throw Error(fmt::format(
          "{}: the JSON ends early, at byte {}: the trace is cut short; export it again with "
          "torch.profiler's export_chrome_trace.",
          path_, position));
    throw Error(
        fmt::format("{}: not valid JSON at byte {}; a PyTorch profiler trace is the JSON that "
                    "export_chrome_trace writes (.json or .json.gz).",
                    path_, position));
  }

  void set_file(CompressedFile* file) { file_ = file; }
  bool saw_events() const { return saw_events_; }
  const Seen& seen() const { return seen_; }

 private:
  bool open(bool object) {
    if (depth_ == 0 && !object) not_a_trace();
    if (++depth_ > kMaxJsonDepth)
      throw Error(fmt::format(
          "{}: nests deeper than {} levels, which no PyTorch profiler trace does; ktune does "
          "not read it.",
          path_, kMaxJsonDepth));
    if (depth_ == 2 && top_key_ == "traceEvents") {
      if (object) not_a_trace();
      saw_events_ = true;
      in_events_ = true;
    }
    if (in_events_ && depth_ == 3) {
      if (!object) throw event_error("", "is a list, not an event object");
      event_.clear();
    }
    if (in_events_ && depth_ == 4) in_args_ = object && field_ == "args";
    if (in_events_ && depth_ == 5 && in_args_) {
      dim_ = arg_ == "grid" ? 0 : arg_ == "block" ? 1 : -1;
      dim_index_ = 0;
    }
    return true;
  }

  bool close() {
    if (in_events_ && depth_ == 3) {
      on_event();
      ++index_;
      if (file_) file_->record_boundary();
    }
    if (depth_ == 2 && in_events_) in_events_ = false;
    if (depth_ == 4) in_args_ = false;
    if (depth_ == 5) dim_ = -1;
    --depth_;
    return true;
  }

  bool scalar(Scalar s) {
    if (depth_ == 0) not_a_trace();
    if (depth_ == 1) {
      if (top_key_ == "traceEvents") not_a_trace();
      if (top_key_ == "schemaVersion")
        seen_.schema_version = s.kind == Scalar::Kind::string ? s.text
                               : s.kind == Scalar::Kind::integer
                                   ? std::to_string(s.integer)
                                   : std::to_string(s.unsigned_integer);
      return true;
    }
    if (!in_events_) return true;
    if (depth_ == 2) throw event_error("", "is not an event object");
    if (depth_ == 3) {
      if (const int f = index_of<Field>(kFieldNames, field_); f >= 0)
        event_.fields[f] = std::move(s);
    } else if (depth_ == 4 && in_args_) {
      if (const int a = index_of<Arg>(kArgNames, arg_); a >= 0) event_.args[a] = std::move(s);
    } else if (depth_ == 5 && in_args_ && dim_ >= 0) {
      if (dim_index_ < 3) event_.dims[dim_][dim_index_] = std::move(s);
      ++dim_index_;
    }
    return true;
  }

  [[noreturn]] void not_a_trace() const {
    throw Error(fmt::format(
        "{} is not a PyTorch profiler trace: its JSON is not an object with a traceEvents list; "
        "pass a .ktrace from ktune profile or the JSON that torch.profiler's export_chrome_trace "
        "writes.",
        path_));
  }

  Error event_error(std::string_view field, std::string_view problem) const {
    const Scalar& name = event_[Field::name];
    const Scalar& cat = event_[Field::cat];
    std::string where = fmt::format("traceEvents[{}]", index_);
    if (cat.kind == Scalar::Kind::string) {
      where += fmt::format(" (a {} event", cat.text.substr(0, 40));
      if (name.kind == Scalar::Kind::string) where += fmt::format(" '{}'", name.text.substr(0, 80));
      where += ")";
    }
    if (!field.empty()) where += fmt::format(": field \"{}\"", field);
    return Error(fmt::format(
        "{}: {} {}; ktune reads the events torch.profiler writes, so the file is damaged or was "
        "written by another tool.",
        path_, where, problem));
  }

  std::string text_of(Field f, bool required) const {
    const Scalar& v = event_[f];
    if (v.kind == Scalar::Kind::string) return v.text;
    if (v.kind == Scalar::Kind::absent && !required) return {};
    throw event_error(kFieldNames[static_cast<int>(f)],
                      v.kind == Scalar::Kind::absent ? "is missing" : "must be a string");
  }

  // A whole number in [0, max] from an event arg; `fallback` when the arg is absent or null.
  template <typename T>
  T whole(const Scalar& v, std::string_view field, T fallback = 0) const {
    const auto max = static_cast<std::uint64_t>(std::numeric_limits<T>::max());
    switch (v.kind) {
      case Scalar::Kind::absent:
      case Scalar::Kind::null:
        return fallback;
      case Scalar::Kind::integer:
        if (v.integer >= 0 && static_cast<std::uint64_t>(v.integer) <= max)
          return static_cast<T>(v.integer);
        break;
      case Scalar::Kind::unsigned_integer:
        if (v.unsigned_integer <= max) return static_cast<T>(v.unsigned_integer);
        break;
      default:
        break;
    }
    throw event_error(field, fmt::format("must be a whole number from 0 to {}", max));
  }

  // A process or thread: Kineto writes numbers, and strings ("stream 7") in some versions; each
  // distinct (pid, tid) gets a small id of its own, so huge or textual ids still tell threads
  // apart.
  std::uint32_t intern(const Scalar& pid, const Scalar& tid) {
    auto spell = [](const Scalar& v) -> std::string {
      switch (v.kind) {
        case Scalar::Kind::integer:
          return std::to_string(v.integer);
        case Scalar::Kind::unsigned_integer:
          return std::to_string(v.unsigned_integer);
        case Scalar::Kind::string:
          return "s" + v.text;
        default:
          return "";
      }
    };
    const std::string key = spell(pid) + "\x1f" + spell(tid);
    return threads_.try_emplace(key, static_cast<std::uint32_t>(threads_.size() + 1)).first->second;
  }
  std::uint32_t process(const Scalar& pid) { return intern(pid, Scalar{}); }

  // The event's start and end on the trace's clock (kKinetoEpochNs + Kineto's time).
  std::pair<std::uint64_t, std::uint64_t> times() const {
    auto read = [&](Field f) -> std::int64_t {
      const Scalar& v = event_[f];
      const std::string_view name = kFieldNames[static_cast<int>(f)];
      if (v.kind == Scalar::Kind::absent) throw event_error(name, "is missing");
      const auto ns = microseconds_to_ns(v);
      if (!ns)
        throw event_error(name, v.kind == Scalar::Kind::integer ||
                                        v.kind == Scalar::Kind::unsigned_integer ||
                                        v.kind == Scalar::Kind::floating
                                    ? "is out of range for a time in microseconds"
                                    : "must be a number of microseconds");
      return *ns;
    };
    const std::int64_t ts = read(Field::ts), dur = read(Field::dur);
    if (dur < 0) throw event_error("dur", "is negative");
    const auto epoch = static_cast<std::int64_t>(kKinetoEpochNs);
    if (ts < -epoch + 1)
      throw event_error("ts", "lies more than 1000 s before the trace's base time");
    const std::uint64_t start = static_cast<std::uint64_t>(ts + epoch);
    const std::uint64_t end = start + static_cast<std::uint64_t>(dur);
    // A trace stores times as signed 64-bit nanoseconds: a later end is no time it can hold (it
    // once failed in SQLite, named the scratch file and advised re-recording).
    if (end < start || end > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw event_error("dur", "is out of range for a time in microseconds");
    return {start, end};
  }

  void add(const auto& record) {
    writer_.add(record);
    if (++pending_ >= (1u << 16)) {
      writer_.commit();
      pending_ = 0;
    }
  }

  void on_event() {
    ++seen_.events;
    const Scalar& ph = event_[Field::ph];
    if (ph.kind != Scalar::Kind::string || ph.text != "X") return;  // flows, metadata, counters
    const std::string cat = lower(text_of(Field::cat, false));
    if (cat == "kernel") {
      kernel();
    } else if (cat == "gpu_memcpy") {
      memcpy();
    } else if (cat == "gpu_memset") {
      memset();
    } else if (cat == "cuda_runtime" || cat == "cuda_driver") {
      api(cat == "cuda_runtime" ? "runtime" : "driver");
    } else if (cat == "cpu_op" || cat == "user_annotation" || cat == "gpu_user_annotation") {
      range(cat);
    } else if (cat == "cuda_sync") {
      sync();
    }
  }

  void kernel() {
    trace::KernelRecord k;
    k.name = text_of(Field::name, true);
    std::tie(k.start_ns, k.end_ns) = times();
    const Scalar& pid = event_[Field::pid];
    k.device_id = whole<std::uint32_t>(event_[Arg::device], "args.device",
                                       pid.kind == Scalar::Kind::integer && pid.integer >= 0 &&
                                               pid.integer <= std::numeric_limits<int>::max()
                                           ? static_cast<std::uint32_t>(pid.integer)
                                           : 0);
    k.context_id = whole<std::uint32_t>(event_[Arg::context], "args.context");
    k.stream_id = whole<std::uint32_t>(event_[Arg::stream], "args.stream");
    k.correlation_id = whole<std::uint32_t>(event_[Arg::correlation], "args.correlation");
    k.registers_per_thread =
        whole<std::uint32_t>(event_[Arg::registers], "args.registers per thread");
    // Kineto sums static and dynamic shared memory; the sum is what a launch shape uses.
    k.static_shared_bytes = whole<std::int32_t>(event_[Arg::shared_memory], "args.shared memory");
    k.graph_id = whole<std::uint32_t>(event_[Arg::graph_id], "args.graph id");
    k.graph_node_id = whole<std::uint64_t>(event_[Arg::graph_node_id], "args.graph node id");
    std::array<std::int32_t*, 3> grid = {&k.grid_x, &k.grid_y, &k.grid_z};
    std::array<std::int32_t*, 3> block = {&k.block_x, &k.block_y, &k.block_z};
    for (int i = 0; i < 3; ++i) {
      *grid[i] = whole<std::int32_t>(event_.dims[0][i], fmt::format("args.grid[{}]", i));
      *block[i] = whole<std::int32_t>(event_.dims[1][i], fmt::format("args.block[{}]", i));
    }
    ++seen_.kernels;
    add(k);
  }

  // "Memcpy HtoD (Pageable -> Device)": the kind, and the two memories in lower case.
  void memcpy() {
    trace::MemcpyRecord c;
    const std::string name = text_of(Field::name, true);
    std::tie(c.start_ns, c.end_ns) = times();
    c.kind = c.src_memory = c.dst_memory = "unknown";
    if (name.rfind("Memcpy ", 0) == 0) {
      const std::size_t space = name.find(' ', 7);
      c.kind = name.substr(7, space == std::string::npos ? std::string::npos : space - 7);
      const std::size_t open = name.find('('), arrow = name.find(" -> "), shut = name.rfind(')');
      if (open != std::string::npos && arrow != std::string::npos && shut != std::string::npos &&
          open < arrow && arrow < shut) {
        c.src_memory = lower(name.substr(open + 1, arrow - open - 1));
        c.dst_memory = lower(name.substr(arrow + 4, shut - arrow - 4));
      }
    }
    c.bytes = whole<std::uint64_t>(event_[Arg::bytes], "args.bytes");
    c.device_id = whole<std::uint32_t>(event_[Arg::device], "args.device");
    c.context_id = whole<std::uint32_t>(event_[Arg::context], "args.context");
    c.stream_id = whole<std::uint32_t>(event_[Arg::stream], "args.stream");
    c.correlation_id = whole<std::uint32_t>(event_[Arg::correlation], "args.correlation");
    ++seen_.memcpys;
    add(c);
  }

  void memset() {
    trace::MemsetRecord m;
    std::tie(m.start_ns, m.end_ns) = times();
    m.bytes = whole<std::uint64_t>(event_[Arg::bytes], "args.bytes");
    m.device_id = whole<std::uint32_t>(event_[Arg::device], "args.device");
    m.context_id = whole<std::uint32_t>(event_[Arg::context], "args.context");
    m.stream_id = whole<std::uint32_t>(event_[Arg::stream], "args.stream");
    m.correlation_id = whole<std::uint32_t>(event_[Arg::correlation], "args.correlation");
    ++seen_.memsets;
    add(m);
  }

  void api(const char* which) {
    trace::ApiRecord a;
    a.api = which;
    a.name = text_of(Field::name, true);
    std::tie(a.start_ns, a.end_ns) = times();
    a.callback_id = whole<std::uint32_t>(event_[Arg::cbid], "args.cbid");
    a.correlation_id = whole<std::uint32_t>(event_[Arg::correlation], "args.correlation");
    a.process_id = process(event_[Field::pid]);
    a.thread_id = intern(event_[Field::pid], event_[Field::tid]);
    ++(a.api == "runtime" ? seen_.runtime : seen_.driver);
    add(a);
  }

  // PyTorch ops and user annotations on their CPU thread; GPU-side annotations on their stream.
  void range(const std::string& cat) {
    trace::NvtxRangeRecord r;
    r.name = text_of(Field::name, true);
    std::tie(r.start_ns, r.end_ns) = times();
    r.domain = cat == "cpu_op" ? kTorchOpDomain : cat == "gpu_user_annotation" ? "gpu" : "";
    r.process_id = process(event_[Field::pid]);
    r.thread_id = intern(event_[Field::pid], event_[Field::tid]);
    ++(cat == "cpu_op" ? seen_.ops : seen_.annotations);
    add(r);
  }

  void sync() {
    trace::SyncRecord s;
    const std::string name = text_of(Field::name, true);
    std::tie(s.start_ns, s.end_ns) = times();
    s.type = name == "Stream Sync"         ? "stream_synchronize"
             : name == "Event Sync"        ? "event_synchronize"
             : name == "Context Sync"      ? "context_synchronize"
             : name == "Stream Wait Event" ? "stream_wait_event"
                                           : "unknown";
    s.stream_id = whole<std::uint32_t>(event_[Arg::stream], "args.stream");
    s.correlation_id = whole<std::uint32_t>(event_[Arg::correlation], "args.correlation");
    ++seen_.syncs;
    add(s);
  }

  std::string path_;
  trace::KtraceWriter& writer_;
  CompressedFile* file_ = nullptr;
  int depth_ = 0;
  std::string top_key_, field_, arg_;
  bool saw_events_ = false, in_events_ = false, in_args_ = false;
  int dim_ = -1, dim_index_ = 0;
  std::uint64_t index_ = 0;
  Event event_;
  Seen seen_;
  std::map<std::string, std::uint32_t> threads_;
  std::uint32_t pending_ = 0;
};

std::vector<std::string> lacks(const Seen& seen) {
  std::vector<std::string> out = {
      "Read from a PyTorch profiler trace, which holds no hardware counters or cuBLASLt GEMM "
      "shapes: for roofline verdicts and the GEMM table, record the program with ktune profile "
      "--metrics roofline --gemm-shapes."};
  if (seen.kernels == 0)
    out.push_back(
        "The trace holds no GPU kernels: record it with ProfilerActivity.CUDA among the "
        "profiler's activities.");
  else if (seen.ops == 0)
    out.push_back(
        "The trace holds no PyTorch ops, so no kernel names its op: record it with "
        "ProfilerActivity.CPU among the profiler's activities.");
  return out;
}

}  // namespace

namespace detail {

KinetoConversion::KinetoConversion(const std::filesystem::path& json_path)
    : scratch("ktune-torch",
              {"trace.ktrace", "trace.ktrace-journal", "trace.ktrace-wal", "trace.ktrace-shm"}),
      ktrace(scratch.path() / "trace.ktrace") {
  try {
    trace::TraceMetadata metadata;
    metadata.mode = "torch.profiler";
    metadata.complete = true;
    trace::KtraceWriter writer(ktrace, metadata);
    Converter converter(json_path, writer);
    CompressedStreamBuf buf(json_path, "a .ktrace or a PyTorch profiler trace");
    converter.set_file(&buf.file());
    std::istream in(&buf);
    json::sax_parse(in, &converter);
    if (!converter.saw_events())
      throw Error(fmt::format(
          "{} is not a PyTorch profiler trace: its JSON object has no traceEvents list; pass the "
          "JSON that torch.profiler's export_chrome_trace writes.",
          json_path.string()));
    const Seen& seen = converter.seen();
    if (seen.kernels) metadata.records.push_back("kernel");
    if (seen.memcpys) metadata.records.push_back("memcpy");
    // torch.profiler records memsets with the CUDA activity: none is "none ran", not "not asked".
    if (seen.kernels || seen.memcpys || seen.memsets) metadata.records.push_back("memset");
    if (seen.runtime) metadata.records.push_back("runtime_api");
    if (seen.driver) metadata.records.push_back("driver_api");
    if (seen.ops || seen.annotations) metadata.records.push_back("nvtx");
    if (seen.syncs) metadata.records.push_back("sync");
    metadata.tracer_version =
        seen.schema_version.empty()
            ? "torch.profiler (Kineto)"
            : fmt::format("torch.profiler (Kineto trace schemaVersion {})", seen.schema_version);
    writer.write_metadata(metadata);
    writer.commit();
    lacks = analyze::lacks(seen);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(ktrace, ec);
    throw;
  }
}

KinetoConversion::~KinetoConversion() = default;  // the scratch folder goes with its files

}  // namespace detail

std::unique_ptr<KtraceSource> open_trace(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    // Enough of the head to see past a byte-order mark and any run of blanks valid JSON may
    // open with (16 bytes once called such a trace "not a trace").
    char head[4096] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(head, sizeof head);
    std::string_view got(head, static_cast<std::size_t>(in.gcount()));
    const bool gzip = got.size() >= 2 && static_cast<unsigned char>(got[0]) == 0x1f &&
                      static_cast<unsigned char>(got[1]) == 0x8b;
    const std::string_view json = got.substr(got.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0);
    const std::size_t first = json.find_first_not_of(" \t\r\n");
    const bool blank_head = !json.empty() && first == std::string_view::npos &&
                            got.size() == sizeof head;  // the JSON parser reads on
    if (gzip || blank_head || (first != std::string_view::npos && json[first] == '{'))
      return std::make_unique<KinetoSource>(path);
    if (got.rfind(std::string_view("SQLite format 3\0", 16), 0) != 0)
      throw Error(fmt::format(
          "{} is neither a .ktrace nor a PyTorch profiler trace; pass a trace written by ktune "
          "profile, or the JSON (.json or .json.gz) that torch.profiler's export_chrome_trace "
          "writes.",
          path.string()));
  }
  return std::make_unique<KtraceSource>(path);  // its own sentences for missing files
}

}  // namespace ktune::analyze
