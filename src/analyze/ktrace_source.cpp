// Streams .ktrace tables with one ordered query per visit, so the analysis never holds a large
// trace as records. The column layout is the one trace/ktrace.hpp documents; the file is validated
// by trace::read_ktrace_counts before anything here runs.
#include <sqlite3.h>

#include <fmt/format.h>

#include "ktune/analyze/source.hpp"
#include "ktune/core/error.hpp"

namespace ktune::analyze {

struct KtraceSource::Db {
  sqlite3* handle = nullptr;
  std::string path;
  ~Db() {
    if (handle) sqlite3_close(handle);
  }

  // Runs `sql` and calls `row` for each result row; statement errors name the file.
  template <typename Row>
  void query(const char* sql, Row&& row) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(handle, sql, -1, &stmt, nullptr) != SQLITE_OK) fail("cannot query");
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row(stmt);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) fail("cannot read");
  }
  [[noreturn]] void fail(const char* what) const {
    throw Error(fmt::format("{} trace {}: {}; the file may be damaged, so re-record it.", what,
                            path, sqlite3_errmsg(handle)));
  }
};

namespace {

std::string text(sqlite3_stmt* s, int col) {
  const auto* p = sqlite3_column_text(s, col);
  return p ? std::string(reinterpret_cast<const char*>(p)) : std::string();
}
std::uint64_t u64(sqlite3_stmt* s, int col) {
  return static_cast<std::uint64_t>(sqlite3_column_int64(s, col));
}
std::uint32_t u32(sqlite3_stmt* s, int col) {
  return static_cast<std::uint32_t>(sqlite3_column_int64(s, col));
}
std::int32_t i32(sqlite3_stmt* s, int col) {
  return static_cast<std::int32_t>(sqlite3_column_int64(s, col));
}

}  // namespace

