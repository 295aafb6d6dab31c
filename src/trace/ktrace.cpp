#include "ktune/trace/ktrace.hpp"

#include <cxxabi.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/error.hpp"
#include "ktune/core/json.hpp"
#include "ktune/store/sqlite.hpp"

namespace ktune::trace {
namespace {

using store::sqlite::Connection;
using store::sqlite::Statement;

// The application_id pragma marks the file as a .ktrace ("ktrc"), so a reader can tell a ktrace
// from any other SQLite database before looking at tables.
constexpr int kApplicationId = 0x6b747263;

// --------------------------------------------------------------------------- the record kinds
// One description per record kind: its table, and per column the record member it holds. The
// schema, the INSERT, the writer and the reader are all made from these, so a kind is spelled
// once. Column order is the on-disk order (a file written before these descriptions has the
// same tables, column for column, less the columns added since its version). Strings are
// interned: their column holds a strings.id.

template <class R>
using Member = std::variant<std::uint64_t R::*, std::int64_t R::*, std::uint32_t R::*,
                            std::int32_t R::*, double R::*, std::string R::*>;

template <class M>
struct MemberType;
template <class R, class T>
struct MemberType<T R::*> {
  using type = T;
};
template <class M>
using member_type = typename MemberType<M>::type;

constexpr std::int64_t kAnyInteger = std::numeric_limits<std::int64_t>::min();

template <class R>
struct Column {
  const char* name;
  Member<R> member;
  // The least value a tracer writes (times, counts: 0); a smaller one is a damaged file.
  std::int64_t min = kAnyInteger;
  // The schema version that added the column to an existing table; an older file reads it as 0.
  int since_version = 1;
};

template <class R>
struct RecordKind {
  std::size_t index;  // into kKinds
  const char* table;
  std::vector<R> Trace::*records;
  std::uint64_t TraceCounts::*count;  // nullptr: drops, which count what was lost, not records
  int since_version;                  // an older file has no such table and reads as having none
  const char* order;                  // a visit's ORDER BY
  // Its start times place the trace on the timeline (origin_ns). A kind with start_ns and
  // end_ns columns skips and counts rows whose times cannot be placed (SkippedRecords).
  bool sets_origin;
  std::vector<Column<R>> columns;
};

// The columns a kernel visit with KernelColumns::launch reads.
constexpr std::string_view kLaunchColumns[] = {"name_id",   "demangled_id", "start_ns", "end_ns",
                                               "device_id", "grid_x",       "grid_y",   "grid_z",
                                               "block_x",   "block_y",      "block_z"};

constexpr const char* kByStart = "start_ns, id";

// The writer interns `name` before `demangled_name` (KtraceWriter::add), so they stay in this
// order.
const RecordKind<KernelRecord> kKernels{
    0,
    "kernels",
    &Trace::kernels,
    &TraceCounts::kernels,
    1,
    kByStart,
    true,
    {{"name_id", &KernelRecord::name},
     {"demangled_id", &KernelRecord::demangled_name},
     {"queued_ns", &KernelRecord::queued_ns},
     {"submitted_ns", &KernelRecord::submitted_ns},
     {"start_ns", &KernelRecord::start_ns, 0},
     {"end_ns", &KernelRecord::end_ns, 0},
     {"device_id", &KernelRecord::device_id},
     {"context_id", &KernelRecord::context_id},
     {"stream_id", &KernelRecord::stream_id},
     {"correlation_id", &KernelRecord::correlation_id},
     {"grid_x", &KernelRecord::grid_x},
     {"grid_y", &KernelRecord::grid_y},
     {"grid_z", &KernelRecord::grid_z},
     {"block_x", &KernelRecord::block_x},
     {"block_y", &KernelRecord::block_y},
     {"block_z", &KernelRecord::block_z},
     {"cluster_x", &KernelRecord::cluster_x},
     {"cluster_y", &KernelRecord::cluster_y},
     {"cluster_z", &KernelRecord::cluster_z},
     {"registers_per_thread", &KernelRecord::registers_per_thread},
     {"static_shared_bytes", &KernelRecord::static_shared_bytes},
     {"dynamic_shared_bytes", &KernelRecord::dynamic_shared_bytes},
     {"local_memory_per_thread_bytes", &KernelRecord::local_memory_per_thread_bytes},
     {"local_memory_total_bytes", &KernelRecord::local_memory_total_bytes},
     {"graph_id", &KernelRecord::graph_id},
     {"graph_node_id", &KernelRecord::graph_node_id}}};

const RecordKind<MemcpyRecord> kMemcpys{1,
                                        "memcpys",
                                        &Trace::memcpys,
                                        &TraceCounts::memcpys,
                                        1,
                                        kByStart,
                                        true,
                                        {{"kind_id", &MemcpyRecord::kind},
                                         {"src_memory_id", &MemcpyRecord::src_memory},
                                         {"dst_memory_id", &MemcpyRecord::dst_memory},
                                         {"bytes", &MemcpyRecord::bytes},
                                         {"start_ns", &MemcpyRecord::start_ns, 0},
                                         {"end_ns", &MemcpyRecord::end_ns, 0},
                                         {"device_id", &MemcpyRecord::device_id},
                                         {"context_id", &MemcpyRecord::context_id},
                                         {"stream_id", &MemcpyRecord::stream_id},
                                         {"correlation_id", &MemcpyRecord::correlation_id},
                                         {"graph_id", &MemcpyRecord::graph_id},
                                         {"graph_node_id", &MemcpyRecord::graph_node_id}}};

const RecordKind<MemsetRecord> kMemsets{2,
                                        "memsets",
                                        &Trace::memsets,
                                        &TraceCounts::memsets,
                                        1,
                                        kByStart,
                                        true,
                                        {{"bytes", &MemsetRecord::bytes},
                                         {"value", &MemsetRecord::value},
                                         {"start_ns", &MemsetRecord::start_ns, 0},
                                         {"end_ns", &MemsetRecord::end_ns, 0},
                                         {"device_id", &MemsetRecord::device_id},
                                         {"context_id", &MemsetRecord::context_id},
                                         {"stream_id", &MemsetRecord::stream_id},
                                         {"correlation_id", &MemsetRecord::correlation_id},
                                         {"graph_id", &MemsetRecord::graph_id},
                                         {"graph_node_id", &MemsetRecord::graph_node_id}}};

const RecordKind<ApiRecord> kApiCalls{3,
                                      "api_calls",
                                      &Trace::api_calls,
                                      &TraceCounts::api_calls,
                                      1,
                                      kByStart,
                                      true,
                                      {{"api_id", &ApiRecord::api},
                                       {"name_id", &ApiRecord::name},
                                       {"callback_id", &ApiRecord::callback_id},
                                       {"start_ns", &ApiRecord::start_ns, 0},
                                       {"end_ns", &ApiRecord::end_ns, 0},
                                       {"process_id", &ApiRecord::process_id},
                                       {"thread_id", &ApiRecord::thread_id},
                                       {"correlation_id", &ApiRecord::correlation_id},
                                       {"return_value", &ApiRecord::return_value}}};

const RecordKind<SyncRecord> kSyncs{4,
                                    "syncs",
                                    &Trace::syncs,
                                    &TraceCounts::syncs,
                                    1,
                                    kByStart,
                                    true,
                                    {{"type_id", &SyncRecord::type},
                                     {"start_ns", &SyncRecord::start_ns, 0},
                                     {"end_ns", &SyncRecord::end_ns, 0},
                                     {"context_id", &SyncRecord::context_id},
                                     {"stream_id", &SyncRecord::stream_id},
                                     {"cuda_event_id", &SyncRecord::cuda_event_id},
                                     {"correlation_id", &SyncRecord::correlation_id}}};

const RecordKind<NvtxRangeRecord> kNvtxRanges{5,
                                              "nvtx_ranges",
                                              &Trace::nvtx_ranges,
                                              &TraceCounts::nvtx_ranges,
                                              1,
                                              kByStart,
                                              true,
                                              {{"name_id", &NvtxRangeRecord::name},
                                               {"domain_id", &NvtxRangeRecord::domain},
                                               {"start_ns", &NvtxRangeRecord::start_ns, 0},
                                               {"end_ns", &NvtxRangeRecord::end_ns, 0},
                                               {"process_id", &NvtxRangeRecord::process_id},
                                               {"thread_id", &NvtxRangeRecord::thread_id}}};

// CUPTI's and the driver's own work: on the timeline, but not where the program's starts.
const RecordKind<OverheadRecord> kOverheads{6,
                                            "overheads",
                                            &Trace::overheads,
                                            &TraceCounts::overheads,
                                            1,
                                            kByStart,
                                            false,
                                            {{"kind_id", &OverheadRecord::kind},
                                             {"start_ns", &OverheadRecord::start_ns, 0},
                                             {"end_ns", &OverheadRecord::end_ns, 0},
                                             {"thread_id", &OverheadRecord::thread_id},
                                             {"correlation_id", &OverheadRecord::correlation_id}}};

const RecordKind<DropRecord> kDrops{7,
                                    "drops",
                                    &Trace::drops,
                                    nullptr,
                                    1,
                                    "id",
                                    false,
                                    {{"context_id", &DropRecord::context_id},
                                     {"stream_id", &DropRecord::stream_id},
                                     {"count", &DropRecord::count}}};

// By correlation id, so one launch's metrics arrive together.
const RecordKind<CounterRecord> kCounters{8,
                                          "counters",
                                          &Trace::counters,
                                          &TraceCounts::counters,
                                          2,
                                          "correlation_id, id",
                                          false,
                                          {{"device_id", &CounterRecord::device_id, 0},
                                           {"correlation_id", &CounterRecord::correlation_id, 0},
                                           {"metric_id", &CounterRecord::metric},
                                           {"value", &CounterRecord::value}}};

// algo_id is -1 where cuBLASLt's log named no algorithm; every other number is a count or size.
const RecordKind<GemmCallRecord> kGemmCalls{9,
                                            "gemm_calls",
                                            &Trace::gemm_calls,
                                            &TraceCounts::gemm_calls,
                                            3,
                                            "id",
                                            false,
                                            {{"m", &GemmCallRecord::m, 0},
                                             {"n", &GemmCallRecord::n, 0},
                                             {"k", &GemmCallRecord::k, 0},
                                             {"batch", &GemmCallRecord::batch, 0},
                                             {"lda", &GemmCallRecord::lda, 0},
                                             {"ldb", &GemmCallRecord::ldb, 0},
                                             {"ldc", &GemmCallRecord::ldc, 0},
                                             {"ldd", &GemmCallRecord::ldd, 0},
                                             {"stride_a", &GemmCallRecord::stride_a, 0, 4},
                                             {"stride_b", &GemmCallRecord::stride_b, 0, 4},
                                             {"stride_c", &GemmCallRecord::stride_c, 0, 4},
                                             {"stride_d", &GemmCallRecord::stride_d, 0, 4},
                                             {"a_type_id", &GemmCallRecord::a_type},
                                             {"b_type_id", &GemmCallRecord::b_type},
                                             {"c_type_id", &GemmCallRecord::c_type},
                                             {"d_type_id", &GemmCallRecord::d_type},
                                             {"compute_type_id", &GemmCallRecord::compute_type},
                                             {"scale_type_id", &GemmCallRecord::scale_type},
                                             {"transa_id", &GemmCallRecord::transa},
                                             {"transb_id", &GemmCallRecord::transb},
                                             {"epilogue_id", &GemmCallRecord::epilogue},
                                             {"algo_id", &GemmCallRecord::algo_id, -1},
                                             {"tile_id", &GemmCallRecord::tile},
                                             {"stages_id", &GemmCallRecord::stages},
                                             {"splits", &GemmCallRecord::splits, 0},
                                             {"reduction_id", &GemmCallRecord::reduction},
                                             {"calls", &GemmCallRecord::calls, 0},
                                             {"entry_id", &GemmCallRecord::entry, kAnyInteger, 6},
                                             {"route_id", &GemmCallRecord::route, kAnyInteger, 6}}};

const RecordKind<GemmEventRecord> kGemmEvents{10,
                                              "gemm_events",
                                              &Trace::gemm_events,
                                              &TraceCounts::gemm_events,
                                              4,
                                              "time_ns, id",
                                              false,
                                              {{"process_id", &GemmEventRecord::process_id, 0},
                                               {"thread_id", &GemmEventRecord::thread_id, 0},
                                               {"time_ns", &GemmEventRecord::time_ns, 0},
                                               {"call", &GemmEventRecord::call, 0}}};

// Every kind, in the order a trace's tables are created and a batch is written.
const auto kKinds = std::tie(kKernels, kMemcpys, kMemsets, kApiCalls, kSyncs, kNvtxRanges,
                             kOverheads, kDrops, kCounters, kGemmCalls, kGemmEvents);
constexpr std::size_t kKindCount = std::tuple_size_v<std::remove_const_t<decltype(kKinds)>>;

template <class F>
void for_each_kind(F&& f) {
  std::apply([&](const auto&... kind) { (f(kind), ...); }, kKinds);
}

// A string member of `r`. Out of line on purpose: the generic code below is compiled for every
// member type of every kind, and for a kind with no string member (drops) GCC inlines a string
// access it proves out of bounds and warns, though no column of that kind ever takes that path.
template <class R>
[[gnu::noinline]] std::string& text_member(R& r, std::string R::*member) {
  return r.*member;
}
template <class R>
[[gnu::noinline]] const std::string& text_member(const R& r, std::string R::*member) {
  return r.*member;
}
template <class R>
bool is_real(const Column<R>& c) {
  return std::holds_alternative<double R::*>(c.member);
}

template <class R>
std::string create_table_sql(const RecordKind<R>& kind, bool if_not_exists = false) {
  std::string sql = fmt::format("CREATE TABLE {}{}(id INTEGER PRIMARY KEY",
                                if_not_exists ? "IF NOT EXISTS " : "", kind.table);
  for (const Column<R>& c : kind.columns)
    sql += fmt::format(", {} {}", c.name, is_real(c) ? "REAL" : "INTEGER");
  return sql + ");\n";
}

template <class R>
std::string insert_sql(const RecordKind<R>& kind) {
  std::string names, values;
  for (const Column<R>& c : kind.columns) {
    names += names.empty() ? "" : ", ";
    names += c.name;
    values += values.empty() ? "?" : ",?";
  }
  return fmt::format("INSERT INTO {}({}) VALUES({})", kind.table, names, values);
}

// Binds `r` as one row of `kind` and runs `insert`. text_id(member, value) gives the strings.id
// of a string member's value.
template <class R, class TextId>
void insert_row(Statement& insert, const RecordKind<R>& kind, const R& r, TextId&& text_id) {
  int i = 1;
  for (const Column<R>& c : kind.columns) {
    std::visit(
        [&](auto member) {
          using T = member_type<decltype(member)>;
          if constexpr (std::is_same_v<T, std::string>)
            insert.bind(i, text_id(member, text_member(r, member)));
          else if constexpr (std::is_same_v<T, double>)
            insert.bind(i, r.*member);
          else  // unsigned 64-bit values (timestamps, ids) are stored as their signed bit pattern
            insert.bind(i, static_cast<std::int64_t>(r.*member));
        },
        c.member);
    ++i;
  }
  insert.run();
}

// SQLite's failures, worded for a trace file.
std::string cannot_open(const std::filesystem::path& path, std::string_view msg) {
  return fmt::format("cannot open trace file {} ({}); check the path and permissions.",
                     path.string(), msg);
}
Connection open_trace(const std::filesystem::path& path, int flags) {
  return Connection(
      path.string(), flags, [&](std::string_view msg, int) { return cannot_open(path, msg); },
      [file = path.string()](std::string_view msg, int) {
        return fmt::format(
            "trace file {}: SQLite error: {}; check free disk space and that the file is a "
            ".ktrace written by ktune profile.",
            file, msg);
      });
}

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

nlohmann::json ceilings_json(const std::vector<TraceCeilings>& all) {
  nlohmann::json out = nlohmann::json::array();
  for (const TraceCeilings& c : all)
    out.push_back({{"device_uuid", c.device_uuid},
                   {"dram_bytes_per_s", c.dram_bytes_per_s},
                   {"fp32_flop_per_s", c.fp32_flop_per_s},
                   {"bf16_flop_per_s", c.bf16_flop_per_s},
                   {"fp16_flop_per_s", c.fp16_flop_per_s},
                   {"kind", c.kind},
                   {"source", c.source}});
  return out;
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
          {"tracer_version", m.tracer_version},
          {"ceilings", ceilings_json(m.ceilings)}};
}

}  // namespace

