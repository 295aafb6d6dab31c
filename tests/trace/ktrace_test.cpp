// The .ktrace writer and reader on hand-built records: every field survives the round trip, the
// schema is pinned, strings are interned, and a trace cut short is still readable.
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/trace/ktrace.hpp"
#include "trace_test_util.hpp"

namespace ktune::trace {
namespace {

using test::sample_trace;
using test::TempDir;

TEST(Ktrace, RoundTripsEveryRecordField) {
  TempDir dir;
  const Trace in = sample_trace();
  write_ktrace(dir.path / "t.ktrace", in);
  const Trace out = read_ktrace(dir.path / "t.ktrace");

  ASSERT_EQ(out.kernels.size(), 2u);
  const KernelRecord& k = out.kernels[0];  // ordered by start: the gemm first
  EXPECT_EQ(k.name, "_Z4gemmPKfS0_Pfi");
  EXPECT_EQ(k.demangled_name, "gemm(float const*, float const*, float*, int)");
  EXPECT_EQ(k.queued_ns, 900u);
  EXPECT_EQ(k.submitted_ns, 950u);
  EXPECT_EQ(k.start_ns, 1000u);
  EXPECT_EQ(k.end_ns, 5000u);
  EXPECT_EQ(k.duration_ns(), 4000u);
  EXPECT_EQ(k.device_id, 0u);
  EXPECT_EQ(k.context_id, 1u);
  EXPECT_EQ(k.stream_id, 7u);
  EXPECT_EQ(k.correlation_id, 42u);
  EXPECT_EQ(k.grid_x, 128);
  EXPECT_EQ(k.grid_y, 2);
  EXPECT_EQ(k.grid_z, 1);
  EXPECT_EQ(k.block_x, 256);
  EXPECT_EQ(k.cluster_x, 2u);
  EXPECT_EQ(k.registers_per_thread, 96u);
  EXPECT_EQ(k.static_shared_bytes, 16384);
  EXPECT_EQ(k.dynamic_shared_bytes, 65536);
  EXPECT_EQ(k.local_memory_per_thread_bytes, 8u);
  EXPECT_EQ(k.local_memory_total_bytes, 1ull << 33);  // above 32 bits survives
  EXPECT_EQ(k.graph_id, 3u);
  EXPECT_EQ(k.graph_node_id, 0xFFFF'0000'0000'0001ull);    // full unsigned 64-bit range
  EXPECT_EQ(out.kernels[1].demangled_name, "vector_add");  // not mangled: kept as is

  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0].kind, "HtoD");
  EXPECT_EQ(out.memcpys[0].src_memory, "pinned");
  EXPECT_EQ(out.memcpys[0].dst_memory, "device");
  EXPECT_EQ(out.memcpys[0].bytes, 1u << 20);
  EXPECT_EQ(out.memcpys[0].correlation_id, 40u);
  ASSERT_EQ(out.memsets.size(), 1u);
  EXPECT_EQ(out.memsets[0].value, 0xABu);
  EXPECT_EQ(out.memsets[0].bytes, 4096u);
  ASSERT_EQ(out.api_calls.size(), 2u);
  EXPECT_EQ(out.api_calls[0].api, "runtime");
  EXPECT_EQ(out.api_calls[0].name, "cudaMemcpyAsync");
  EXPECT_EQ(out.api_calls[1].name, "cudaLaunchKernel");
  EXPECT_EQ(out.api_calls[1].thread_id, 4321u);
  EXPECT_EQ(out.api_calls[1].correlation_id, 42u);
  ASSERT_EQ(out.syncs.size(), 1u);
  EXPECT_EQ(out.syncs[0].type, "stream_synchronize");
  EXPECT_EQ(out.syncs[0].stream_id, 7u);
  ASSERT_EQ(out.nvtx_ranges.size(), 1u);
  EXPECT_EQ(out.nvtx_ranges[0].name, "forward");
  EXPECT_EQ(out.nvtx_ranges[0].end_ns, 9000u);
  ASSERT_EQ(out.overheads.size(), 1u);
  EXPECT_EQ(out.overheads[0].kind, "cupti_buffer_flush");
  ASSERT_EQ(out.drops.size(), 1u);
  EXPECT_EQ(out.drops[0].count, 5u);
  EXPECT_EQ(out.metadata.dropped_records, 5u);  // the drops table is the total
}

TEST(Ktrace, MetadataCarriesIdentityCommandLineAndWindow) {
  TempDir dir;
  write_ktrace(dir.path / "t.ktrace", sample_trace());
  const TraceMetadata m = read_ktrace(dir.path / "t.ktrace").metadata;
  EXPECT_EQ(m.schema_version, kKtraceSchemaVersion);
  EXPECT_EQ(m.mode, "default");
  EXPECT_EQ(m.command_line, (std::vector<std::string>{"python3", "train.py", "--steps", "3"}));
  EXPECT_EQ(m.pid, 1234);
  EXPECT_EQ(m.ppid, 1000);
  EXPECT_TRUE(m.complete);
  EXPECT_EQ(m.window.delay_s, 1.5);
  EXPECT_EQ(m.window.range, "nvtx:step");
  EXPECT_EQ(m.window.sample_one_in, 4u);
  EXPECT_EQ(m.window.job_id, "job-7");
  EXPECT_EQ(m.window.max_records, 1000000u);
  EXPECT_EQ(m.window.period_s, 0);  // one capture, not periodic windows
  EXPECT_EQ(m.window.index, 0u);
  ASSERT_TRUE(m.identity.has_value());
  ASSERT_EQ(m.identity->devices.size(), 1u);
  EXPECT_EQ(m.identity->devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(m.identity->devices[0].cc_major, 9);
  EXPECT_EQ(m.identity->software.cuda_driver_api, 13000);
}

// Pins the on-disk shape other modules (report, export) read with SQL.
TEST(Ktrace, SchemaIsPinned) {
  TempDir dir;
  write_ktrace(dir.path / "t.ktrace", sample_trace());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path / "t.ktrace").c_str(), &db), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &s, nullptr), SQLITE_OK) << sql;
    std::string v;
    if (s && sqlite3_step(s) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(s, 0);
      v = t ? reinterpret_cast<const char*>(t) : "";
    }
    sqlite3_finalize(s);
    return v;
  };
  EXPECT_EQ(one("PRAGMA user_version"), "6");
  EXPECT_EQ(one("SELECT value FROM metadata WHERE key='schema_version'"), "6");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE "
                "type='table' ORDER BY name)"),
            "api_calls,counters,drops,gemm_calls,gemm_events,kernels,memcpys,memsets,metadata,"
            "nvtx_ranges,overheads,strings,syncs");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM pragma_table_info('gemm_calls')"),
            "id,m,n,k,batch,lda,ldb,ldc,ldd,stride_a,stride_b,stride_c,stride_d,a_type_id,"
            "b_type_id,c_type_id,d_type_id,compute_type_id,scale_type_id,transa_id,transb_id,"
            "epilogue_id,algo_id,tile_id,stages_id,splits,reduction_id,calls,entry_id,route_id");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM pragma_table_info('counters')"),
            "id,device_id,correlation_id,metric_id,value");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM pragma_table_info('gemm_events')"),
            "id,process_id,thread_id,time_ns,call");
  EXPECT_EQ(one("SELECT group_concat(name, ',') FROM pragma_table_info('kernels')"),
            "id,name_id,demangled_id,queued_ns,submitted_ns,start_ns,end_ns,device_id,"
            "context_id,stream_id,correlation_id,grid_x,grid_y,grid_z,block_x,block_y,block_z,"
            "cluster_x,cluster_y,cluster_z,registers_per_thread,static_shared_bytes,"
            "dynamic_shared_bytes,local_memory_per_thread_bytes,local_memory_total_bytes,"
            "graph_id,graph_node_id");
  EXPECT_EQ(one("SELECT group_concat(key, ',') FROM (SELECT key FROM metadata ORDER BY key)"),
            "capped_records,ceilings,command_line,complete,dropped_records,finished_at,identity,"
            "mode,pid,ppid,records,schema_version,started_at,tracer_version,window");
  // Interned: two kernels, one memcpy kind etc., each distinct string stored once.
  EXPECT_EQ(one("SELECT COUNT(*) - COUNT(DISTINCT value) FROM strings"), "0");
  sqlite3_close(db);
}

