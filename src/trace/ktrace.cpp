#include "ktune/trace/ktrace.hpp"

#include <cxxabi.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"

namespace ktune::trace {
namespace {

// The application_id pragma marks the file as a .ktrace ("ktrc"), so a reader can tell a ktrace
// from any other SQLite database before looking at tables.
constexpr int kApplicationId = 0x6b747263;

constexpr const char* kSchemaSql = R"sql(
CREATE TABLE metadata(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);
CREATE TABLE kernels(id INTEGER PRIMARY KEY, name_id INTEGER, demangled_id INTEGER,
  queued_ns INTEGER, submitted_ns INTEGER, start_ns INTEGER, end_ns INTEGER, device_id INTEGER,
  context_id INTEGER, stream_id INTEGER, correlation_id INTEGER, grid_x INTEGER, grid_y INTEGER,
  grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER, cluster_x INTEGER,
  cluster_y INTEGER, cluster_z INTEGER, registers_per_thread INTEGER,
  static_shared_bytes INTEGER, dynamic_shared_bytes INTEGER,
  local_memory_per_thread_bytes INTEGER, local_memory_total_bytes INTEGER, graph_id INTEGER,
  graph_node_id INTEGER);
CREATE TABLE memcpys(id INTEGER PRIMARY KEY, kind_id INTEGER, src_memory_id INTEGER,
  dst_memory_id INTEGER, bytes INTEGER, start_ns INTEGER, end_ns INTEGER, device_id INTEGER,
  context_id INTEGER, stream_id INTEGER, correlation_id INTEGER, graph_id INTEGER,
  graph_node_id INTEGER);
CREATE TABLE memsets(id INTEGER PRIMARY KEY, bytes INTEGER, value INTEGER, start_ns INTEGER,
  end_ns INTEGER, device_id INTEGER, context_id INTEGER, stream_id INTEGER,
  correlation_id INTEGER, graph_id INTEGER, graph_node_id INTEGER);
CREATE TABLE api_calls(id INTEGER PRIMARY KEY, api_id INTEGER, name_id INTEGER,
  callback_id INTEGER, start_ns INTEGER, end_ns INTEGER, process_id INTEGER, thread_id INTEGER,
  correlation_id INTEGER, return_value INTEGER);
CREATE TABLE syncs(id INTEGER PRIMARY KEY, type_id INTEGER, start_ns INTEGER, end_ns INTEGER,
  context_id INTEGER, stream_id INTEGER, cuda_event_id INTEGER, correlation_id INTEGER);
CREATE TABLE nvtx_ranges(id INTEGER PRIMARY KEY, name_id INTEGER, domain_id INTEGER,
  start_ns INTEGER, end_ns INTEGER, process_id INTEGER, thread_id INTEGER);
CREATE TABLE overheads(id INTEGER PRIMARY KEY, kind_id INTEGER, start_ns INTEGER, end_ns INTEGER,
  thread_id INTEGER, correlation_id INTEGER);
CREATE TABLE drops(id INTEGER PRIMARY KEY, context_id INTEGER, stream_id INTEGER,
  count INTEGER);
CREATE TABLE counters(id INTEGER PRIMARY KEY, device_id INTEGER, correlation_id INTEGER,
  metric_id INTEGER, value REAL);
)sql";

// Separate from kSchemaSql so append_gemm_calls can add it to a file of an older version.
constexpr const char* kGemmCallsSql = R"sql(
CREATE TABLE IF NOT EXISTS gemm_calls(id INTEGER PRIMARY KEY, m INTEGER, n INTEGER, k INTEGER,
  batch INTEGER, lda INTEGER, ldb INTEGER, ldc INTEGER, ldd INTEGER, a_type_id INTEGER,
  b_type_id INTEGER, c_type_id INTEGER, d_type_id INTEGER, compute_type_id INTEGER,
  scale_type_id INTEGER, transa_id INTEGER, transb_id INTEGER, epilogue_id INTEGER,
  algo_id INTEGER, tile_id INTEGER, stages_id INTEGER, splits INTEGER, reduction_id INTEGER,
  calls INTEGER);
)sql";
constexpr const char* kInsertGemmCallSql =
    "INSERT INTO gemm_calls(m, n, k, batch, lda, ldb, ldc, ldd, a_type_id, b_type_id, "
    "c_type_id, d_type_id, compute_type_id, scale_type_id, transa_id, transb_id, epilogue_id, "
    "algo_id, tile_id, stages_id, splits, reduction_id, calls) "
    "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

nlohmann::json window_json(const TraceWindow& w) {
  return {{"delay_s", w.delay_s},
          {"duration_s", w.duration_s},
          {"period_s", w.period_s},
          {"window_s", w.window_s},
          {"index", w.index},
          {"range", w.range},
          {"sample_one_in", w.sample_one_in},
          {"job_id", w.job_id},
          {"max_records", w.max_records}};
}

// Metadata as (key, JSON value) rows.
std::vector<std::pair<std::string, nlohmann::json>> metadata_rows(const TraceMetadata& m) {
  return {{"schema_version", kKtraceSchemaVersion},
          {"mode", m.mode},
          {"records", m.records},
          {"command_line", m.command_line},
          {"pid", m.pid},
          {"ppid", m.ppid},
          {"started_at", m.started_at},
          {"finished_at", m.finished_at},
          {"complete", m.complete},
          {"identity", m.identity ? nlohmann::json(*m.identity) : nlohmann::json(nullptr)},
          {"window", window_json(m.window)},
          {"dropped_records", m.dropped_records},
          {"capped_records", m.capped_records},
          {"tracer_version", m.tracer_version}};
}