std::size_t Trace::record_count() const {
  std::size_t n = 0;
  for_each_kind([&](const auto& kind) {
    if (kind.count) n += (this->*kind.records).size();
  });
  return n;
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
  Connection db;
  Statement insert_string, metadata;
  std::array<Statement, kKindCount> inserts;  // by RecordKind::index
  std::unordered_map<std::string, std::int64_t> strings;
  std::unordered_map<std::int64_t, std::int64_t> demangled;  // name id -> demangled id
  bool in_transaction = false;

  explicit Impl(const std::filesystem::path& path)
      : db(open_trace(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) {}

  void begin() {
    if (!in_transaction) db.exec("BEGIN");
    in_transaction = true;
  }
  std::int64_t intern(const std::string& s) {
    auto it = strings.find(s);
    if (it != strings.end()) return it->second;
    insert_string.bind(1, std::string_view(s));
    insert_string.run();
    const std::int64_t id = sqlite3_last_insert_rowid(db.get());
    strings.emplace(s, id);
    return id;
  }
  template <class R>
  void insert(const RecordKind<R>& kind, const R& r) {
    begin();
    insert_row(inserts[kind.index], kind, r,
               [&](std::string R::*, const std::string& s) { return intern(s); });
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
                      kKtraceSchemaVersion));
  db.exec("BEGIN");
  std::string schema =
      "CREATE TABLE metadata(key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
      "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL UNIQUE);\n";
  for_each_kind([&](const auto& kind) { schema += create_table_sql(kind); });
  db.exec(schema);
  impl_->insert_string =
      Statement(db, "INSERT INTO strings(value) VALUES(?)", SQLITE_PREPARE_PERSISTENT);
  for_each_kind([&](const auto& kind) {
    impl_->inserts[kind.index] = Statement(db, insert_sql(kind), SQLITE_PREPARE_PERSISTENT);
  });
  impl_->metadata = Statement(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES(?,?)",
                              SQLITE_PREPARE_PERSISTENT);
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
  for (const auto& [key, value] : metadata_rows(metadata)) {
    impl_->metadata.bind(1, std::string_view(key));
    impl_->metadata.bind(
        2, std::string_view(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
    impl_->metadata.run();
  }
}

void KtraceWriter::commit() {
  if (!impl_ || !impl_->in_transaction) return;
  impl_->in_transaction = false;
  impl_->db.exec("COMMIT");
}

void KtraceWriter::add(const KernelRecord& r) {
  impl_->begin();
  // The demangled name is the writer's work: demangled once per distinct name (the columns
  // come in the order name, demangled_name).
  std::int64_t name_id = 0;
  insert_row(impl_->inserts[kKernels.index], kKernels, r,
             [&](std::string KernelRecord::*member, const std::string& s) -> std::int64_t {
               if (member == &KernelRecord::name) return name_id = impl_->intern(s);
               if (member != &KernelRecord::demangled_name || !s.empty()) return impl_->intern(s);
               auto it = impl_->demangled.find(name_id);
               if (it == impl_->demangled.end())
                 it = impl_->demangled.emplace(name_id, impl_->intern(demangle(r.name))).first;
               return it->second;
             });
  ++records_written_;
}

void KtraceWriter::add(const MemcpyRecord& r) {
  impl_->insert(kMemcpys, r);
  ++records_written_;
}

void KtraceWriter::add(const MemsetRecord& r) {
  impl_->insert(kMemsets, r);
  ++records_written_;
}

void KtraceWriter::add(const ApiRecord& r) {
  impl_->insert(kApiCalls, r);
  ++records_written_;
}

void KtraceWriter::add(const SyncRecord& r) {
  impl_->insert(kSyncs, r);
  ++records_written_;
}

void KtraceWriter::add(const NvtxRangeRecord& r) {
  impl_->insert(kNvtxRanges, r);
  ++records_written_;
}

void KtraceWriter::add(const OverheadRecord& r) {
  impl_->insert(kOverheads, r);
  ++records_written_;
}

void KtraceWriter::add(const DropRecord& r) {
  impl_->insert(kDrops, r);  // a drop counts lost records; it is none itself
}

void KtraceWriter::add(const CounterRecord& r) {
  impl_->insert(kCounters, r);
  ++records_written_;
}

void KtraceWriter::add(const GemmCallRecord& r) {
  impl_->insert(kGemmCalls, r);
  ++records_written_;
}

void KtraceWriter::add(const GemmEventRecord& r) {
  impl_->insert(kGemmEvents, r);
  ++records_written_;
}

void KtraceWriter::add_records(const Trace& batch) {
  for_each_kind([&](const auto& kind) {
    for (const auto& r : batch.*kind.records) add(r);
  });
}

void write_ktrace(const std::filesystem::path& path, const Trace& trace) {
  KtraceWriter writer(path, trace.metadata);
  writer.add_records(trace);
  writer.commit();
}

namespace {

// A trace is a file from elsewhere: its schema may hold what ktune's writer never makes. A view
// named like a table ran whatever query it holds on every read (a recursive one spun report,
// export and ingest for ever), and a trigger or virtual table is no trace either.
void refuse_foreign_schema(const Connection& db, const std::filesystem::path& path) {
  Statement q(db,
              "SELECT type, name FROM sqlite_master WHERE type NOT IN ('table', 'index') OR "
              "(type = 'table' AND sql LIKE 'CREATE VIRTUAL%')");
  if (q.step())
    throw Error(fmt::format(
        "trace file {} holds a {} named '{}', which ktune profile never writes; the file was "
        "edited or is not a trace, so ktune does not read it: re-record it with ktune profile.",
        path.string(), q.text(0), q.text(1)));
}

// Opens `path` and reads its application id; the sentence for a file that is not a readable
// trace says which of the ways it failed (locked by its writer, damaged or cut short, not a
// trace at all), since each has another fix.
struct TraceOpenError : Error {
  TraceOpenError(const std::string& what, int code) : Error(what), code(code) {}
  int code;  // SQLite's primary result code; SQLITE_OK when the file opened but is no trace
};

Connection open_checked(const std::filesystem::path& path, int flags, const std::string& name) {
  Connection db;
  try {
    db = Connection(
        name, flags, [&](std::string_view msg, int) { return cannot_open(path, msg); },
        [](std::string_view msg, int) { return std::string(msg); });
  } catch (const Error& e) {
    throw TraceOpenError(e.what(), SQLITE_CANTOPEN);
  }
  sqlite3_busy_timeout(db.get(), 2000);
  // Schema objects from the file can do nothing but read their own tables.
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  std::int64_t id = 0;
  int code = SQLITE_OK;
  std::string why;
  try {
    Statement app(db, "PRAGMA application_id");
    if (app.step()) id = app.i64(0);
  } catch (const Error& e) {
    code = db.last_error_code() & 0xff;
    why = e.what();
  }
  if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
    throw TraceOpenError(
        fmt::format(
            "trace file {} is locked by the process writing it ({}); wait until that ktune profile "
            "ends, or read a copy of the file.",
            path.string(), why),
        code);
  if (code == SQLITE_CORRUPT)
    throw TraceOpenError(
        fmt::format(
            "trace file {} is damaged or cut short ({}); copy it again whole from where it was "
            "recorded, or re-record it with ktune profile.",
            path.string(), why),
        code);
  if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY || code == SQLITE_IOERR ||
      code == SQLITE_PERM || code == SQLITE_AUTH)
    throw TraceOpenError(cannot_open(path, why), code);
  if (id != kApplicationId)
    throw TraceOpenError(
        fmt::format("{} is not a .ktrace file; pass a trace written by ktune profile.",
                    path.string()),
        SQLITE_OK);
  return db;
}

Connection open_for_reading(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(fmt::format("trace file {} {}; pass the path that ktune profile printed.",
                            path.string(),
                            ec ? "cannot be looked up (" + ec.message() + ")" : "does not exist"));
  if (!std::filesystem::is_regular_file(path, ec))
    throw Error(
        fmt::format("{} is not a regular file, so not a .ktrace; pass a trace written by "
                    "ktune profile.",
                    path.string()));
  // Read-write, not read-only: a trace cut short mid-transaction has a hot journal that SQLite
  // rolls back on open, which needs write access. NOMUTEX: a reader is used by one thread at a
  // time (KtraceReader's contract), so SQLite's lock around every column read buys nothing.
  Connection db;
  try {
    db = open_checked(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, path.string());
  } catch (const TraceOpenError& e) {
    // A WAL trace in a directory this user cannot write: SQLite cannot make the -shm file beside
    // it. Read it as immutable (no writer can change it there either); a file that fails that
    // way too gets the first sentence.
    if (e.code != SQLITE_CANTOPEN && e.code != SQLITE_READONLY) throw;
    std::string escaped;
    for (const char c : path.string())
      escaped += (c == '%' || c == '?' || c == '#')
                     ? fmt::format("%{:02X}", static_cast<unsigned char>(c))
                     : std::string(1, c);
    try {
      db = open_checked(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                        "file:" + escaped + "?immutable=1");
    } catch (const Error&) {
      throw e;
    }
  }
  // From here on, SQLite's failures are worded for a trace file.
  db.reword([file = path.string()](std::string_view msg, int) {
    return fmt::format(
        "trace file {}: SQLite error: {}; check free disk space and that the file is a .ktrace "
        "written by ktune profile.",
        file, msg);
  });
  refuse_foreign_schema(db, path);
  return db;
}

// Typed reads of the metadata object through core's strict JSON readers: a field that is absent
// or null keeps its default; one of the wrong JSON type (or not JSON at all) is one sentence
// naming the file and field (never nlohmann's type_error, and never a float converted out of an
// integer's range).
class MetadataFields {
 public:
  MetadataFields(const nlohmann::json& j, const std::filesystem::path& file,
                 std::string prefix = "")
      : j_(j), file_(file), prefix_(std::move(prefix)) {}

  std::int64_t integer(const char* key, std::int64_t fallback,
                       std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                       std::int64_t max = std::numeric_limits<std::int64_t>::max()) const {
    return read(key, fallback,
                [&](const auto& v, const auto& f) { return json_integer(v, f, min, max); });
  }
  std::uint64_t count(const char* key) const {
    return static_cast<std::uint64_t>(integer(key, 0, 0));
  }
  double number(const char* key, double fallback) const { return read(key, fallback, json_number); }
  std::string text(const char* key) const { return read(key, std::string(), json_string); }
  bool boolean(const char* key) const { return read(key, false, json_boolean); }
  std::vector<std::string> texts(const char* key) const {
    return read(key, std::vector<std::string>(), json_strings);
  }
  // Any field, of any JSON type; nullptr: absent.
  const nlohmann::json* find_field(const char* key) const { return find(key); }
  // An object field; nullptr: absent.
  const nlohmann::json* object(const char* key) const {
    const nlohmann::json* v = find(key);
    if (v && !v->is_object()) wrong(key, "must be an object");
    return v;
  }
  [[noreturn]] void wrong(const char* key, std::string_view what) const {
    fail(fmt::format("{} {}", field(key), what));
  }

 private:
  template <class T, class Strict>
  T read(const char* key, T fallback, Strict&& strict) const {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    try {
      return strict(*v, field(key));
    } catch (const Error& e) {
      fail(e.what());
    }
  }
  const nlohmann::json* find(const char* key) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return nullptr;
    if (it->is_discarded()) wrong(key, "is not valid JSON");
    return &*it;
  }
  std::string field(const char* key) const {
    return fmt::format("trace file {}: metadata field '{}{}'", file_.string(), prefix_, key);
  }
  // Core's sentence ("... must be a number, not \"soon\".") with the fix for a trace.
  [[noreturn]] static void fail(std::string sentence) {
    if (!sentence.empty() && sentence.back() == '.') sentence.pop_back();
    throw Error(sentence + "; the file was edited or damaged, so re-record it with ktune profile.");
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
  out.sample_one_in = static_cast<std::uint32_t>(
      w.integer("sample_one_in", 1, 0, std::numeric_limits<std::uint32_t>::max()));
  out.job_id = w.text("job_id");
  out.max_records = w.count("max_records");
  return out;
}

TraceMetadata read_metadata(const Connection& db, const std::filesystem::path& path) {
  TraceMetadata m;
  Statement q(db, "SELECT key, value FROM metadata");
  nlohmann::json j = nlohmann::json::object();
  while (q.step()) j[q.text(0)] = nlohmann::json::parse(q.text(1), nullptr, false);
  const MetadataFields f(j, path);
  const std::int64_t version = f.integer("schema_version", 0);
  if (version > kKtraceSchemaVersion)
    throw Error(
        fmt::format("trace file {} has schema_version {}, newer than the {} this ktune "
                    "reads; upgrade ktune.",
                    path.string(), version, kKtraceSchemaVersion));
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
      f.wrong("identity", "is not ktune info's identity block");
    }
  }
  if (const nlohmann::json* w = f.object("window"))
    m.window = window_from_json(MetadataFields(*w, path, "window."));
  m.capped_records = f.count("capped_records");
  m.tracer_version = f.text("tracer_version");
  if (const nlohmann::json* all = f.find_field("ceilings")) {
    if (!all->is_array()) f.wrong("ceilings", "must be an array");
    for (std::size_t i = 0; i < all->size(); ++i) {
      const nlohmann::json& one = (*all)[i];
      const std::string prefix = fmt::format("ceilings[{}].", i);
      if (!one.is_object()) f.wrong("ceilings", fmt::format("[{}] must be an object", i));
      const MetadataFields c(one, path, prefix);
      TraceCeilings out;
      out.device_uuid = c.text("device_uuid");
      out.dram_bytes_per_s = c.number("dram_bytes_per_s", 0.0);
      out.fp32_flop_per_s = c.number("fp32_flop_per_s", 0.0);
      out.bf16_flop_per_s = c.number("bf16_flop_per_s", 0.0);
      out.fp16_flop_per_s = c.number("fp16_flop_per_s", 0.0);
      out.kind = c.text("kind");
      out.source = c.text("source");
      m.ceilings.push_back(std::move(out));
    }
  }
  // The drops table is the truth (written as drops happen); the metadata total only at close.
  Statement d(db, "SELECT COALESCE(SUM(count), 0) FROM drops");
  m.dropped_records = d.step() ? static_cast<std::uint64_t>(d.i64(0)) : 0;
  return m;
}

