// The fleet's SQL: runs and aggregates pushed in one transaction with multi-row inserts, totals
// grouped in the database, and the tuning queue's claim / heartbeat / finish with a fencing token
// (the claim's attempt number), so a worker that lost its lease can change nothing.
#include "ktune/store/fleet.hpp"

#include <fmt/format.h>

#include "backend.hpp"
#include "columns.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"

namespace ktune::store {
namespace {

using detail::Params;
using detail::Row;

// Rows per INSERT. A server: many, so a statement's round trip is small beside its rows (256 x 16
// = 4,096 parameters, far under PostgreSQL's 65,535). SQLite (a file, no round trip): few, because
// its parser looks each numbered parameter up in a list of the ones before it, a cost quadratic in
// the parameters of one statement (at 500 rows it took 75 % of a push).
std::size_t rows_per_insert(const detail::Backend& db) {
  return db.file() ? 8 : 256;
}

// The fleet's tables. fleet_aggregates and fleet_gemms repeat the run's build, job and start so
// that the ranking queries read one table.
constexpr auto kRuns =
    detail::columns("run_id", "location", "host", "pid", "started_at", "job", "build", "rank",
                    "tags", "complete", "launches", "ingested_at");
constexpr auto kAggregates = detail::columns("run_id", "kernel", "grid", "block", "gpu", "arch",
                                             "driver", "toolkit", "build", "job", "started_at",
                                             "calls", "total_ns", "min_ns", "max_ns", "sketch");
constexpr auto kGemms =
    detail::columns("run_id", "op", "dtype", "shape", "problem", "gpu", "arch", "driver", "toolkit",
                    "build", "job", "started_at", "calls", "gpu_ns");
constexpr auto kJobs = detail::columns("id", "spec", "op", "dtype", "bucket", "arch", "toolkit",
                                       "shape", "budget", "priority", "state", "worker", "attempt",
                                       "lease_until_ms", "evaluations", "created_at", "created_ms",
                                       "started_ms", "finished_ms", "result", "error", "library");

// Inserts `n` rows into `table`, as many per statement as the backend takes: `row(i)` gives row
// i's values, one per column of `c` in its order.
template <std::size_t N, class RowValues>
void insert_rows(detail::Backend& db, std::string_view table, const detail::Columns<N>& c,
                 std::size_t n, RowValues&& row) {
  const std::size_t batch = rows_per_insert(db);
  for (std::size_t first = 0; first < n; first += batch) {
    const std::size_t count = std::min(batch, n - first);
    std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ", table, c.list());
    Params params;
    params.reserve(count * N);
    for (std::size_t i = 0; i < count; ++i) {
      sql += fmt::format("{}({})", i ? "," : "", c.placeholders(i * N + 1));
      Params values = row(first + i);
      if (values.size() != N) throw Error(fmt::format("internal: a row of {} out of step.", table));
      params.insert(params.end(), values.begin(), values.end());
    }
    db.exec(sql, params);
  }
}

// " AND col = $n ..." for the filter's non-empty fields, numbering from params.size() + 1.
std::string where(const FleetFilter& f, Params& params) {
  std::string sql = " WHERE 1 = 1";
  auto add = [&](const std::string& clause, const std::string& value) {
    params.emplace_back(value);
    sql += fmt::format(" AND {}", fmt::format(fmt::runtime(clause), params.size()));
  };
  if (!f.since.empty()) add("started_at >= ${}", f.since);
  if (!f.build.empty()) add("build = ${}", f.build);
  if (!f.job.empty()) add("job = ${}", f.job);
  if (!f.gpu.empty()) {
    params.emplace_back(f.gpu);
    sql += fmt::format(" AND (gpu = ${0} OR arch = ${0})", params.size());
  }
  return sql;
}

FleetJob job_from_row(const Row& r) {
  constexpr auto c = kJobs;
  FleetJob j;
  j.library = r.text(c["library"]);
  j.id = r.text(c["id"]);
  j.spec = r.text(c["spec"]);
  j.op = r.text(c["op"]);
  j.dtype = r.text(c["dtype"]);
  j.bucket = r.text(c["bucket"]);
  j.arch = r.text(c["arch"]);
  j.toolkit = r.text(c["toolkit"]);
  j.shape = nlohmann::json::parse(r.text(c["shape"]), nullptr, false);
  j.budget = r.i64(c["budget"]);
  j.priority = r.f64(c["priority"]);
  j.state = r.text(c["state"]);
  j.worker = r.text(c["worker"]);
  j.attempt = r.i64(c["attempt"]);
  j.lease_until_ms = r.i64(c["lease_until_ms"]);
  j.evaluations = r.i64(c["evaluations"]);
  j.created_at = r.text(c["created_at"]);
  j.created_ms = r.i64(c["created_ms"]);
  j.started_ms = r.i64(c["started_ms"]);
  j.finished_ms = r.i64(c["finished_ms"]);
  if (!r.is_null(c["result"]))
    j.result = nlohmann::json::parse(r.text(c["result"]), nullptr, false);
  j.error = r.text(c["error"]);
  return j;
}

// A store last migrated by a ktune without the fleet (read without migrating: read_only) has no
// fleet tables; to its readers it holds no runs and no jobs. Nor GEMM problems or library jobs
// before schema 5.
bool has_fleet_tables(Store& store) {
  return store.schema_version() >= 4;
}
bool has_fleet_gemms(Store& store) {
  return store.schema_version() >= 5;
}

// What a reader selects: a store of schema 4 read without migrating has no library column.
std::string job_columns(Store& store) {
  return has_fleet_gemms(store) ? kJobs.list() : kJobs.list_with(kJobs["library"], "''");
}

}  // namespace

FleetStore::FleetStore(Store& store) : store_(store) {}

PushOutcome FleetStore::push_run(const FleetRun& run, const std::vector<FleetAggregate>& aggregates,
                                 const std::vector<FleetGemm>& gemms) {
  if (run.run_id.empty()) throw Error("a fleet run needs its content identity (FleetRun::run_id).");
  detail::Backend& db = *store_.db_;
  PushOutcome outcome = PushOutcome::added;
  detail::in_write_transaction(db, [&] {
    outcome = PushOutcome::added;
    const auto existing =
        db.query(std::string("SELECT complete FROM fleet_runs WHERE run_id = $1") +
                     std::string(db.for_update()),
                 {run.run_id});
    if (!existing.empty()) {
      if (existing[0].i64(0) != 0 || !run.complete) {
        outcome = PushOutcome::already_ingested;
        return;
      }
      db.exec("DELETE FROM fleet_aggregates WHERE run_id = $1", {run.run_id});
      db.exec("DELETE FROM fleet_gemms WHERE run_id = $1", {run.run_id});
      db.exec("DELETE FROM fleet_runs WHERE run_id = $1", {run.run_id});
      outcome = PushOutcome::replaced;
    }
    insert_rows(db, "fleet_runs", kRuns, 1, [&](std::size_t) -> Params {
      return {run.run_id,
              run.location,
              run.host,
              run.pid,
              run.started_at,
              run.job,
              run.build,
              run.rank,
              run.tags.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
              std::int64_t{run.complete ? 1 : 0},
              run.launches,
              utc_now_iso8601()};
    });
    insert_rows(db, "fleet_aggregates", kAggregates, aggregates.size(),
                [&](std::size_t i) -> Params {
                  const FleetAggregate& a = aggregates[i];
                  return {run.run_id, a.kernel,  a.grid,    a.block, a.gpu,          a.arch,
                          a.driver,   a.toolkit, run.build, run.job, run.started_at, a.calls,
                          a.total_ns, a.min_ns,  a.max_ns,  a.sketch};
                });
    insert_rows(db, "fleet_gemms", kGemms, gemms.size(), [&](std::size_t i) -> Params {
      const FleetGemm& g = gemms[i];
      return {run.run_id, g.op,           g.dtype,  g.shape.dump(), g.problem.dump(),
              g.gpu,      g.arch,         g.driver, g.toolkit,      run.build,
              run.job,    run.started_at, g.calls,  g.gpu_ns};
    });
  });
  return outcome;
}

std::vector<FleetLaunchTotal> FleetStore::launch_totals(const FleetFilter& filter,
                                                        const std::vector<std::string>& kernels) {
  if (!has_fleet_tables(store_) || kernels.empty()) return {};
  Params params;
  std::string sql = "SELECT kernel, grid, block, SUM(calls), SUM(total_ns) FROM fleet_aggregates" +
                    where(filter, params) + " AND kernel IN (";
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    params.emplace_back(kernels[i]);
    sql += fmt::format("{}${}", i ? "," : "", params.size());
  }
  sql += ") GROUP BY kernel, grid, block ORDER BY 5 DESC, kernel, grid, block";
  std::vector<FleetLaunchTotal> out;
  for (const Row& r : store_.db_->query(sql, params))
    out.push_back({r.text(0), r.text(1), r.text(2), r.i64(3), r.i64(4)});
  return out;
}