class Db {
 public:
  Db(const std::filesystem::path& path, int flags) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw Error(fmt::format("cannot open trace file {} ({}); check the path and permissions.",
                              path.string(), msg));
    }
  }
  ~Db() { sqlite3_close_v2(db_); }
  Db(Db&& o) noexcept : path_(std::move(o.path_)), db_(o.db_) { o.db_ = nullptr; }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  sqlite3* get() const { return db_; }
  const std::filesystem::path& path() const { return path_; }

  void exec(const char* sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      fail(msg);
    }
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(
        fmt::format("trace file {}: SQLite error: {}; check free disk space and that the "
                    "file is a .ktrace written by ktune profile.",
                    path_.string(), what));
  }

 private:
  std::filesystem::path path_;
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(const Db& db, const char* sql) : db_(&db) {
    if (sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) !=
        SQLITE_OK)
      db.fail(sqlite3_errmsg(db.get()));
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& o) noexcept : db_(o.db_), stmt_(o.stmt_) { o.stmt_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(db_, o.db_);
    std::swap(stmt_, o.stmt_);
    return *this;
  }

  // Binds all values in order and runs the statement once.
  template <class... Ts>
  void run(const Ts&... values) {
    int i = 1;
    (bind(i++, values), ...);
    if (sqlite3_step(stmt_) != SQLITE_DONE) db_->fail(sqlite3_errmsg(db_->get()));
    sqlite3_reset(stmt_);
  }
  bool step() {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) db_->fail(sqlite3_errmsg(db_->get()));
    return false;
  }
  std::int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::uint64_t u64(int col) const { return static_cast<std::uint64_t>(i64(col)); }
  double f64(int col) const { return sqlite3_column_double(stmt_, col); }
  std::uint32_t u32(int col) const { return static_cast<std::uint32_t>(i64(col)); }
  std::int32_t i32(int col) const { return static_cast<std::int32_t>(i64(col)); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  sqlite3_stmt* get() const { return stmt_; }

 private:
  void bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(stmt_, i, v); }
  // Unsigned 64-bit values (timestamps, ids) are stored as their signed bit pattern.
  void bind(int i, std::uint64_t v) { sqlite3_bind_int64(stmt_, i, static_cast<std::int64_t>(v)); }
  void bind(int i, std::uint32_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, std::int32_t v) { sqlite3_bind_int64(stmt_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }

  const Db* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

// The one encoding of a gemm_calls row, for the writer and for append_gemm_calls.
template <class Intern>
void insert_gemm_call(Stmt& insert, const GemmCallRecord& r, Intern&& intern) {
  insert.run(r.m, r.n, r.k, r.batch, r.lda, r.ldb, r.ldc, r.ldd, intern(r.a_type), intern(r.b_type),
             intern(r.c_type), intern(r.d_type), intern(r.compute_type), intern(r.scale_type),
             intern(r.transa), intern(r.transb), intern(r.epilogue), r.algo_id, intern(r.tile),
             intern(r.stages), r.splits, intern(r.reduction), r.calls);
}

}  // namespace

std::size_t Trace::record_count() const {
  return kernels.size() + memcpys.size() + memsets.size() + api_calls.size() + syncs.size() +
         nvtx_ranges.size() + overheads.size() + counters.size() + gemm_calls.size();
}

std::string demangle(std::string_view mangled) {
  std::string in(mangled);
  if (in.rfind("_Z", 0) != 0) return in;
  int status = 0;
  char* out = abi::__cxa_demangle(in.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return in;
  }
  std::string result(out);
  std::free(out);
  return result;
}

struct KtraceWriter::Impl {
  Db db;
  Stmt insert_string, kernel, memcpy, memset, api, sync, nvtx, overhead, drop, counter, gemm_call,
      metadata;
  std::unordered_map<std::string, std::int64_t> strings;
  std::unordered_map<std::int64_t, std::int64_t> demangled;  // name id -> demangled id
  bool in_transaction = false;

  explicit Impl(const std::filesystem::path& path)
      : db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) {}

  void begin() {
    if (!in_transaction) db.exec("BEGIN");
    in_transaction = true;
  }
  std::int64_t intern(const std::string& s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    insert_string.run(s);
    const std::int64_t id = sqlite3_last_insert_rowid(db.get());
    strings.emplace(s, id);
    return id;
  }
};