TEST(Ktrace, InternsRepeatedNamesOnce) {
  TempDir dir;
  Trace t = sample_trace();
  for (int i = 0; i < 100; ++i) t.kernels.push_back(t.kernels[0]);
  write_ktrace(dir.path / "t.ktrace", t);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path / "t.ktrace").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM strings WHERE value LIKE '%gemm%'", -1, &s, nullptr);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 2);  // mangled + demangled
  sqlite3_finalize(s);
  sqlite3_close(db);
  EXPECT_EQ(read_ktrace(dir.path / "t.ktrace").kernels.size(), 102u);
}

TEST(Ktrace, UncommittedRecordsAreLostButTheFileStaysReadable) {
  TempDir dir;
  const auto path = dir.path / "cut.ktrace";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A process that dies without closing: one committed batch, one open transaction.
    Trace t = sample_trace();
    t.metadata.complete = false;
    KtraceWriter w(path, t.metadata);
    w.add(t.kernels[0]);
    w.commit();
    w.add(t.kernels[1]);
    _exit(0);  // no destructor, no commit
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const Trace out = read_ktrace(path);
  EXPECT_FALSE(out.metadata.complete);
  ASSERT_EQ(out.kernels.size(), 1u);
  EXPECT_EQ(out.kernels[0].name, "vector_add");  // the committed one
}