KtraceSource::KtraceSource(const std::filesystem::path& path)
    : path_(path), counts_(trace::read_ktrace_counts(path)), db_(std::make_unique<Db>()) {
  db_->path = path.string();
  if (sqlite3_open_v2(db_->path.c_str(), &db_->handle, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
    db_->fail("cannot open");
}

KtraceSource::~KtraceSource() = default;

void KtraceSource::kernels(const Visitor<trace::KernelRecord>& visit) {
  trace::KernelRecord k;
  db_->query(
      "SELECT n.value, d.value, k.start_ns, k.end_ns, k.device_id, k.context_id, k.stream_id, "
      "k.correlation_id, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z, "
      "k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes, k.graph_id "
      "FROM kernels k LEFT JOIN strings n ON n.id = k.name_id "
      "LEFT JOIN strings d ON d.id = k.demangled_id ORDER BY k.start_ns",
      [&](sqlite3_stmt* s) {
        k.name = text(s, 0);
        k.demangled_name = text(s, 1);
        k.start_ns = u64(s, 2);
        k.end_ns = u64(s, 3);
        k.device_id = u32(s, 4);
        k.context_id = u32(s, 5);
        k.stream_id = u32(s, 6);
        k.correlation_id = u32(s, 7);
        k.grid_x = i32(s, 8);
        k.grid_y = i32(s, 9);
        k.grid_z = i32(s, 10);
        k.block_x = i32(s, 11);
        k.block_y = i32(s, 12);
        k.block_z = i32(s, 13);
        k.registers_per_thread = u32(s, 14);
        k.static_shared_bytes = i32(s, 15);
        k.dynamic_shared_bytes = i32(s, 16);
        k.graph_id = u32(s, 17);
        visit(k);
      });
}

void KtraceSource::memcpys(const Visitor<trace::MemcpyRecord>& visit) {
  trace::MemcpyRecord m;
  db_->query(
      "SELECT k.value, m.bytes, m.start_ns, m.end_ns, m.device_id, m.context_id, m.stream_id, "
      "m.correlation_id FROM memcpys m LEFT JOIN strings k ON k.id = m.kind_id "
      "ORDER BY m.start_ns",
      [&](sqlite3_stmt* s) {
        m.kind = text(s, 0);
        m.bytes = u64(s, 1);
        m.start_ns = u64(s, 2);
        m.end_ns = u64(s, 3);
        m.device_id = u32(s, 4);
        m.context_id = u32(s, 5);
        m.stream_id = u32(s, 6);
        m.correlation_id = u32(s, 7);
        visit(m);
      });
}

void KtraceSource::memsets(const Visitor<trace::MemsetRecord>& visit) {
  trace::MemsetRecord m;
  db_->query(
      "SELECT bytes, value, start_ns, end_ns, device_id, context_id, stream_id, correlation_id "
      "FROM memsets ORDER BY start_ns",
      [&](sqlite3_stmt* s) {
        m.bytes = u64(s, 0);
        m.value = u32(s, 1);
        m.start_ns = u64(s, 2);
        m.end_ns = u64(s, 3);
        m.device_id = u32(s, 4);
        m.context_id = u32(s, 5);
        m.stream_id = u32(s, 6);
        m.correlation_id = u32(s, 7);
        visit(m);
      });
}

void KtraceSource::api_calls(const Visitor<trace::ApiRecord>& visit) {
  trace::ApiRecord a;
  db_->query(
      "SELECT p.value, n.value, a.callback_id, a.start_ns, a.end_ns, a.process_id, a.thread_id, "
      "a.correlation_id, a.return_value FROM api_calls a "
      "LEFT JOIN strings p ON p.id = a.api_id LEFT JOIN strings n ON n.id = a.name_id "
      "ORDER BY a.start_ns",
      [&](sqlite3_stmt* s) {
        a.api = text(s, 0);
        a.name = text(s, 1);
        a.callback_id = u32(s, 2);
        a.start_ns = u64(s, 3);
        a.end_ns = u64(s, 4);
        a.process_id = u32(s, 5);
        a.thread_id = u32(s, 6);
        a.correlation_id = u32(s, 7);
        a.return_value = u32(s, 8);
        visit(a);
      });
}

void KtraceSource::syncs(const Visitor<trace::SyncRecord>& visit) {
  trace::SyncRecord r;
  db_->query(
      "SELECT t.value, y.start_ns, y.end_ns, y.context_id, y.stream_id, y.cuda_event_id, "
      "y.correlation_id FROM syncs y LEFT JOIN strings t ON t.id = y.type_id ORDER BY y.start_ns",
      [&](sqlite3_stmt* s) {
        r.type = text(s, 0);
        r.start_ns = u64(s, 1);
        r.end_ns = u64(s, 2);
        r.context_id = u32(s, 3);
        r.stream_id = u32(s, 4);
        r.cuda_event_id = u32(s, 5);
        r.correlation_id = u32(s, 6);
        visit(r);
      });
}

void KtraceSource::nvtx_ranges(const Visitor<trace::NvtxRangeRecord>& visit) {
  trace::NvtxRangeRecord r;
  db_->query(
      "SELECT n.value, d.value, r.start_ns, r.end_ns, r.process_id, r.thread_id "
      "FROM nvtx_ranges r LEFT JOIN strings n ON n.id = r.name_id "
      "LEFT JOIN strings d ON d.id = r.domain_id ORDER BY r.start_ns",
      [&](sqlite3_stmt* s) {
        r.name = text(s, 0);
        r.domain = text(s, 1);
        r.start_ns = u64(s, 2);
        r.end_ns = u64(s, 3);
        r.process_id = u32(s, 4);
        r.thread_id = u32(s, 5);
        visit(r);
      });
}

std::optional<std::uint64_t> KtraceSource::origin_ns() {
  std::optional<std::uint64_t> origin;
  db_->query(
      "SELECT MIN(t) FROM (SELECT MIN(start_ns) AS t FROM kernels WHERE start_ns > 0 "
      "UNION ALL SELECT MIN(start_ns) FROM memcpys WHERE start_ns > 0 "
      "UNION ALL SELECT MIN(start_ns) FROM memsets WHERE start_ns > 0 "
      "UNION ALL SELECT MIN(start_ns) FROM api_calls WHERE start_ns > 0 "
      "UNION ALL SELECT MIN(start_ns) FROM syncs WHERE start_ns > 0 "
      "UNION ALL SELECT MIN(start_ns) FROM nvtx_ranges WHERE start_ns > 0)",
      [&](sqlite3_stmt* s) {
        if (sqlite3_column_type(s, 0) != SQLITE_NULL) origin = u64(s, 0);
      });
  return origin;
}

}  // namespace ktune::analyze