KtraceWriter::KtraceWriter(const std::filesystem::path& path, const TraceMetadata& metadata) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  std::filesystem::remove(path.string() + "-journal", ec);
  impl_ = std::make_unique<Impl>(path);
  auto& db = impl_->db;
  // A crashed process loses at most its open transaction; an OS crash may lose more, which a
  // profiler can accept in exchange for never waiting on fsync.
  db.exec("PRAGMA synchronous=OFF");
  db.exec(fmt::format("PRAGMA application_id={}; PRAGMA user_version={}", kApplicationId,
                      kKtraceSchemaVersion)
              .c_str());
  db.exec("BEGIN");
  db.exec(kSchemaSql);
  db.exec(kGemmCallsSql);
  impl_->insert_string = Stmt(db, "INSERT INTO strings(value) VALUES(?)");
  impl_->kernel = Stmt(db,
                       "INSERT INTO kernels(name_id, demangled_id, queued_ns, submitted_ns, "
                       "start_ns, end_ns, device_id, context_id, stream_id, correlation_id, "
                       "grid_x, grid_y, grid_z, block_x, block_y, block_z, cluster_x, cluster_y, "
                       "cluster_z, registers_per_thread, static_shared_bytes, "
                       "dynamic_shared_bytes, local_memory_per_thread_bytes, "
                       "local_memory_total_bytes, graph_id, graph_node_id) VALUES(?,?,?,?,?,?,?,"
                       "?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  impl_->memcpy = Stmt(db,
                       "INSERT INTO memcpys(kind_id, src_memory_id, dst_memory_id, bytes, "
                       "start_ns, end_ns, device_id, context_id, stream_id, correlation_id, "
                       "graph_id, graph_node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?)");
  impl_->memset = Stmt(db,
                       "INSERT INTO memsets(bytes, value, start_ns, end_ns, device_id, "
                       "context_id, stream_id, correlation_id, graph_id, graph_node_id) "
                       "VALUES(?,?,?,?,?,?,?,?,?,?)");
  impl_->api = Stmt(db,
                    "INSERT INTO api_calls(api_id, name_id, callback_id, start_ns, end_ns, "
                    "process_id, thread_id, correlation_id, return_value) "
                    "VALUES(?,?,?,?,?,?,?,?,?)");
  impl_->sync = Stmt(db,
                     "INSERT INTO syncs(type_id, start_ns, end_ns, context_id, stream_id, "
                     "cuda_event_id, correlation_id) VALUES(?,?,?,?,?,?,?)");
  impl_->nvtx = Stmt(db,
                     "INSERT INTO nvtx_ranges(name_id, domain_id, start_ns, end_ns, process_id, "
                     "thread_id) VALUES(?,?,?,?,?,?)");
  impl_->overhead = Stmt(db,
                         "INSERT INTO overheads(kind_id, start_ns, end_ns, thread_id, "
                         "correlation_id) VALUES(?,?,?,?,?)");
  impl_->drop = Stmt(db, "INSERT INTO drops(context_id, stream_id, count) VALUES(?,?,?)");
  impl_->counter = Stmt(db,
                        "INSERT INTO counters(device_id, correlation_id, metric_id, value) "
                        "VALUES(?,?,?,?)");
  impl_->gemm_call = Stmt(db, kInsertGemmCallSql);
  impl_->metadata = Stmt(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES(?,?)");
  impl_->in_transaction = true;
  write_metadata(metadata);
  commit();
}

KtraceWriter::~KtraceWriter() {
  try {
    commit();
  } catch (...) {
    // Destructors never throw; the last commit() stands.
  }
}

void KtraceWriter::write_metadata(const TraceMetadata& metadata) {
  impl_->begin();
  // The command line is the program's argv, which need not be UTF-8; JSON must be (a strict dump
  // threw, and the tracer stopped writing the trace).
  for (const auto& [key, value] : metadata_rows(metadata))
    impl_->metadata.run(key, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void KtraceWriter::commit() {
  if (!impl_ || !impl_->in_transaction) return;
  impl_->in_transaction = false;
  impl_->db.exec("COMMIT");
}

void KtraceWriter::add(const KernelRecord& r) {
  impl_->begin();
  const std::int64_t name_id = impl_->intern(r.name);
  std::int64_t demangled_id;
  if (!r.demangled_name.empty()) {
    demangled_id = impl_->intern(r.demangled_name);
  } else if (auto it = impl_->demangled.find(name_id); it != impl_->demangled.end()) {
    demangled_id = it->second;
  } else {
    demangled_id = impl_->intern(demangle(r.name));
    impl_->demangled.emplace(name_id, demangled_id);
  }
  impl_->kernel.run(name_id, demangled_id, r.queued_ns, r.submitted_ns, r.start_ns, r.end_ns,
                    r.device_id, r.context_id, r.stream_id, r.correlation_id, r.grid_x, r.grid_y,
                    r.grid_z, r.block_x, r.block_y, r.block_z, r.cluster_x, r.cluster_y,
                    r.cluster_z, r.registers_per_thread, r.static_shared_bytes,
                    r.dynamic_shared_bytes, r.local_memory_per_thread_bytes,
                    r.local_memory_total_bytes, r.graph_id, r.graph_node_id);
  ++records_written_;
}

void KtraceWriter::add(const MemcpyRecord& r) {
  impl_->begin();
  impl_->memcpy.run(impl_->intern(r.kind), impl_->intern(r.src_memory), impl_->intern(r.dst_memory),
                    r.bytes, r.start_ns, r.end_ns, r.device_id, r.context_id, r.stream_id,
                    r.correlation_id, r.graph_id, r.graph_node_id);
  ++records_written_;
}

void KtraceWriter::add(const MemsetRecord& r) {
  impl_->begin();
  impl_->memset.run(r.bytes, r.value, r.start_ns, r.end_ns, r.device_id, r.context_id, r.stream_id,
                    r.correlation_id, r.graph_id, r.graph_node_id);
  ++records_written_;
}

void KtraceWriter::add(const ApiRecord& r) {
  impl_->begin();
  impl_->api.run(impl_->intern(r.api), impl_->intern(r.name), r.callback_id, r.start_ns, r.end_ns,
                 r.process_id, r.thread_id, r.correlation_id, r.return_value);
  ++records_written_;
}

void KtraceWriter::add(const SyncRecord& r) {
  impl_->begin();
  impl_->sync.run(impl_->intern(r.type), r.start_ns, r.end_ns, r.context_id, r.stream_id,
                  r.cuda_event_id, r.correlation_id);
  ++records_written_;
}

void KtraceWriter::add(const NvtxRangeRecord& r) {
  impl_->begin();
  impl_->nvtx.run(impl_->intern(r.name), impl_->intern(r.domain), r.start_ns, r.end_ns,
                  r.process_id, r.thread_id);
  ++records_written_;
}

void KtraceWriter::add(const OverheadRecord& r) {
  impl_->begin();
  impl_->overhead.run(impl_->intern(r.kind), r.start_ns, r.end_ns, r.thread_id, r.correlation_id);
  ++records_written_;
}

void KtraceWriter::add(const DropRecord& r) {
  impl_->begin();
  impl_->drop.run(r.context_id, r.stream_id, r.count);
}

void KtraceWriter::add(const CounterRecord& r) {
  impl_->begin();
  impl_->counter.run(r.device_id, r.correlation_id, impl_->intern(r.metric), r.value);
  ++records_written_;
}

void KtraceWriter::add(const GemmCallRecord& r) {
  impl_->begin();
  insert_gemm_call(impl_->gemm_call, r, [&](const std::string& s) { return impl_->intern(s); });
  ++records_written_;
}

void KtraceWriter::add_records(const Trace& batch) {
  for (const auto& r : batch.kernels) add(r);
  for (const auto& r : batch.memcpys) add(r);
  for (const auto& r : batch.memsets) add(r);
  for (const auto& r : batch.api_calls) add(r);
  for (const auto& r : batch.syncs) add(r);
  for (const auto& r : batch.nvtx_ranges) add(r);
  for (const auto& r : batch.overheads) add(r);
  for (const auto& r : batch.drops) add(r);
  for (const auto& r : batch.counters) add(r);
  for (const auto& r : batch.gemm_calls) add(r);
}

void write_ktrace(const std::filesystem::path& path, const Trace& trace) {
  KtraceWriter writer(path, trace.metadata);
  writer.add_records(trace);
  writer.commit();
}

namespace {

Db open_for_reading(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path))
    throw Error(
        fmt::format("trace file {} does not exist; pass the path that ktune profile "
                    "printed.",
                    path.string()));
  // Read-write, not read-only: a trace cut short mid-transaction has a hot journal that SQLite
  // rolls back on open, which needs write access. NOMUTEX: a reader is used by one thread at a
  // time (KtraceReader's contract), so SQLite's lock around every column read buys nothing.
  Db db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX);
  sqlite3_busy_timeout(db.get(), 2000);
  Stmt app(db, "PRAGMA application_id");
  std::int64_t id = 0;
  try {
    if (app.step()) id = app.i64(0);
  } catch (const Error&) {
    id = 0;  // not a database at all
  }
  if (id != kApplicationId)
    throw Error(fmt::format("{} is not a .ktrace file; pass a trace written by ktune profile.",
                            path.string()));
  return db;
}