TEST(Ktrace, CountsWithoutLoadingRecords) {
  TempDir dir;
  write_ktrace(dir.path / "t.ktrace", sample_trace());
  const TraceCounts c = read_ktrace_counts(dir.path / "t.ktrace");
  EXPECT_EQ(c.kernels, 2u);
  EXPECT_EQ(c.memcpys, 1u);
  EXPECT_EQ(c.memsets, 1u);
  EXPECT_EQ(c.api_calls, 2u);
  EXPECT_EQ(c.syncs, 1u);
  EXPECT_EQ(c.nvtx_ranges, 1u);
  EXPECT_EQ(c.overheads, 1u);
  EXPECT_EQ(c.metadata.dropped_records, 5u);
}

TEST(Ktrace, BadFilesGetOneSentence) {
  TempDir dir;
  auto expect_sentence = [](const std::filesystem::path& p, const char* needle) {
    try {
      read_ktrace(p);
      ADD_FAILURE() << "expected an error for " << p;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      EXPECT_EQ(msg.back(), '.') << msg;
    }
  };
  expect_sentence(dir.path / "missing.ktrace", "does not exist");
  std::ofstream(dir.path / "text.ktrace") << "hello, not sqlite at all, just some text\n";
  expect_sentence(dir.path / "text.ktrace", "not a .ktrace");
  {
    sqlite3* db = nullptr;
    sqlite3_open((dir.path / "other.db").c_str(), &db);
    sqlite3_exec(db, "CREATE TABLE x(a)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  expect_sentence(dir.path / "other.db", "not a .ktrace");
  {
    write_ktrace(dir.path / "future.ktrace", sample_trace());
    sqlite3* db = nullptr;
    sqlite3_open((dir.path / "future.ktrace").c_str(), &db);
    sqlite3_exec(db, "UPDATE metadata SET value='99' WHERE key='schema_version'", nullptr, nullptr,
                 nullptr);
    sqlite3_close(db);
  }
  expect_sentence(dir.path / "future.ktrace", "upgrade ktune");
}

TEST(KtraceReader, StreamsEachTableInStartThenIdOrderReusingOneRecord) {
  TempDir dir;
  Trace t = sample_trace();
  // Kernels out of start order, two of them tied at start 2000: ties keep insertion (id) order.
  KernelRecord k = t.kernels[0].graph_node_id != 0 ? t.kernels[0] : t.kernels[1];  // the gemm
  t.kernels.clear();
  for (const auto& [name, start] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"late", 9000}, {"tie_first", 2000}, {"early", 100}, {"tie_second", 2000}}) {
    k.name = name;
    k.start_ns = start;
    k.end_ns = start + 10;
    t.kernels.push_back(k);
  }
  t.drops.push_back({2, 9, 3});
  write_ktrace(dir.path / "t.ktrace", t);

  const KtraceReader reader(dir.path / "t.ktrace");
  EXPECT_EQ(reader.metadata().dropped_records, 8u);
  EXPECT_EQ(reader.counts().kernels, 4u);
  std::vector<std::string> names;
  std::set<const KernelRecord*> addresses;
  reader.kernels([&](const KernelRecord& r) {
    names.push_back(r.name);
    addresses.insert(&r);
    EXPECT_EQ(r.graph_node_id, 0xFFFF'0000'0000'0001ull);  // every column decoded per row
  });
  EXPECT_EQ(names, (std::vector<std::string>{"early", "tie_first", "tie_second", "late"}));
  EXPECT_EQ(addresses.size(), 1u);

  // Visits repeat and nest; the other tables come back in start order too.
  std::vector<std::uint64_t> api_starts;
  std::size_t nested_kernels = 0;
  reader.api_calls([&](const ApiRecord& a) {
    api_starts.push_back(a.start_ns);
    reader.kernels([&](const KernelRecord&) { ++nested_kernels; });
  });
  EXPECT_EQ(api_starts, (std::vector<std::uint64_t>{400, 850}));
  EXPECT_EQ(nested_kernels, 8u);
  std::vector<std::uint64_t> drop_counts;
  reader.drops([&](const DropRecord& d) { drop_counts.push_back(d.count); });
  EXPECT_EQ(drop_counts, (std::vector<std::uint64_t>{5, 3}));
  std::size_t overheads = 0, memsets = 0, syncs = 0, ranges = 0, memcpys = 0;
  reader.overheads([&](const OverheadRecord& o) { overheads += o.start_ns == 7000; });
  reader.memsets([&](const MemsetRecord& m) { memsets += m.start_ns == 5100; });
  reader.syncs([&](const SyncRecord& y) { syncs += y.start_ns == 890; });
  reader.nvtx_ranges([&](const NvtxRangeRecord& r) { ranges += r.start_ns == 300; });
  reader.memcpys([&](const MemcpyRecord& c) { memcpys += c.start_ns == 500; });
  EXPECT_EQ(overheads + memsets + syncs + ranges + memcpys, 5u);
  EXPECT_EQ(reader.origin_ns(), std::optional<std::uint64_t>(100));  // the "early" kernel

  // read_ktrace collects through the reader: the same order.
  const Trace out = read_ktrace(dir.path / "t.ktrace");
  ASSERT_EQ(out.kernels.size(), 4u);
  EXPECT_EQ(out.kernels[1].name, "tie_first");
  EXPECT_EQ(out.drops.size(), 2u);
}

// Ingest's visit: every usable row once, as written (no sort), strings resolved as in start order.
TEST(KtraceReader, StoredOrderVisitsRowsAsWritten) {
  TempDir dir;
  Trace t = sample_trace();
  KernelRecord k = t.kernels[0];
  t.kernels.clear();
  for (const auto& [name, start] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"_Z4latev", 9000}, {"_Z5earlyv", 100}, {"_Z4latev", 5000}, {"untimed", 0}}) {
    k.name = name;
    k.demangled_name.clear();
    k.start_ns = start;
    k.end_ns = start + 10;
    t.kernels.push_back(k);
  }
  write_ktrace(dir.path / "t.ktrace", t);
  const KtraceReader reader(dir.path / "t.ktrace");
  std::vector<std::pair<std::string, std::uint64_t>> seen;
  reader.kernels([&](const KernelRecord& r) { seen.emplace_back(r.display_name(), r.start_ns); },
                 VisitOrder::stored);
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::uint64_t>>{
                      {"late()", 9000}, {"early()", 100}, {"late()", 5000}}));
  EXPECT_EQ(reader.skipped().count, 1u);  // the untimed one, as in start order
  seen.clear();
  reader.kernels([&](const KernelRecord& r) { seen.emplace_back(r.name, r.start_ns); });
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::uint64_t>>{
                      {"_Z5earlyv", 100}, {"_Z4latev", 5000}, {"_Z4latev", 9000}}));
}