std::vector<FleetGemmTotal> FleetStore::gemm_totals(const FleetFilter& filter) {
  if (!has_fleet_gemms(store_)) return {};
  Params params;
  // The problem JSON is the same for every row of one key but its leading dimensions (the first
  // run's stands for all); MIN picks one deterministically.
  const std::string sql =
      "SELECT op, dtype, shape, arch, SUM(calls), SUM(gpu_ns), COUNT(DISTINCT run_id), "
      "MIN(problem) FROM fleet_gemms" +
      where(filter, params) + " GROUP BY op, dtype, shape, arch ORDER BY 6 DESC, op, shape";
  std::vector<FleetGemmTotal> out;
  for (const Row& r : store_.db_->query(sql, params)) {
    FleetGemmTotal t;
    t.op = r.text(0);
    t.dtype = r.text(1);
    t.shape = nlohmann::json::parse(r.text(2), nullptr, false);
    t.arch = r.text(3);
    t.calls = r.i64(4);
    t.gpu_ns = r.i64(5);
    t.runs = r.i64(6);
    t.problem = nlohmann::json::parse(r.text(7), nullptr, false);
    out.push_back(std::move(t));
  }
  return out;
}

std::int64_t FleetStore::run_count() {
  if (!has_fleet_tables(store_)) return 0;
  return store_.db_->query("SELECT COUNT(*) FROM fleet_runs")[0].i64(0);
}