// Typed reads of the metadata object: a field that is absent or null keeps its default; one of the
// wrong JSON type is one sentence naming the file and field (never nlohmann's type_error, and
// never a float converted out of an integer's range).
class MetadataFields {
 public:
  MetadataFields(const nlohmann::json& j, const std::filesystem::path& file,
                 std::string prefix = "")
      : j_(j), file_(file), prefix_(std::move(prefix)) {}

  std::int64_t integer(const char* key, std::int64_t fallback) const {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number_integer()) wrong(key, *v, "an integer");
    return v->is_number_unsigned() ? static_cast<std::int64_t>(v->get<std::uint64_t>())
                                   : v->get<std::int64_t>();
  }
  std::uint64_t count(const char* key) const {
    const nlohmann::json* v = find(key);
    if (!v) return 0;
    if (!v->is_number_unsigned()) wrong(key, *v, "a count (an integer of at least 0)");
    return v->get<std::uint64_t>();
  }
  double number(const char* key, double fallback) const {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number()) wrong(key, *v, "a number");
    return v->get<double>();
  }
  std::string text(const char* key) const {
    const nlohmann::json* v = find(key);
    if (!v) return "";
    if (!v->is_string()) wrong(key, *v, "a string");
    return v->get<std::string>();
  }
  bool boolean(const char* key) const {
    const nlohmann::json* v = find(key);
    if (!v) return false;
    if (!v->is_boolean()) wrong(key, *v, "true or false");
    return v->get<bool>();
  }
  std::vector<std::string> texts(const char* key) const {
    const nlohmann::json* v = find(key);
    if (!v) return {};
    const bool ok = v->is_array() &&
                    std::all_of(v->begin(), v->end(), [](const auto& e) { return e.is_string(); });
    if (!ok) wrong(key, *v, "a list of strings");
    return v->get<std::vector<std::string>>();
  }
  // An object field, read with `read` (which may use MetadataFields on it); nullptr: absent.
  const nlohmann::json* object(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v && !v->is_object()) wrong(key, *v, "an object");
    return v;
  }
  [[noreturn]] void wrong(const char* key, const nlohmann::json& v, const char* expected) const {
    const std::string found =
        v.is_discarded() ? "text that is not JSON" : std::string("a JSON ") + v.type_name();
    throw Error(fmt::format(
        "trace file {}: metadata field '{}{}' holds {} where ktune profile writes {}; the file "
        "was edited or damaged, so re-record it with ktune profile.",
        file_.string(), prefix_, key, found, expected));
  }

 private:
  const nlohmann::json* find(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  const nlohmann::json& j_;
  const std::filesystem::path& file_;
  std::string prefix_;
};

TraceWindow window_from_json(const MetadataFields& w) {
  TraceWindow out;
  out.delay_s = w.number("delay_s", 0.0);
  out.duration_s = w.number("duration_s", 0.0);
  out.period_s = w.number("period_s", 0.0);
  out.window_s = w.number("window_s", 0.0);
  out.index = w.count("index");
  out.range = w.text("range");
  out.sample_one_in = static_cast<std::uint32_t>(w.integer("sample_one_in", 1));
  out.job_id = w.text("job_id");
  out.max_records = w.count("max_records");
  return out;
}