// The rows a visit keeps, as SQL: the origin is the earliest of those.
constexpr const char* kUsableTimes =
    "typeof(start_ns) = 'integer' AND typeof(end_ns) = 'integer' AND start_ns > 0 AND "
    "end_ns >= start_ns";

const char* type_found(int sqlite_type) {
  return sqlite_type == SQLITE_NULL    ? "no value"
         : sqlite_type == SQLITE_FLOAT ? "a real number"
         : sqlite_type == SQLITE_TEXT  ? "text"
                                       : "a blob";
}

// A .ktrace opened for reading: the one place that decodes its tables, for KtraceReader and
// read_ktrace.
class TraceFile {
 public:
  explicit TraceFile(const std::filesystem::path& path) : path_(path), db_(open_for_reading(path)) {
    metadata_ = read_metadata(db_, path_);
    Statement t(db_, "SELECT name FROM sqlite_master WHERE type='table'");
    while (t.step()) tables_.insert(t.text(0));
    string_by_id_ = Statement(db_, "SELECT value FROM strings WHERE id=?");
  }

  const TraceMetadata& metadata() const { return metadata_; }
  const Connection& db() const { return db_; }

  // A table added after version 1 may be absent (an older file): it reads as empty. A table of
  // version 1 is always there; its absence is a damaged file, which its query reports.
  template <class R>
  bool has(const RecordKind<R>& kind) const {
    return kind.since_version <= 1 || tables_.count(kind.table) > 0;
  }