std::vector<FleetKernelTotal> FleetStore::kernel_totals(const FleetFilter& filter) {
  if (!has_fleet_tables(store_)) return {};
  Params params;
  const std::string sql =
      "SELECT kernel, SUM(calls), SUM(total_ns), MIN(min_ns), MAX(max_ns) FROM fleet_aggregates" +
      where(filter, params) + " GROUP BY kernel ORDER BY 3 DESC, kernel";
  std::vector<FleetKernelTotal> out;
  for (const Row& r : store_.db_->query(sql, params))
    out.push_back({r.text(0), r.i64(1), r.i64(2), r.i64(3), r.i64(4)});
  return out;
}

std::vector<FleetSketchRow> FleetStore::sketches(const FleetFilter& filter,
                                                 const std::vector<std::string>& kernels) {
  if (!has_fleet_tables(store_)) return {};
  Params params;
  std::string sql =
      "SELECT kernel, build, run_id, sketch FROM fleet_aggregates" + where(filter, params);
  if (!kernels.empty()) {
    sql += " AND kernel IN (";
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      params.emplace_back(kernels[i]);
      sql += fmt::format("{}${}", i ? "," : "", params.size());
    }
    sql += ')';
  }
  std::vector<FleetSketchRow> out;
  for (const Row& r : store_.db_->query(sql, params))
    out.push_back({r.text(0), r.text(1), r.text(2), r.text(3)});
  return out;
}

FleetStore::AddOutcome FleetStore::add_job(const FleetJob& j, bool retry_failed) {
  constexpr auto c = kJobs;
  Params p(c.size());  // result stays NULL
  p[c["id"]] = j.id;
  p[c["spec"]] = j.spec;
  p[c["op"]] = j.op;
  p[c["dtype"]] = j.dtype;
  p[c["bucket"]] = j.bucket;
  p[c["arch"]] = j.arch;
  p[c["toolkit"]] = j.toolkit;
  p[c["shape"]] = j.shape.dump();
  p[c["budget"]] = j.budget;
  p[c["priority"]] = j.priority;
  p[c["state"]] = std::string("queued");
  p[c["worker"]] = std::string();
  p[c["attempt"]] = p[c["lease_until_ms"]] = p[c["evaluations"]] = std::int64_t{0};
  p[c["created_at"]] = j.created_at;
  p[c["created_ms"]] = j.created_ms;
  p[c["started_ms"]] = p[c["finished_ms"]] = std::int64_t{0};
  p[c["error"]] = std::string();
  p[c["library"]] = j.library;
  AddOutcome outcome = AddOutcome::exists;
  detail::in_write_transaction(*store_.db_, [&] {
    outcome = AddOutcome::exists;
    if (store_.db_->exec(fmt::format("INSERT INTO fleet_jobs ({}) VALUES ({}) ON CONFLICT DO "
                                     "NOTHING",
                                     c.list(), c.placeholders()),
                         p) == 1)
      outcome = AddOutcome::added;
    else if (retry_failed &&
             store_.db_->exec("UPDATE fleet_jobs SET state = 'queued', worker = '', attempt = 0, "
                              "lease_until_ms = 0, finished_ms = 0, result = NULL, error = '' "
                              "WHERE id = $1 AND state = 'failed'",
                              {j.id}) == 1)
      outcome = AddOutcome::requeued;
  });
  return outcome;
}

std::vector<FleetJob> FleetStore::jobs() {
  std::vector<FleetJob> out;
  if (!has_fleet_tables(store_)) return out;
  for (const Row& r : store_.db_->query(
           fmt::format("SELECT {} FROM fleet_jobs ORDER BY created_ms, id", job_columns(store_))))
    out.push_back(job_from_row(r));
  return out;
}