TraceMetadata read_metadata(const Db& db) {
  TraceMetadata m;
  Stmt q(db, "SELECT key, value FROM metadata");
  nlohmann::json j = nlohmann::json::object();
  while (q.step()) j[q.text(0)] = nlohmann::json::parse(q.text(1), nullptr, false);
  const MetadataFields f(j, db.path());
  const std::int64_t version = f.integer("schema_version", 0);
  if (version > kKtraceSchemaVersion)
    throw Error(
        fmt::format("trace file {} has schema_version {}, newer than the {} this ktune "
                    "reads; upgrade ktune.",
                    db.path().string(), version, kKtraceSchemaVersion));
  m.schema_version = static_cast<int>(std::max<std::int64_t>(version, 0));
  m.mode = f.text("mode");
  m.records = f.texts("records");
  m.command_line = f.texts("command_line");
  m.pid = f.integer("pid", 0);
  m.ppid = f.integer("ppid", 0);
  m.started_at = f.text("started_at");
  m.finished_at = f.text("finished_at");
  m.complete = f.boolean("complete");
  if (const nlohmann::json* id = f.object("identity")) {
    try {
      m.identity = id->get<Identity>();
    } catch (const nlohmann::json::exception&) {
      f.wrong("identity", *id, "ktune info's identity block");
    }
  }
  if (const nlohmann::json* w = f.object("window"))
    m.window = window_from_json(MetadataFields(*w, db.path(), "window."));
  m.capped_records = f.count("capped_records");
  m.tracer_version = f.text("tracer_version");
  // The drops table is the truth (written as drops happen); the metadata total only at close.
  Stmt d(db, "SELECT COALESCE(SUM(count), 0) FROM drops");
  m.dropped_records = d.step() ? d.u64(0) : 0;
  return m;
}

// The rows usable_row keeps, as SQL: the origin is the earliest of those.
constexpr const char* kUsableTimes =
    "typeof(start_ns) = 'integer' AND typeof(end_ns) = 'integer' AND start_ns > 0 AND "
    "end_ns >= start_ns";

// The tables a visit reads, as indices into KtraceReader::Impl::skipped.
enum Table { kKernels, kMemcpys, kMemsets, kApiCalls, kSyncs, kNvtxRanges, kOverheads, kTables };
constexpr const char* kTableNames[kTables] = {"kernels", "memcpys",     "memsets",  "api_calls",
                                              "syncs",   "nvtx_ranges", "overheads"};

// One row's integer columns, each read from SQLite once: a column read is an API call with its own
// checks, and visits used to make two per column (its type, then its value), which perf showed
// as a quarter of a kernel visit.
struct Row {
  std::array<std::int64_t, 32> v{};
  std::int64_t i64(int c) const { return v[static_cast<std::size_t>(c)]; }
  std::uint64_t u64(int c) const { return static_cast<std::uint64_t>(i64(c)); }
  std::uint32_t u32(int c) const { return static_cast<std::uint32_t>(i64(c)); }
  std::int32_t i32(int c) const { return static_cast<std::int32_t>(i64(c)); }
};

// Every visited row passes this before it is decoded: it reads columns [0, id_col] into `row`.
// Columns [first_int, id_col) hold the integers the writer binds (before them: string ids) and
// id_col the row id; a non-integer there, or a negative time, is no tracer's doing, so it is one
// sentence naming file, table, record and column. A row whose times cannot be placed on the
// timeline (see SkippedRecords) returns false and is counted.
bool usable_row(const Stmt& q, const std::filesystem::path& file, Table table, int first_int,
                int id_col, int start_col, SkippedRecords& skipped, Row& row) {
  sqlite3_stmt* st = q.get();
  int bad_col = -1, bad_type = SQLITE_INTEGER;
  for (int c = 0; c <= id_col; ++c) {
    sqlite3_value* value = sqlite3_column_value(st, c);
    row.v[static_cast<std::size_t>(c)] = sqlite3_value_int64(value);
    if (c >= first_int && c < id_col && bad_col < 0) {
      const int type = sqlite3_value_type(value);
      if (type != SQLITE_INTEGER) bad_col = c, bad_type = type;
    }
  }
  const std::int64_t id = row.i64(id_col);
  if (bad_col >= 0) {
    const char* found = bad_type == SQLITE_NULL    ? "no value"
                        : bad_type == SQLITE_FLOAT ? "a real number"
                        : bad_type == SQLITE_TEXT  ? "text"
                                                   : "a blob";
    throw Error(fmt::format(
        "trace file {}: {} record {} has {} in column {} where ktune profile writes an integer; "
        "the file was edited or damaged, so re-record it with ktune profile.",
        file.string(), kTableNames[table], id, found, sqlite3_column_name(st, bad_col)));
  }
  const std::int64_t start = row.i64(start_col), end = row.i64(start_col + 1);
  for (int c : {start_col, start_col + 1})
    if (row.i64(c) < 0)
      throw Error(fmt::format(
          "trace file {}: {} record {} has a negative {} ({}); the file was edited or damaged, "
          "so re-record it with ktune profile.",
          file.string(), kTableNames[table], id, sqlite3_column_name(st, c), row.i64(c)));
  if (start > 0 && end >= start) return true;
  if (skipped.count++ == 0)
    skipped.first =
        fmt::format("{} record {} ({})", kTableNames[table], id,
                    start == 0 ? std::string("start_ns 0: CUPTI collected no timestamp")
                               : fmt::format("end_ns {} is before start_ns {}", end, start));
  return false;
}

}  // namespace