  // Runs one query over `kind`'s table and calls `visit` once per row, reusing one record.
  // stored: no ORDER BY; launch_only: the kLaunchColumns (other fields stay 0). A row holding
  // what no tracer writes (a non-integer where an integer belongs, a number below its column's
  // least) is one sentence naming file, table, record and column; a row whose times cannot be
  // placed on the timeline is skipped and counted.
  template <class R>
  void visit(const RecordKind<R>& kind,
             const std::type_identity_t<std::function<void(const R&)>>& visit, bool stored = false,
             bool launch_only = false) {
    SkippedRecords skipped;
    if (has(kind)) read_rows(kind, visit, stored, launch_only, skipped);
    skipped_[kind.index] = std::move(skipped);
  }

  SkippedRecords skipped() const {
    SkippedRecords all;
    for (const SkippedRecords& t : skipped_) {
      if (all.count == 0) all.first = t.first;
      all.count += t.count;
    }
    return all;
  }

 private:
  template <class R>
  void read_rows(const RecordKind<R>& kind, const std::function<void(const R&)>& visit, bool stored,
                 bool launch_only, SkippedRecords& skipped) {
    std::vector<const Column<R>*> columns;
    std::string names;
    int start_col = -1, end_col = -1;
    for (const Column<R>& c : kind.columns) {
      if (launch_only && std::find(std::begin(kLaunchColumns), std::end(kLaunchColumns), c.name) ==
                             std::end(kLaunchColumns))
        continue;
      if (std::string_view(c.name) == "start_ns") start_col = static_cast<int>(columns.size());
      if (std::string_view(c.name) == "end_ns") end_col = static_cast<int>(columns.size());
      columns.push_back(&c);
      names += c.since_version > metadata_.schema_version ? "0" : c.name;
      names += ", ";
    }
    const int id_col = static_cast<int>(columns.size());
    Statement q(db_, fmt::format("SELECT {}id FROM {}{}{}", names, kind.table,
                                 stored ? "" : " ORDER BY ", stored ? "" : kind.order));
    sqlite3_stmt* st = q.get();
    // Each column is read from SQLite once (a column read is an API call with its own checks;
    // two per column, its type and then its value, were a quarter of a kernel visit).
    std::vector<std::int64_t> raw(columns.size());
    R r;
    while (q.step()) {
      const Column<R>* bad = nullptr;
      const Column<R>* low = nullptr;
      int found = SQLITE_INTEGER;
      std::int64_t low_value = 0;
      for (int i = 0; i < id_col; ++i) {
        sqlite3_value* value = sqlite3_column_value(st, i);
        const Column<R>& c = *columns[static_cast<std::size_t>(i)];
        std::visit(
            [&](auto member) {
              using T = member_type<decltype(member)>;
              if constexpr (std::is_same_v<T, std::string>) {
                text_member(r, member) = string(sqlite3_value_int64(value));
              } else {
                const int type = sqlite3_value_type(value);
                const bool ok =
                    type == SQLITE_INTEGER || (std::is_same_v<T, double> && type == SQLITE_FLOAT);
                if (!ok && !bad) bad = &c, found = type;
                if constexpr (std::is_same_v<T, double>) {
                  r.*member = sqlite3_value_double(value);
                } else {
                  const std::int64_t v = raw[static_cast<std::size_t>(i)] =
                      sqlite3_value_int64(value);
                  if (v < c.min && !low) low = &c, low_value = v;
                  r.*member = static_cast<T>(v);
                }
              }
            },
            c.member);
      }
      if (bad || low) reject(kind, q.i64(id_col), bad, found, low, low_value);
      if (start_col < 0) {
        visit(r);
        continue;
      }
      const std::int64_t start = raw[static_cast<std::size_t>(start_col)],
                         end = raw[static_cast<std::size_t>(end_col)];
      if (start > 0 && end >= start) {
        visit(r);
      } else if (skipped.count++ == 0) {
        skipped.first =
            fmt::format("{} record {} ({})", kind.table, q.i64(id_col),
                        start == 0 ? std::string("start_ns 0: CUPTI collected no timestamp")
                                   : fmt::format("end_ns {} is before start_ns {}", end, start));
      }
    }
  }