// Strings are read once per id; an id with no string (a damaged file) reads as "", as the SQL
// lookup it replaced did.
TEST(KtraceReader, StringIdWithoutAStringReadsEmpty) {
  TempDir dir;
  write_ktrace(dir.path / "t.ktrace", sample_trace());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir.path / "t.ktrace").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "UPDATE kernels SET demangled_id = 999999 WHERE start_ns = 1000; "
                           "UPDATE memcpys SET kind_id = NULL",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const Trace out = read_ktrace(dir.path / "t.ktrace");
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.kernels[0].demangled_name, "");
  EXPECT_EQ(out.kernels[0].display_name(), "_Z4gemmPKfS0_Pfi");
  EXPECT_EQ(out.kernels[1].demangled_name, "vector_add");
  ASSERT_EQ(out.memcpys.size(), 1u);
  EXPECT_EQ(out.memcpys[0].kind, "");
  EXPECT_EQ(out.memcpys[0].src_memory, "pinned");
}

TEST(Ktrace, PeriodicWindowMetadataRoundTrips) {
  TempDir dir;
  Trace t = sample_trace();
  t.metadata.window.range.clear();
  t.metadata.window.period_s = 60;
  t.metadata.window.window_s = 2;
  t.metadata.window.index = 17;
  write_ktrace(dir.path / "t.ktrace", t);
  const TraceMetadata m = KtraceReader(dir.path / "t.ktrace").metadata();
  EXPECT_EQ(m.window.period_s, 60);
  EXPECT_EQ(m.window.window_s, 2);
  EXPECT_EQ(m.window.index, 17u);
}

TEST(KtraceReader, EmptyTraceHasNoOrigin) {
  TempDir dir;
  Trace t;
  t.metadata = sample_trace().metadata;
  write_ktrace(dir.path / "empty.ktrace", t);
  const KtraceReader reader(dir.path / "empty.ktrace");
  EXPECT_EQ(reader.origin_ns(), std::nullopt);
  std::size_t visits = 0;
  reader.kernels([&](const KernelRecord&) { ++visits; });
  EXPECT_EQ(visits, 0u);
}