struct KtraceReader::Impl {
  Db db;
  TraceMetadata metadata;
  std::array<SkippedRecords, kTables> skipped;  // by the latest visit of each table
  bool has_counters = false;                    // version 1 had no counters table
  bool has_gemm_calls = false;                  // versions 1 and 2 had no gemm_calls table
  // Interned strings, each read once: a trace has few distinct names and millions of rows that
  // point at them, which a visit used to look up in SQL, row by row. Node-based, so a reference
  // into it stays valid while the map grows.
  Stmt string_by_id;
  std::unordered_map<std::int64_t, std::string> strings;

  explicit Impl(const std::filesystem::path& path) : db(open_for_reading(path)) {
    metadata = read_metadata(db);
    Stmt t(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='counters'");
    has_counters = t.step();
    Stmt g(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name='gemm_calls'");
    has_gemm_calls = g.step();
    string_by_id = Stmt(db, "SELECT value FROM strings WHERE id=?");
  }

  // The string `id` points at; "" when there is none (as SQL's lookup gave before: a NULL or
  // dangling id).
  const std::string& string(std::int64_t id) {
    auto it = strings.find(id);
    if (it != strings.end()) return it->second;
    sqlite3_stmt* st = string_by_id.get();
    sqlite3_bind_int64(st, 1, id);
    std::string value = string_by_id.step() ? string_by_id.text(0) : std::string();
    sqlite3_reset(st);
    return strings.emplace(id, std::move(value)).first->second;
  }
};

KtraceReader::KtraceReader(const std::filesystem::path& path)
    : impl_(std::make_unique<Impl>(path)) {}
KtraceReader::~KtraceReader() = default;
KtraceReader::KtraceReader(KtraceReader&&) noexcept = default;
KtraceReader& KtraceReader::operator=(KtraceReader&&) noexcept = default;

const TraceMetadata& KtraceReader::metadata() const {
  return impl_->metadata;
}

TraceCounts KtraceReader::counts() const {
  TraceCounts c;
  c.metadata = impl_->metadata;
  auto count = [&](const char* table) {
    Stmt q(impl_->db, fmt::format("SELECT COUNT(*) FROM {}", table).c_str());
    return q.step() ? q.u64(0) : 0;
  };
  c.kernels = count("kernels");
  c.memcpys = count("memcpys");
  c.memsets = count("memsets");
  c.api_calls = count("api_calls");
  c.syncs = count("syncs");
  c.nvtx_ranges = count("nvtx_ranges");
  c.overheads = count("overheads");
  if (impl_->has_counters) c.counters = count("counters");
  if (impl_->has_gemm_calls) c.gemm_calls = count("gemm_calls");
  return c;
}

std::optional<std::uint64_t> KtraceReader::origin_ns() const {
  Stmt q(impl_->db,
         fmt::format("SELECT MIN(t) FROM (SELECT MIN(start_ns) AS t FROM kernels WHERE {0} "
                     "UNION ALL SELECT MIN(start_ns) FROM memcpys WHERE {0} "
                     "UNION ALL SELECT MIN(start_ns) FROM memsets WHERE {0} "
                     "UNION ALL SELECT MIN(start_ns) FROM api_calls WHERE {0} "
                     "UNION ALL SELECT MIN(start_ns) FROM syncs WHERE {0} "
                     "UNION ALL SELECT MIN(start_ns) FROM nvtx_ranges WHERE {0})",
                     kUsableTimes)
             .c_str());
  std::optional<std::uint64_t> origin;
  if (q.step() && sqlite3_column_type(q.get(), 0) != SQLITE_NULL) origin = q.u64(0);
  return origin;
}

void KtraceReader::kernels(const Visitor<KernelRecord>& visit, VisitOrder order,
                           KernelColumns columns) const {
  const bool all = columns == KernelColumns::all;
  Stmt q(impl_->db,
         fmt::format("SELECT name_id, demangled_id, start_ns, end_ns, device_id, grid_x, grid_y, "
                     "grid_z, block_x, block_y, block_z, {}id FROM kernels{}",
                     all ? "queued_ns, submitted_ns, context_id, stream_id, correlation_id, "
                           "cluster_x, cluster_y, cluster_z, registers_per_thread, "
                           "static_shared_bytes, dynamic_shared_bytes, "
                           "local_memory_per_thread_bytes, local_memory_total_bytes, graph_id, "
                           "graph_node_id, "
                         : "",
                     order == VisitOrder::by_start ? " ORDER BY start_ns, id" : "")
             .c_str());
  const int id_col = all ? 26 : 11;
  KernelRecord r;  // with KernelColumns::launch the other fields stay 0
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kKernels, 2, id_col, 2, skipped, row)) continue;
    r.name = impl_->string(row.i64(0));
    r.demangled_name = impl_->string(row.i64(1));
    r.start_ns = row.u64(2);
    r.end_ns = row.u64(3);
    r.device_id = row.u32(4);
    r.grid_x = row.i32(5);
    r.grid_y = row.i32(6);
    r.grid_z = row.i32(7);
    r.block_x = row.i32(8);
    r.block_y = row.i32(9);
    r.block_z = row.i32(10);
    if (all) {
      r.queued_ns = row.u64(11);
      r.submitted_ns = row.u64(12);
      r.context_id = row.u32(13);
      r.stream_id = row.u32(14);
      r.correlation_id = row.u32(15);
      r.cluster_x = row.u32(16);
      r.cluster_y = row.u32(17);
      r.cluster_z = row.u32(18);
      r.registers_per_thread = row.u32(19);
      r.static_shared_bytes = row.i32(20);
      r.dynamic_shared_bytes = row.i32(21);
      r.local_memory_per_thread_bytes = row.u32(22);
      r.local_memory_total_bytes = row.u64(23);
      r.graph_id = row.u32(24);
      r.graph_node_id = row.u64(25);
    }
    visit(r);
  }
  impl_->skipped[kKernels] = std::move(skipped);
}