  // The sentence for a row no tracer writes: `bad` holds a value of the wrong type (`found`),
  // or else `low` holds `value`, below its column's least.
  template <class R>
  [[noreturn]] void reject(const RecordKind<R>& kind, std::int64_t id, const Column<R>* bad,
                           int found, const Column<R>* low, std::int64_t value) const {
    const std::string what =
        bad ? fmt::format("{} in column {} where ktune profile writes {}", type_found(found),
                          bad->name, is_real(*bad) ? "a number" : "an integer")
        : low->min == 0 ? fmt::format(
                              "{} in column {} where ktune profile writes no "
                              "negative number",
                              value, low->name)
                        : fmt::format("{} {} where ktune profile writes at least {}", low->name,
                                      value, low->min);
    throw Error(
        fmt::format("trace file {}: {} record {} has {}; the file was edited or damaged, so "
                    "re-record it with ktune profile.",
                    path_.string(), kind.table, id, what));
  }

  // The string `id` points at; "" when there is none (a NULL or dangling id). Each is read once:
  // a trace has few distinct names and millions of rows that point at them. Node-based, so a
  // reference into it stays valid while the map grows.
  const std::string& string(std::int64_t id) {
    auto it = strings_.find(id);
    if (it != strings_.end()) return it->second;
    string_by_id_.bind(1, id);
    std::string value = string_by_id_.step() ? string_by_id_.text(0) : std::string();
    string_by_id_.reset();
    return strings_.emplace(id, std::move(value)).first->second;
  }