// Runs one SQL statement on a written trace, as a user editing it (or a damaged disk) would.
void tamper(const std::filesystem::path& p, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

// The error read_ktrace gives, checked to be one sentence naming the file.
std::string read_error(const std::filesystem::path& p) {
  try {
    read_ktrace(p);
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
    EXPECT_EQ(msg.back(), '.') << msg;
    return msg;
  }
  ADD_FAILURE() << "expected an error for " << p;
  return "";
}

// A .ktrace whose `kernels` was a recursive view spun report, export and ingest for ever: the
// reader ran whatever query the file held. A view, trigger or virtual table in a trace is refused
// before any record is read.
TEST(KtraceReader, ForeignSchemaObjectsAreRefusedUnread) {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  const auto view = dir.path / "view.ktrace";
  write_ktrace(view, sample_trace());
  tamper(view,
         "ALTER TABLE kernels RENAME TO k0; CREATE VIEW kernels AS WITH RECURSIVE r(n) AS "
         "(SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT k0.* FROM k0, r");
  EXPECT_NE(read_error(view).find("holds a view named 'kernels'"), std::string::npos);
  EXPECT_THROW(read_ktrace_counts(view), Error);
  EXPECT_THROW(KtraceReader{view}, Error);
  const auto trigger = dir.path / "trigger.ktrace";
  write_ktrace(trigger, sample_trace());
  tamper(trigger, "CREATE TRIGGER t AFTER INSERT ON drops BEGIN DELETE FROM kernels; END");
  EXPECT_NE(read_error(trigger).find("holds a trigger named 't'"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

// A trace cut short, one locked by its writer and a WAL trace in a folder this user cannot write
// were all "not a .ktrace file". Each has its own sentence now, and the last one is read.
TEST(KtraceReader, CutShortAndLockedTracesAreToldApart) {
  TempDir dir;
  Trace t = sample_trace();
  for (int i = 0; i < 2000; ++i) t.kernels.push_back(t.kernels[0]);  // several pages of rows
  const auto cut = dir.path / "cut.ktrace";
  write_ktrace(cut, t);
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  const std::string why = read_error(cut);
  EXPECT_EQ(why.find("not a .ktrace"), std::string::npos) << why;
  EXPECT_NE(why.find("damaged or cut short"), std::string::npos) << why;

  const auto locked = dir.path / "locked.ktrace";
  write_ktrace(locked, sample_trace());
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(locked.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer, "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  EXPECT_NE(read_error(locked).find("is locked by the process writing it"), std::string::npos);
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
}

TEST(KtraceReader, AWalTraceInAReadOnlyFolderIsRead) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes every folder";
  TempDir dir;
  const auto ro = dir.path / "ro";
  std::filesystem::create_directories(ro);
  write_ktrace(ro / "wal.ktrace", sample_trace());
  tamper(ro / "wal.ktrace", "PRAGMA journal_mode = WAL");
  std::filesystem::permissions(
      ro, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  EXPECT_EQ(read_ktrace(ro / "wal.ktrace").kernels.size(), sample_trace().kernels.size());
  std::filesystem::permissions(ro, std::filesystem::perms::owner_all);
}

TEST(KtraceReader, SkipsAndCountsRecordsWithUnusableTimes) {
  // CUPTI reports start = end = 0 when it could not time a record, and the tracer copies its
  // values unchecked, so a real trace can hold these: they are left out and counted, not fatal.
  // They used to be read as is: a 57-year window from time 0, negative durations.
  TempDir dir;
  Trace t = sample_trace();
  KernelRecord k = t.kernels[0];
  t.kernels.clear();
  k.start_ns = 1000, k.end_ns = 2000;
  t.kernels.push_back(k);
  k.start_ns = 0, k.end_ns = 0;  // not timed
  t.kernels.push_back(k);
  k.start_ns = 3000, k.end_ns = 2500;  // ends before it starts
  t.kernels.push_back(k);
  t.memcpys[0].start_ns = 0;
  t.memcpys[0].end_ns = 600;
  write_ktrace(dir.path / "t.ktrace", t);

  const KtraceReader reader(dir.path / "t.ktrace");
  std::vector<std::uint64_t> starts;
  reader.kernels([&](const KernelRecord& r) { starts.push_back(r.start_ns); });
  EXPECT_EQ(starts, (std::vector<std::uint64_t>{1000}));
  EXPECT_EQ(reader.skipped().count, 2u);
  EXPECT_EQ(reader.skipped().first, "kernels record 2 (start_ns 0: CUPTI collected no timestamp)");
  std::size_t memcpys = 0;
  reader.memcpys([&](const MemcpyRecord&) { ++memcpys; });
  EXPECT_EQ(memcpys, 0u);
  EXPECT_EQ(reader.skipped().count, 3u);
  reader.kernels([](const KernelRecord&) {});  // a repeated visit does not count twice
  EXPECT_EQ(reader.skipped().count, 3u);
  EXPECT_EQ(reader.origin_ns(), std::optional<std::uint64_t>(300));  // the NVTX range
}

TEST(KtraceReader, RowsNoTracerWritesGetOneSentence) {
  // Text, real or negative timestamps were read as 0 or as wrapped values, silently.
  TempDir dir;
  const struct {
    const char* sql;
    const char* needle;
  } cases[] = {
      {"UPDATE kernels SET start_ns = 'soon' WHERE id = 1",
       "kernels record 1 has text in column start_ns"},
      {"UPDATE kernels SET end_ns = 1.5 WHERE id = 2",
       "kernels record 2 has a real number in column end_ns"},
      {"UPDATE memcpys SET device_id = NULL", "memcpys record 1 has no value in column device_id"},
      {"UPDATE api_calls SET end_ns = -5 WHERE id = 1",
       "api_calls record 1 has -5 in column end_ns"},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    const auto p = dir.path / ("bad" + std::to_string(n++) + ".ktrace");
    write_ktrace(p, sample_trace());
    tamper(p, c.sql);
    EXPECT_NE(read_error(p).find(c.needle), std::string::npos) << read_error(p);
  }
}

TEST(KtraceReader, MetadataOfTheWrongTypeGetsOneSentence) {
  // A string schema_version used to surface as "internal error: [json.exception.type_error.302]".
  TempDir dir;
  const struct {
    const char* sql;
    const char* needle;
  } cases[] = {
      {"UPDATE metadata SET value = '\"1\"' WHERE key = 'schema_version'",
       "metadata field 'schema_version' must be a whole number, not \"1\""},
      {"UPDATE metadata SET value = '1.5e300' WHERE key = 'pid'",
       "field 'pid' must be a whole number, not 1.5e+300"},
      {"UPDATE metadata SET value = 'yes' WHERE key = 'complete'",
       "field 'complete' is not valid JSON"},
      {"UPDATE metadata SET value = '[1, 2]' WHERE key = 'command_line'",
       "field 'command_line' must be a list of strings, not [1,2]"},
      {"UPDATE metadata SET value = '{\"delay_s\": \"soon\"}' WHERE key = 'window'",
       "field 'window.delay_s' must be a number, not \"soon\""},
      {"UPDATE metadata SET value = '{\"host\": 7}' WHERE key = 'identity'", "field 'identity'"},
      {"UPDATE metadata SET value = '{}' WHERE key = 'ceilings'",
       "field 'ceilings' must be an array"},
      {"UPDATE metadata SET value = '[{\"dram_bytes_per_s\": \"fast\"}]' WHERE key = 'ceilings'",
       "field 'ceilings[0].dram_bytes_per_s' must be a number, not \"fast\""},
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.sql);
    const auto p = dir.path / ("meta" + std::to_string(n++) + ".ktrace");
    write_ktrace(p, sample_trace());
    tamper(p, c.sql);
    EXPECT_NE(read_error(p).find(c.needle), std::string::npos) << read_error(p);
  }
}

TEST(Ktrace, CommandLineThatIsNotUtf8IsWritten) {
  // A program started with a Latin-1 argument: the strict JSON dump of the metadata threw, so the
  // tracer stopped writing that trace.
  TempDir dir;
  Trace t = sample_trace();
  t.metadata.command_line = {"prog", "caf\xe9"};
  ASSERT_NO_THROW(write_ktrace(dir.path / "t.ktrace", t));
  const Trace out = read_ktrace(dir.path / "t.ktrace");
  EXPECT_EQ(out.metadata.command_line,
            (std::vector<std::string>{"prog", "caf\xef\xbf\xbd"}));  // U+FFFD
  EXPECT_EQ(out.kernels.size(), t.kernels.size());
}

TEST(Ktrace, Demangles) {
  EXPECT_EQ(demangle("_Z3addPfi"), "add(float*, int)");
  EXPECT_EQ(demangle("plain_c_kernel"), "plain_c_kernel");
  EXPECT_EQ(demangle("_Znot-valid"), "_Znot-valid");
}

// Counter values of two launches, written out of order: they come back by correlation id, every
// field intact, with metric names interned like any other string.
TEST(Ktrace, CountersRoundTripOrderedByCorrelationId) {
  TempDir dir;
  Trace in = sample_trace();
  in.counters = {{1, 43, "dram__bytes_read.sum", 1.5e9},
                 {0, 42, "gpu__time_duration.sum", 4000},
                 {0, 42, "dram__bytes_read.sum", 12345678901.0},
                 {1, 43, "sm__warps_active.avg.pct_of_peak_sustained_active", 62.25}};
  write_ktrace(dir.path / "t.ktrace", in);
  const Trace out = read_ktrace(dir.path / "t.ktrace");
  ASSERT_EQ(out.counters.size(), 4u);
  EXPECT_EQ(out.counters[0].correlation_id, 42u);
  EXPECT_EQ(out.counters[0].metric, "gpu__time_duration.sum");  // insertion order within a launch
  EXPECT_EQ(out.counters[0].value, 4000);
  EXPECT_EQ(out.counters[1].value, 12345678901.0);
  EXPECT_EQ(out.counters[2].device_id, 1u);
  EXPECT_EQ(out.counters[2].metric, "dram__bytes_read.sum");
  EXPECT_EQ(out.counters[3].value, 62.25);
  EXPECT_EQ(KtraceReader(dir.path / "t.ktrace").counts().counters, 4u);
}

// The recorded H200 layer trace predates the counter tier (schema_version 1, no counters table):
// it still opens, reads its kernels and has no counters.
TEST(Ktrace, VersionOneTraceStillReads) {
  const auto fixture = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "traces" /
                       "torch_layer_h200.ktrace";
  TempDir dir;
  std::filesystem::copy_file(fixture, dir.path / "v1.ktrace");  // opening may roll back a journal
  const KtraceReader reader(dir.path / "v1.ktrace");
  EXPECT_EQ(reader.metadata().schema_version, 1);
  EXPECT_GT(reader.counts().kernels, 0u);
  EXPECT_EQ(reader.counts().counters, 0u);
  std::size_t counters = 0;
  reader.counters([&](const CounterRecord&) { ++counters; });
  EXPECT_EQ(counters, 0u);
}

TraceCeilings h100_datasheet() {
  TraceCeilings c;
  c.device_uuid = "GPU-5e1d";
  c.dram_bytes_per_s = 3.35e12;
  c.fp32_flop_per_s = 66.9e12;
  c.bf16_flop_per_s = c.fp16_flop_per_s = 989.4e12;
  c.kind = "datasheet";
  c.source = "datasheet of the NVIDIA H100 SXM5 80GB";
  return c;
}

void expect_same(const TraceCeilings& a, const TraceCeilings& b) {
  EXPECT_EQ(std::tie(a.device_uuid, a.dram_bytes_per_s, a.fp32_flop_per_s, a.bf16_flop_per_s,
                     a.fp16_flop_per_s, a.kind, a.source),
            std::tie(b.device_uuid, b.dram_bytes_per_s, b.fp32_flop_per_s, b.bf16_flop_per_s,
                     b.fp16_flop_per_s, b.kind, b.source));
}

// The ceilings a trace was profiled under travel in its metadata, written with the trace or filed
// afterwards (ktune profile does, once the program exits).
TEST(Ktrace, CeilingsRoundTripAndAreFiledIntoAFinishedTrace) {
  TempDir dir;
  Trace in = sample_trace();
  in.metadata.ceilings = {h100_datasheet()};
  write_ktrace(dir.path / "with.ktrace", in);
  const TraceMetadata with = read_ktrace(dir.path / "with.ktrace").metadata;
  ASSERT_EQ(with.ceilings.size(), 1u);
  expect_same(with.ceilings[0], h100_datasheet());

  write_ktrace(dir.path / "later.ktrace", sample_trace());
  EXPECT_TRUE(read_ktrace(dir.path / "later.ktrace").metadata.ceilings.empty());
  TraceCeilings calibrated = h100_datasheet();
  calibrated.kind = "calibration";
  calibrated.dram_bytes_per_s = 3.0e12;
  write_ktrace_ceilings(dir.path / "later.ktrace", {calibrated});
  const Trace later = read_ktrace(dir.path / "later.ktrace");
  ASSERT_EQ(later.metadata.ceilings.size(), 1u);
  expect_same(later.metadata.ceilings[0], calibrated);
  EXPECT_EQ(later.kernels.size(), sample_trace().kernels.size());  // nothing else changed
}

// Older traces have no ceilings: they read as having none, and none are filed into them (the
// metadata would claim a schema the file does not have).
TEST(Ktrace, AnOlderTraceReadsWithoutCeilingsAndTakesNone) {
  const auto fixture = std::filesystem::path(KTUNE_SOURCE_DIR) / "tests" / "fixtures" / "traces" /
                       "torch_layer_h200.ktrace";
  TempDir dir;
  std::filesystem::copy_file(fixture, dir.path / "old.ktrace");
  EXPECT_LT(KtraceReader(dir.path / "old.ktrace").metadata().schema_version, 5);
  EXPECT_TRUE(KtraceReader(dir.path / "old.ktrace").metadata().ceilings.empty());
  try {
    write_ktrace_ceilings(dir.path / "old.ktrace", {h100_datasheet()});
    FAIL() << "expected ktune::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ceilings are filed only into traces of version 6"),
              std::string::npos)
        << e.what();
  }
}

GemmCallRecord gemm_bias_call() {
  GemmCallRecord g;
  g.m = 11008;
  g.n = 2048;
  g.k = 4096;
  g.lda = 4096;
  g.ldb = 4096;
  g.ldc = g.ldd = 11008;
  g.a_type = g.b_type = g.c_type = g.d_type = "R_16F";
  g.compute_type = "COMPUTE_32F";
  g.scale_type = "R_32F";
  g.transa = "OP_T";
  g.epilogue = "EPILOGUE_BIAS";
  g.algo_id = 66;
  g.tile = "MATMUL_TILE_192x192";
  g.stages = "MATMUL_STAGES_64xAUTO";
  g.calls = 40;
  return g;
}

void expect_same(const GemmCallRecord& a, const GemmCallRecord& b) {
  EXPECT_EQ(
      std::tie(a.m, a.n, a.k, a.batch, a.lda, a.ldb, a.ldc, a.ldd, a.algo_id, a.splits, a.calls),
      std::tie(b.m, b.n, b.k, b.batch, b.lda, b.ldb, b.ldc, b.ldd, b.algo_id, b.splits, b.calls));
  EXPECT_EQ(std::tie(a.a_type, a.b_type, a.c_type, a.d_type, a.compute_type, a.scale_type, a.transa,
                     a.transb, a.epilogue, a.tile, a.stages, a.reduction),
            std::tie(b.a_type, b.b_type, b.c_type, b.d_type, b.compute_type, b.scale_type, b.transa,
                     b.transb, b.epilogue, b.tile, b.stages, b.reduction));
}

TEST(Ktrace, GemmCallsRoundTrip) {
  TempDir dir;
  Trace in = sample_trace();
  GemmCallRecord split = gemm_bias_call();
  split.m = 256;
  split.n = 16;
  split.epilogue = "EPILOGUE_DEFAULT";
  split.splits = 3;
  split.reduction = "REDUCTION_SCHEME_COMPUTE_TYPE";
  split.calls = 1;
  in.gemm_calls = {gemm_bias_call(), split};
  write_ktrace(dir.path / "t.ktrace", in);
  const Trace out = read_ktrace(dir.path / "t.ktrace");
  ASSERT_EQ(out.gemm_calls.size(), 2u);
  expect_same(out.gemm_calls[0], in.gemm_calls[0]);
  expect_same(out.gemm_calls[1], in.gemm_calls[1]);
  EXPECT_EQ(KtraceReader(dir.path / "t.ktrace").counts().gemm_calls, 2u);
}

TEST(Ktrace, GemmEventsRoundTripInTimeOrder) {
  TempDir dir;
  Trace in = sample_trace();
  in.gemm_calls = {gemm_bias_call()};
  in.gemm_events = {{7, 11, 2000, 0}, {7, 12, 1000, 0}};
  write_ktrace(dir.path / "t.ktrace", in);
  std::vector<GemmEventRecord> out;
  KtraceReader(dir.path / "t.ktrace").gemm_events([&](const GemmEventRecord& e) {
    out.push_back(e);
  });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::tie(out[0].process_id, out[0].thread_id, out[0].time_ns, out[0].call),
            std::tie(in.gemm_events[1].process_id, in.gemm_events[1].thread_id,
                     in.gemm_events[1].time_ns, in.gemm_events[1].call));
  EXPECT_EQ(out[1].time_ns, 2000u);
  EXPECT_EQ(KtraceReader(dir.path / "t.ktrace").counts().gemm_events, 2u);
}

// A trace of schema 3 has gemm_calls without the stride columns and no gemm_events table: it
// reads, strides 0, no events. (Made here from a current one, as the tracer of 3 wrote it.)
TEST(Ktrace, AVersion3TraceReadsItsGemmCallsWithoutStridesOrEvents) {
  TempDir dir;
  Trace in = sample_trace();
  GemmCallRecord batched = gemm_bias_call();
  batched.batch = 4;
  batched.stride_a = 99;
  in.gemm_calls = {batched};
  in.gemm_events = {{1, 2, 3, 0}};
  write_ktrace(dir.path / "t.ktrace", in);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path / "t.ktrace").c_str(), &db), SQLITE_OK);
  for (const char* sql :
       {"ALTER TABLE gemm_calls DROP COLUMN stride_a",
        "ALTER TABLE gemm_calls DROP COLUMN stride_b",
        "ALTER TABLE gemm_calls DROP COLUMN stride_c",
        "ALTER TABLE gemm_calls DROP COLUMN stride_d", "DROP TABLE gemm_events",
        "UPDATE metadata SET value='3' WHERE key='schema_version'", "PRAGMA user_version=3"})
    ASSERT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sql;
  sqlite3_close(db);
  const KtraceReader r(dir.path / "t.ktrace");
  EXPECT_EQ(r.metadata().schema_version, 3);
  std::vector<GemmCallRecord> calls;
  r.gemm_calls([&](const GemmCallRecord& c) { calls.push_back(c); });
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].batch, 4);
  EXPECT_EQ(calls[0].stride_a, 0);
  std::size_t events = 0;
  r.gemm_events([&](const GemmEventRecord&) { ++events; });
  EXPECT_EQ(events, 0u);
}