std::int64_t FleetStore::pending_jobs() {
  return store_.db_
      ->query("SELECT COUNT(*) FROM fleet_jobs WHERE state IN ('queued', 'running')")[0]
      .i64(0);
}

std::optional<FleetJob> FleetStore::job(const std::string& id) {
  const auto rows = store_.db_->query(
      fmt::format("SELECT {} FROM fleet_jobs WHERE id = $1", job_columns(store_)), {id});
  if (rows.empty()) return std::nullopt;
  return job_from_row(rows[0]);
}

std::optional<FleetJob> FleetStore::claim(const std::string& worker, const std::string& arch,
                                          const std::string& toolkit, std::int64_t lease_ms,
                                          std::int64_t now_ms, int max_attempts,
                                          const std::vector<std::string>& skip) {
  detail::Backend& db = *store_.db_;
  detail::Params params{now_ms, arch, toolkit};
  std::string skipped;
  for (const std::string& id : skip) {
    params.push_back(id);
    skipped += fmt::format("{}${}", skipped.empty() ? " AND id NOT IN (" : ", ", params.size());
  }
  if (!skipped.empty()) skipped += ")";
  // Where the backend takes row locks (PostgreSQL), a row another claim holds is skipped rather
  // than waited for; SQLite's BEGIN IMMEDIATE already serialises claims.
  const std::string lock =
      db.for_update().empty() ? "" : std::string(db.for_update()) + " SKIP LOCKED";
  std::optional<FleetJob> claimed;
  detail::in_write_transaction(db, [&] {
    claimed.reset();
    db.exec(
        "UPDATE fleet_jobs SET state = 'failed', finished_ms = $1, error = 'its worker stopped "
        "before finishing it ' || CAST(attempt AS TEXT) || ' times (lease expired)' "
        "WHERE state = 'running' AND lease_until_ms < $1 AND attempt >= $2",
        {now_ms, std::int64_t{max_attempts}});
    const auto rows = db.query(
        "SELECT id FROM fleet_jobs WHERE (state = 'queued' OR (state = 'running' AND "
        "lease_until_ms < $1)) AND (arch = '' OR arch = $2) AND (toolkit = '' OR toolkit = $3)" +
            skipped + " ORDER BY priority DESC, created_ms, id LIMIT 1" + lock,
        params);
    if (rows.empty()) return;
    const std::string id = rows[0].text(0);
    db.exec(
        "UPDATE fleet_jobs SET state = 'running', worker = $2, attempt = attempt + 1, "
        "lease_until_ms = $3, started_ms = $4 WHERE id = $1",
        {id, worker, now_ms + lease_ms, now_ms});
    claimed = job_from_row(
        db.query(fmt::format("SELECT {} FROM fleet_jobs WHERE id = $1", kJobs.list()), {id})[0]);
  });
  return claimed;
}

bool FleetStore::heartbeat(const std::string& id, std::int64_t attempt, std::int64_t lease_until_ms,
                           std::int64_t evaluations) {
  return store_.db_->exec(
             "UPDATE fleet_jobs SET lease_until_ms = $3, evaluations = $4 WHERE id = $1 AND "
             "attempt = $2 AND state = 'running'",
             {id, attempt, lease_until_ms, evaluations}) == 1;
}

bool FleetStore::release(const std::string& id, std::int64_t attempt, std::int64_t evaluations) {
  return store_.db_->exec(
             "UPDATE fleet_jobs SET state = 'queued', worker = '', attempt = attempt - 1, "
             "lease_until_ms = 0, evaluations = $3 WHERE id = $1 AND attempt = $2 AND "
             "state = 'running'",
             {id, attempt, evaluations}) == 1;
}

bool FleetStore::retry(const std::string& id, std::int64_t attempt, std::int64_t evaluations,
                       const std::string& error) {
  return store_.db_->exec(
             "UPDATE fleet_jobs SET state = 'queued', worker = '', lease_until_ms = 0, "
             "evaluations = $3, error = $4 WHERE id = $1 AND attempt = $2 AND state = 'running'",
             {id, attempt, evaluations, error}) == 1;
}

bool FleetStore::finish(const std::string& id, std::int64_t attempt, bool done, std::int64_t now_ms,
                        std::int64_t evaluations, const nlohmann::json& result,
                        const std::string& error) {
  return store_.db_->exec(
             "UPDATE fleet_jobs SET state = $3, finished_ms = $4, evaluations = $5, result = $6, "
             "error = $7, lease_until_ms = 0 WHERE id = $1 AND attempt = $2 AND state = 'running'",
             {id, attempt, std::string(done ? "done" : "failed"), now_ms, evaluations,
              result.is_null() ? detail::Param{nullptr} : detail::Param{result.dump()}, error}) ==
         1;
}

}  // namespace ktune::store