  std::filesystem::path path_;
  Connection db_;
  TraceMetadata metadata_;
  std::unordered_set<std::string> tables_;
  std::array<SkippedRecords, kKindCount> skipped_;  // by the latest visit of each kind
  Statement string_by_id_;
  std::unordered_map<std::int64_t, std::string> strings_;
};

}  // namespace

struct KtraceReader::Impl : TraceFile {
  using TraceFile::TraceFile;
};

KtraceReader::KtraceReader(const std::filesystem::path& path)
    : impl_(std::make_unique<Impl>(path)) {}
KtraceReader::~KtraceReader() = default;
KtraceReader::KtraceReader(KtraceReader&&) noexcept = default;
KtraceReader& KtraceReader::operator=(KtraceReader&&) noexcept = default;

const TraceMetadata& KtraceReader::metadata() const {
  return impl_->metadata();
}

TraceCounts KtraceReader::counts() const {
  TraceCounts c;
  c.metadata = impl_->metadata();
  for_each_kind([&](const auto& kind) {
    if (!kind.count || !impl_->has(kind)) return;
    Statement q(impl_->db(), fmt::format("SELECT COUNT(*) FROM {}", kind.table));
    c.*kind.count = q.step() ? static_cast<std::uint64_t>(q.i64(0)) : 0;
  });
  return c;
}