// A path the file system refuses (a name over 255 bytes) is one sentence, not an escaped
// std::filesystem::filesystem_error.
TEST(Ktrace, APathTooLongToLookUpIsOneSentence) {
  const std::filesystem::path p =
      std::filesystem::temp_directory_path() / (std::string(300, 'k') + ".ktrace");
  const std::string msg = read_error(p);
  EXPECT_NE(msg.find("cannot be looked up"), std::string::npos) << msg;
}

TEST(Ktrace, GemmCallCountThatIsNotANumberIsOneSentence) {
  TempDir dir;
  Trace in = sample_trace();
  in.gemm_calls = {gemm_bias_call()};
  const auto p = dir.path / "t.ktrace";
  write_ktrace(p, in);
  tamper(p, "UPDATE gemm_calls SET calls = -3");
  const std::string msg = read_error(p);
  EXPECT_NE(msg.find("gemm_calls record 1 has -3 in column calls"), std::string::npos) << msg;
}

TEST(Ktrace, CounterValueThatIsNotANumberIsOneSentence) {
  TempDir dir;
  Trace in = sample_trace();
  in.counters = {{0, 42, "dram__bytes_read.sum", 1}};
  const auto p = dir.path / "t.ktrace";
  write_ktrace(p, in);
  tamper(p, "UPDATE counters SET value = 'lots'");
  const std::string msg = read_error(p);
  EXPECT_NE(msg.find("counters record 1 has text in column value"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ktune::trace