void KtraceReader::memcpys(const Visitor<MemcpyRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT kind_id, src_memory_id, dst_memory_id, bytes, start_ns, end_ns, device_id, "
         "context_id, stream_id, correlation_id, graph_id, graph_node_id, id FROM memcpys ORDER "
         "BY start_ns, id");
  MemcpyRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kMemcpys, 3, 12, 4, skipped, row)) continue;
    r.kind = impl_->string(row.i64(0));
    r.src_memory = impl_->string(row.i64(1));
    r.dst_memory = impl_->string(row.i64(2));
    r.bytes = row.u64(3);
    r.start_ns = row.u64(4);
    r.end_ns = row.u64(5);
    r.device_id = row.u32(6);
    r.context_id = row.u32(7);
    r.stream_id = row.u32(8);
    r.correlation_id = row.u32(9);
    r.graph_id = row.u32(10);
    r.graph_node_id = row.u64(11);
    visit(r);
  }
  impl_->skipped[kMemcpys] = std::move(skipped);
}

void KtraceReader::memsets(const Visitor<MemsetRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT bytes, value, start_ns, end_ns, device_id, context_id, stream_id, "
         "correlation_id, graph_id, graph_node_id, id FROM memsets ORDER BY start_ns, id");
  MemsetRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kMemsets, 0, 10, 2, skipped, row)) continue;
    r.bytes = row.u64(0);
    r.value = row.u32(1);
    r.start_ns = row.u64(2);
    r.end_ns = row.u64(3);
    r.device_id = row.u32(4);
    r.context_id = row.u32(5);
    r.stream_id = row.u32(6);
    r.correlation_id = row.u32(7);
    r.graph_id = row.u32(8);
    r.graph_node_id = row.u64(9);
    visit(r);
  }
  impl_->skipped[kMemsets] = std::move(skipped);
}

void KtraceReader::api_calls(const Visitor<ApiRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT api_id, name_id, callback_id, start_ns, end_ns, process_id, thread_id, "
         "correlation_id, return_value, id FROM api_calls ORDER BY start_ns, id");
  ApiRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kApiCalls, 2, 9, 3, skipped, row)) continue;
    r.api = impl_->string(row.i64(0));
    r.name = impl_->string(row.i64(1));
    r.callback_id = row.u32(2);
    r.start_ns = row.u64(3);
    r.end_ns = row.u64(4);
    r.process_id = row.u32(5);
    r.thread_id = row.u32(6);
    r.correlation_id = row.u32(7);
    r.return_value = row.u32(8);
    visit(r);
  }
  impl_->skipped[kApiCalls] = std::move(skipped);
}

void KtraceReader::syncs(const Visitor<SyncRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT type_id, start_ns, end_ns, context_id, stream_id, cuda_event_id, "
         "correlation_id, id FROM syncs ORDER BY start_ns, id");
  SyncRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kSyncs, 1, 7, 1, skipped, row)) continue;
    r.type = impl_->string(row.i64(0));
    r.start_ns = row.u64(1);
    r.end_ns = row.u64(2);
    r.context_id = row.u32(3);
    r.stream_id = row.u32(4);
    r.cuda_event_id = row.u32(5);
    r.correlation_id = row.u32(6);
    visit(r);
  }
  impl_->skipped[kSyncs] = std::move(skipped);
}

void KtraceReader::nvtx_ranges(const Visitor<NvtxRangeRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT name_id, domain_id, start_ns, end_ns, process_id, thread_id, id FROM "
         "nvtx_ranges ORDER BY start_ns, id");
  NvtxRangeRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kNvtxRanges, 2, 6, 2, skipped, row)) continue;
    r.name = impl_->string(row.i64(0));
    r.domain = impl_->string(row.i64(1));
    r.start_ns = row.u64(2);
    r.end_ns = row.u64(3);
    r.process_id = row.u32(4);
    r.thread_id = row.u32(5);
    visit(r);
  }
  impl_->skipped[kNvtxRanges] = std::move(skipped);
}

void KtraceReader::overheads(const Visitor<OverheadRecord>& visit) const {
  Stmt q(impl_->db,
         "SELECT kind_id, start_ns, end_ns, thread_id, correlation_id, id FROM overheads ORDER "
         "BY start_ns, id");
  OverheadRecord r;
  SkippedRecords skipped;
  Row row;
  while (q.step()) {
    if (!usable_row(q, impl_->db.path(), kOverheads, 1, 5, 1, skipped, row)) continue;
    r.kind = impl_->string(row.i64(0));
    r.start_ns = row.u64(1);
    r.end_ns = row.u64(2);
    r.thread_id = row.u64(3);
    r.correlation_id = row.u32(4);
    visit(r);
  }
  impl_->skipped[kOverheads] = std::move(skipped);
}

void KtraceReader::drops(const Visitor<DropRecord>& visit) const {
  Stmt q(impl_->db, "SELECT context_id, stream_id, count FROM drops ORDER BY id");
  DropRecord r;
  while (q.step()) {
    r.context_id = q.u32(0);
    r.stream_id = q.u32(1);
    r.count = q.u64(2);
    visit(r);
  }
}