std::optional<std::uint64_t> KtraceReader::origin_ns() const {
  std::string starts;
  for_each_kind([&](const auto& kind) {
    if (!kind.sets_origin) return;
    starts += fmt::format("{}SELECT MIN(start_ns) AS t FROM {} WHERE {}",
                          starts.empty() ? "" : " UNION ALL ", kind.table, kUsableTimes);
  });
  Statement q(impl_->db(), fmt::format("SELECT MIN(t) FROM ({})", starts));
  std::optional<std::uint64_t> origin;
  if (q.step() && !q.is_null(0)) origin = static_cast<std::uint64_t>(q.i64(0));
  return origin;
}

void KtraceReader::kernels(const Visitor<KernelRecord>& visit, VisitOrder order,
                           KernelColumns columns) const {
  impl_->visit(kKernels, visit, order == VisitOrder::stored, columns == KernelColumns::launch);
}
void KtraceReader::memcpys(const Visitor<MemcpyRecord>& visit) const {
  impl_->visit(kMemcpys, visit);
}
void KtraceReader::memsets(const Visitor<MemsetRecord>& visit) const {
  impl_->visit(kMemsets, visit);
}
void KtraceReader::api_calls(const Visitor<ApiRecord>& visit) const {
  impl_->visit(kApiCalls, visit);
}
void KtraceReader::syncs(const Visitor<SyncRecord>& visit) const {
  impl_->visit(kSyncs, visit);
}
void KtraceReader::nvtx_ranges(const Visitor<NvtxRangeRecord>& visit) const {
  impl_->visit(kNvtxRanges, visit);
}
void KtraceReader::overheads(const Visitor<OverheadRecord>& visit) const {
  impl_->visit(kOverheads, visit);
}
void KtraceReader::drops(const Visitor<DropRecord>& visit) const {
  impl_->visit(kDrops, visit);
}
void KtraceReader::counters(const Visitor<CounterRecord>& visit) const {
  impl_->visit(kCounters, visit);
}
void KtraceReader::gemm_calls(const Visitor<GemmCallRecord>& visit) const {
  impl_->visit(kGemmCalls, visit);
}