void KtraceReader::counters(const Visitor<CounterRecord>& visit) const {
  if (!impl_->has_counters) return;
  Stmt q(impl_->db,
         "SELECT device_id, correlation_id, metric_id, value, id FROM counters ORDER BY "
         "correlation_id, id");
  CounterRecord r;
  while (q.step()) {
    sqlite3_stmt* st = q.get();
    const int value_type = sqlite3_column_type(st, 3);
    const char* bad = nullptr;
    for (int c : {0, 1})
      if (sqlite3_column_type(st, c) != SQLITE_INTEGER || q.i64(c) < 0)
        bad = sqlite3_column_name(st, c);
    if (value_type != SQLITE_FLOAT && value_type != SQLITE_INTEGER) bad = "value";
    if (bad)
      throw Error(fmt::format(
          "trace file {}: counters record {} has no usable {} where ktune profile writes a "
          "number; the file was edited or damaged, so re-record it with ktune profile.",
          impl_->db.path().string(), q.i64(4), bad));
    r.device_id = q.u32(0);
    r.correlation_id = q.u32(1);
    r.metric = impl_->string(q.i64(2));
    r.value = q.f64(3);
    visit(r);
  }
}

void KtraceReader::gemm_calls(const Visitor<GemmCallRecord>& visit) const {
  if (!impl_->has_gemm_calls) return;
  Stmt q(impl_->db,
         "SELECT m, n, k, batch, lda, ldb, ldc, ldd, algo_id, splits, calls, a_type_id, "
         "b_type_id, c_type_id, d_type_id, compute_type_id, scale_type_id, transa_id, transb_id, "
         "epilogue_id, tile_id, stages_id, reduction_id, id FROM gemm_calls ORDER BY id");
  constexpr int kIntegers = 11, kId = 23;
  GemmCallRecord r;
  while (q.step()) {
    sqlite3_stmt* st = q.get();
    for (int c = 0; c < kId; ++c) {
      // algo_id is -1 where the log named no algorithm; every other number is a count or size.
      const bool ok = sqlite3_column_type(st, c) == SQLITE_INTEGER &&
                      (c >= kIntegers || q.i64(c) >= (c == 8 ? -1 : 0));
      if (!ok)
        throw Error(fmt::format(
            "trace file {}: gemm_calls record {} has no usable {} where ktune profile writes a "
            "non-negative integer; the file was edited or damaged, so re-record it with ktune "
            "profile.",
            impl_->db.path().string(), q.i64(kId), sqlite3_column_name(st, c)));
    }
    r.m = q.i64(0);
    r.n = q.i64(1);
    r.k = q.i64(2);
    r.batch = q.i64(3);
    r.lda = q.i64(4);
    r.ldb = q.i64(5);
    r.ldc = q.i64(6);
    r.ldd = q.i64(7);
    r.algo_id = q.i64(8);
    r.splits = q.i64(9);
    r.calls = q.u64(10);
    r.a_type = impl_->string(q.i64(11));
    r.b_type = impl_->string(q.i64(12));
    r.c_type = impl_->string(q.i64(13));
    r.d_type = impl_->string(q.i64(14));
    r.compute_type = impl_->string(q.i64(15));
    r.scale_type = impl_->string(q.i64(16));
    r.transa = impl_->string(q.i64(17));
    r.transb = impl_->string(q.i64(18));
    r.epilogue = impl_->string(q.i64(19));
    r.tile = impl_->string(q.i64(20));
    r.stages = impl_->string(q.i64(21));
    r.reduction = impl_->string(q.i64(22));
    visit(r);
  }
}

SkippedRecords KtraceReader::skipped() const {
  SkippedRecords all;
  for (const SkippedRecords& t : impl_->skipped) {
    if (all.count == 0) all.first = t.first;
    all.count += t.count;
  }
  return all;
}

Trace read_ktrace(const std::filesystem::path& path) {
  const KtraceReader reader(path);
  Trace t;
  t.metadata = reader.metadata();
  reader.kernels([&](const KernelRecord& r) { t.kernels.push_back(r); });
  reader.memcpys([&](const MemcpyRecord& r) { t.memcpys.push_back(r); });
  reader.memsets([&](const MemsetRecord& r) { t.memsets.push_back(r); });
  reader.api_calls([&](const ApiRecord& r) { t.api_calls.push_back(r); });
  reader.syncs([&](const SyncRecord& r) { t.syncs.push_back(r); });
  reader.nvtx_ranges([&](const NvtxRangeRecord& r) { t.nvtx_ranges.push_back(r); });
  reader.overheads([&](const OverheadRecord& r) { t.overheads.push_back(r); });
  reader.drops([&](const DropRecord& r) { t.drops.push_back(r); });
  reader.counters([&](const CounterRecord& r) { t.counters.push_back(r); });
  reader.gemm_calls([&](const GemmCallRecord& r) { t.gemm_calls.push_back(r); });
  return t;
}

void append_gemm_calls(const std::filesystem::path& path,
                       const std::vector<GemmCallRecord>& calls) {
  const Db db = open_for_reading(path);
  db.exec("BEGIN");
  db.exec(kGemmCallsSql);
  Stmt insert(db, kInsertGemmCallSql);
  Stmt add_string(db, "INSERT OR IGNORE INTO strings(value) VALUES(?)");
  Stmt string_id(db, "SELECT id FROM strings WHERE value=?");
  std::unordered_map<std::string, std::int64_t> ids;
  auto intern = [&](const std::string& s) {
    if (auto it = ids.find(s); it != ids.end()) return it->second;
    add_string.run(s);
    sqlite3_bind_text(string_id.get(), 1, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
    const std::int64_t id = string_id.step() ? string_id.i64(0) : 0;
    sqlite3_reset(string_id.get());
    ids.emplace(s, id);
    return id;
  };
  for (const GemmCallRecord& r : calls) insert_gemm_call(insert, r, intern);
  db.exec("COMMIT");
}

TraceCounts read_ktrace_counts(const std::filesystem::path& path) {
  return KtraceReader(path).counts();
}

}  // namespace ktune::trace