void KtraceReader::gemm_events(const Visitor<GemmEventRecord>& visit) const {
  impl_->visit(kGemmEvents, visit);
}

SkippedRecords KtraceReader::skipped() const {
  return impl_->skipped();
}

Trace read_ktrace(const std::filesystem::path& path) {
  TraceFile file(path);
  Trace t;
  t.metadata = file.metadata();
  for_each_kind([&](const auto& kind) {
    auto& records = t.*kind.records;
    file.visit(kind, [&](const auto& r) { records.push_back(r); });
  });
  return t;
}

TraceCounts read_ktrace_counts(const std::filesystem::path& path) {
  return KtraceReader(path).counts();
}

void write_ktrace_ceilings(const std::filesystem::path& path,
                           const std::vector<TraceCeilings>& ceilings) {
  const int version = TraceFile(path).metadata().schema_version;  // refuses what is no trace
  if (version != kKtraceSchemaVersion)
    throw Error(fmt::format(
        "trace file {} has schema_version {}; ceilings are filed only into traces of version {} "
        "(this ktune's tracer): re-record it with ktune profile.",
        path.string(), version, kKtraceSchemaVersion));
  Connection db = open_trace(path, SQLITE_OPEN_READWRITE);
  Statement q(db, "INSERT OR REPLACE INTO metadata(key, value) VALUES('ceilings', ?)");
  const std::string value = ceilings_json(ceilings).dump();
  q.bind(1, std::string_view(value));
  q.run();
}

}  // namespace ktune::trace
