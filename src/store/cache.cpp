// The tuning cache on top of a backend: the winner rule, lookups with fallback, staleness, packs.
#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "backend.hpp"
#include "columns.hpp"
#include "ktune/core/dtype.hpp"
#include "ktune/core/error.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/core/json.hpp"
#include "ktune/core/version.hpp"
#include "ktune/store/store.hpp"

namespace ktune::store {
namespace {

using detail::Param;
using detail::Params;
using detail::Row;

// cache_entries, whose first kKeyColumns columns are its primary key.
constexpr auto kEntries =
    detail::columns("op", "dtype", "bucket", "arch", "device_name", "toolkit", "driver_major",
                    "shape", "config", "median_ns", "noise_ns", "samples", "throughput",
                    "throughput_unit", "verification", "ktune_version", "ktune_commit", "host",
                    "strategy", "budget", "created_at", "invalidated_at", "invalid_reason");
constexpr std::size_t kKeyColumns = kEntries["driver_major"] + 1;
constexpr auto kOps = detail::columns("op", "buckets", "default_config", "updated_at");

// Bounded like every JSON ktune reads: a shared store is input from other machines too. The op,
// which the message names, is the first column of both tables.
static_assert(kEntries["op"] == 0 && kOps["op"] == 0);
nlohmann::json parse_column(const Row& row, std::size_t i, const char* what) {
  return parse_json(row.text(i),
                    fmt::format("the {} of a stored cache row of op {}", what, row.text(0)),
                    "remove the row with `ktune cache rm`");
}

CacheEntry entry_from_row(const Row& r) {
  constexpr auto c = kEntries;
  CacheEntry e;
  e.key = {r.text(c["op"]),
           r.text(c["dtype"]),
           r.text(c["bucket"]),
           r.text(c["arch"]),
           r.text(c["device_name"]),
           r.text(c["toolkit"]),
           static_cast<int>(r.i64(c["driver_major"]))};
  e.shape = parse_column(r, c["shape"], "shape").get<std::vector<std::int64_t>>();
  e.config = parse_column(r, c["config"], "config");
  e.median_ns = r.f64(c["median_ns"]);
  e.noise_ns = r.f64(c["noise_ns"]);
  e.samples = r.i64(c["samples"]);
  e.throughput = r.f64(c["throughput"]);
  e.throughput_unit = r.text(c["throughput_unit"]);
  e.verification = r.text(c["verification"]);
  e.provenance = {r.text(c["ktune_version"]), r.text(c["ktune_commit"]),
                  r.text(c["host"]),          r.text(c["created_at"]),
                  r.text(c["strategy"]),      parse_column(r, c["budget"], "budget")};
  if (!r.is_null(c["invalidated_at"])) {
    e.invalidated_at = r.text(c["invalidated_at"]);
    e.invalid_reason = r.text(c["invalid_reason"]);
  }
  return e;
}

// The values of every column of kEntries, in its order, for an entry that wins its key: a winner
// is never invalidated (invalidated_at and invalid_reason stay NULL).
Params entry_params(const CacheEntry& e) {
  constexpr auto c = kEntries;
  Params p(c.size());
  p[c["op"]] = e.key.op;
  p[c["dtype"]] = e.key.dtype;
  p[c["bucket"]] = e.key.bucket;
  p[c["arch"]] = e.key.arch;
  p[c["device_name"]] = e.key.device_name;
  p[c["toolkit"]] = e.key.toolkit;
  p[c["driver_major"]] = std::int64_t{e.key.driver_major};
  p[c["shape"]] = nlohmann::json(e.shape).dump();
  p[c["config"]] = e.config.dump();
  p[c["median_ns"]] = e.median_ns;
  p[c["noise_ns"]] = e.noise_ns;
  p[c["samples"]] = e.samples;
  p[c["throughput"]] = e.throughput;
  p[c["throughput_unit"]] = e.throughput_unit;
  p[c["verification"]] = e.verification;
  p[c["ktune_version"]] = e.provenance.ktune_version;
  p[c["ktune_commit"]] = e.provenance.ktune_commit;
  p[c["host"]] = e.provenance.host;
  p[c["strategy"]] = e.provenance.strategy;
  p[c["budget"]] = e.provenance.budget.dump();
  p[c["created_at"]] = e.provenance.created_at;
  return p;
}

// WHERE clause of a filter; placeholders continue from params.size().
std::string where_clause(const EntryFilter& f, Params& params) {
  std::vector<std::string> terms;
  auto eq = [&](const char* column, const std::string& value) {
    if (value.empty()) return;
    params.emplace_back(value);
    terms.push_back(fmt::format("{} = ${}", column, params.size()));
  };
  eq("op", f.op);
  eq("dtype", canonical_dtype_key(f.dtype));
  eq("arch", f.arch);
  eq("device_name", f.device_name);
  eq("toolkit", f.toolkit);
  if (!f.include_invalidated) terms.emplace_back("invalidated_at IS NULL");
  if (f.stale_relative_to) {
    // The SQL twin of stale_reason(): another toolkit, or another driver major where it matters.
    params.emplace_back(f.stale_relative_to->toolkit);
    const auto t = params.size();
    params.emplace_back(std::int64_t{f.stale_relative_to->driver_major});
    const auto d = params.size();
    terms.push_back(fmt::format(
        "(toolkit <> ${0} OR (driver_major <> 0 AND ${1} <> 0 AND driver_major <> ${1}))", t, d));
  }
  if (terms.empty()) return "";
  return fmt::format(" WHERE {}", fmt::join(terms, " AND "));
}

std::optional<OpSpec> read_op(detail::Backend& db, const std::string& op) {
  constexpr auto c = kOps;
  const auto rows = db.query(fmt::format("SELECT {} FROM cache_ops WHERE op = $1", c.list()), {op});
  if (rows.empty()) return std::nullopt;
  const Row& r = rows[0];
  OpSpec s;
  s.op = r.text(c["op"]);
  s.buckets = parse_column(r, c["buckets"], "bucket policy").get<BucketPolicy>();
  if (!r.is_null(c["default_config"]))
    s.default_config = parse_column(r, c["default_config"], "default config");
  return s;
}

void write_op(detail::Backend& db, const OpSpec& s) {
  db.exec(fmt::format("INSERT INTO cache_ops ({}) VALUES ({}) ON CONFLICT (op) DO UPDATE SET "
                      "buckets = excluded.buckets, default_config = excluded.default_config, "
                      "updated_at = excluded.updated_at",
                      kOps.list(), kOps.placeholders()),
          {s.op, nlohmann::json(s.buckets).dump(),
           s.default_config ? Param{s.default_config->dump()} : Param{nullptr}, utc_now_iso8601()});
}

// Fills what a writer may leave out: bucket (from the op's policy) and provenance defaults.
CacheEntry complete(CacheEntry e, detail::Backend& db) {
  const auto spec = read_op(db, e.key.op);
  e.key.bucket = bucket_name(bucket_of(spec ? spec->buckets : BucketPolicy{}, e.shape));
  auto& p = e.provenance;
  if (p.created_at.empty()) p.created_at = utc_now_iso8601();
  if (p.ktune_version.empty()) p.ktune_version = ktune::version();
  if (p.ktune_commit.empty()) p.ktune_commit = ktune::git_commit();
  if (p.host.empty()) p.host = host_identity().hostname;
  if (p.budget.is_null()) p.budget = nlohmann::json::object();
  return e;
}

// How far a result was checked against its reference: a checked one beats an unchecked one, which
// beats one whose output was wrong, whatever their times (a fast wrong answer is no winner).
int verification_rank(const std::string& verification) {
  if (verification == "passed") return 2;
  if (verification == "skipped") return 1;
  return 0;  // "failed"
}

// The winner rule, inside a write transaction.
PutResult put_locked(detail::Backend& db, const CacheEntry& offered, bool force) {
  const CacheEntry e = complete(offered, db);
  PutResult result;
  result.bucket = e.key.bucket;
  const Params params = entry_params(e);
  if (db.exec(fmt::format("INSERT INTO cache_entries ({}) VALUES ({}) ON CONFLICT DO NOTHING",
                          kEntries.list(), kEntries.placeholders()),
              params) == 1) {
    result.winner = true;
    result.reason = "new key";
    return result;
  }
  const Params key(params.begin(), params.begin() + kKeyColumns);
  const auto rows = db.query(fmt::format("SELECT {} FROM cache_entries WHERE {}{}", kEntries.list(),
                                         kEntries.bound(0, kKeyColumns, " AND "), db.for_update()),
                             key);
  if (rows.empty()) throw Error("internal: a cache row vanished inside its write transaction.");
  const double old_median = rows[0].f64(kEntries["median_ns"]);
  const double old_noise = rows[0].f64(kEntries["noise_ns"]);
  const std::string old_verification = rows[0].text(kEntries["verification"]);
  const int rank = verification_rank(e.verification),
            old_rank = verification_rank(old_verification);
  result.previous_median_ns = old_median;
  if (force) {
    result.reason = "forced";
  } else if (!rows[0].is_null(kEntries["invalidated_at"])) {
    result.reason = "the stored winner was invalidated";
  } else if (rank < old_rank) {
    result.reason = fmt::format("its verification is '{}', the stored winner's '{}'",
                                e.verification, old_verification);
    return result;
  } else if (rank > old_rank) {
    result.reason = fmt::format("its verification is '{}', the stored winner's only '{}'",
                                e.verification, old_verification);
  } else if (e.median_ns + e.noise_ns < old_median - old_noise) {
    result.reason = fmt::format("faster beyond noise ({:.6g} +- {:.3g} ns vs {:.6g} +- {:.3g} ns)",
                                e.median_ns, e.noise_ns, old_median, old_noise);
  } else {
    result.reason =
        fmt::format("not faster beyond noise ({:.6g} +- {:.3g} ns vs stored {:.6g} +- {:.3g} ns)",
                    e.median_ns, e.noise_ns, old_median, old_noise);
    return result;
  }
  db.exec(fmt::format("UPDATE cache_entries SET {} WHERE {}",
                      kEntries.bound(kKeyColumns, kEntries.size(), ", "),
                      kEntries.bound(0, kKeyColumns, " AND ")),
          params);
  result.winner = true;
  return result;
}

}  // namespace

void Store::put_op(const OpSpec& spec) {
  validate(spec, "op spec");
  detail::in_write_transaction(*db_, [&] { write_op(*db_, spec); });
}

std::optional<OpSpec> Store::get_op(const std::string& op) {
  return read_op(*db_, op);
}

std::vector<OpSpec> Store::ops() {
  std::vector<OpSpec> out;
  for (const auto& r : db_->query("SELECT op FROM cache_ops ORDER BY op", {}))
    if (auto s = read_op(*db_, r.text(0))) out.push_back(std::move(*s));
  return out;
}

PutResult Store::put_entry(const CacheEntry& given, bool force) {
  validate(given, "cache entry " + given.key.op);
  CacheEntry entry = given;
  entry.key.dtype = canonical_dtype_key(entry.key.dtype);
  PutResult result;
  detail::in_write_transaction(*db_, [&] { result = put_locked(*db_, entry, force); });
  return result;
}

std::optional<CacheEntry> Store::get_entry(const CacheKey& k) {
  const auto rows = db_->query(fmt::format("SELECT {} FROM cache_entries WHERE {}", kEntries.list(),
                                           kEntries.bound(0, kKeyColumns, " AND ")),
                               {k.op, canonical_dtype_key(k.dtype), k.bucket, k.arch, k.device_name,
                                k.toolkit, std::int64_t{k.driver_major}});
  if (rows.empty()) return std::nullopt;
  return entry_from_row(rows[0]);
}

std::vector<CacheEntry> Store::list_entries(const EntryFilter& filter) {
  Params params;
  const std::string where = where_clause(filter, params);
  std::vector<CacheEntry> out;
  for (const auto& r : db_->query(
           fmt::format("SELECT {} FROM cache_entries{} ORDER BY op, dtype, arch, device_name, "
                       "bucket, toolkit, driver_major",
                       kEntries.list(), where),
           params))
    out.push_back(entry_from_row(r));
  return out;
}

std::int64_t Store::remove_entries(const EntryFilter& filter) {
  Params params;
  EntryFilter f = filter;
  f.include_invalidated = true;  // rm removes what matches, valid or not
  const std::string where = where_clause(f, params);
  std::int64_t n = 0;
  detail::in_write_transaction(
      *db_, [&] { n = db_->exec(fmt::format("DELETE FROM cache_entries{}", where), params); });
  return n;
}

std::int64_t Store::invalidate(const EntryFilter& filter, const Environment& current,
                               bool only_stale, const std::string& reason) {
  EntryFilter f = filter;
  f.include_invalidated = false;
  if (only_stale) {
    if (current.toolkit.empty())
      throw Error("invalidating stale entries needs the current toolkit; pass --toolkit.");
    f.stale_relative_to = current;
  }
  Params params{utc_now_iso8601(), reason};
  const std::string where = where_clause(f, params);
  std::int64_t n = 0;
  detail::in_write_transaction(*db_, [&] {
    n = db_->exec(
        fmt::format("UPDATE cache_entries SET invalidated_at = $1, invalid_reason = $2{}", where),
        params);
  });
  return n;
}

LookupResult Store::lookup(const LookupQuery& q) {
  validate_shape(q.shape, "lookup of " + q.op);
  const auto spec = read_op(*db_, q.op);
  LookupResult result;
  result.bucket = bucket_name(bucket_of(spec ? spec->buckets : BucketPolicy{}, q.shape));
  EntryFilter f;
  f.op = q.op;
  f.dtype = q.dtype;
  f.arch = q.env.arch;
  f.device_name = q.env.device_name;
  Params params;
  // The common case first: the exact bucket on this device is one indexed probe.
  std::string where = where_clause(f, params);
  params.emplace_back(result.bucket);
  // An entry whose output failed verification is kept as data but never handed out.
  std::vector<CacheEntry> candidates;
  const auto add_servable = [&](const Row& r) {
    if (CacheEntry e = entry_from_row(r); servable(e)) candidates.push_back(std::move(e));
  };
  for (const auto& r : db_->query(fmt::format("SELECT {} FROM cache_entries{} AND bucket = ${}",
                                              kEntries.list(), where, params.size()),
                                  params))
    add_servable(r);
  if (candidates.empty()) {  // fallback: every entry of the op on this arch
    f.device_name.clear();
    params.clear();
    where = where_clause(f, params);
    for (const auto& r :
         db_->query(fmt::format("SELECT {} FROM cache_entries{}", kEntries.list(), where), params))
      add_servable(r);
  }
  const Choice choice = choose_entry(candidates, result.bucket, q.shape, q.env);
  if (choice.index >= 0) {
    CacheEntry& e = candidates[static_cast<std::size_t>(choice.index)];
    result.match = choice.match;
    result.config = e.config;
    result.stale_reason = stale_reason(e.key, q.env);
    result.stale = !result.stale_reason.empty();
    result.entry = std::move(e);
  } else if (spec && spec->default_config) {
    result.match = Match::default_config;
    result.config = *spec->default_config;
  }
  return result;
}

ImportResult Store::import_pack(const Pack& pack, bool force) {
  for (std::size_t i = 0; i < pack.ops.size(); ++i)
    validate(pack.ops[i], fmt::format("pack ops[{}]", i));
  for (std::size_t i = 0; i < pack.entries.size(); ++i)
    validate(pack.entries[i], fmt::format("pack entries[{}]", i));
  // A fixed order of row locks, so two imports cannot deadlock each other.
  std::vector<const CacheEntry*> order;
  for (const auto& e : pack.entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const CacheEntry* a, const CacheEntry* b) {
    const auto& x = a->key;
    const auto& y = b->key;
    return std::tie(x.op, x.dtype, x.arch, x.device_name, x.toolkit, x.driver_major) <
           std::tie(y.op, y.dtype, y.arch, y.device_name, y.toolkit, y.driver_major);
  });
  ImportResult result;
  detail::in_write_transaction(*db_, [&] {
    result = {};
    for (const auto& s : pack.ops) write_op(*db_, s);
    result.ops = pack.ops.size();
    for (const CacheEntry* e : order) {
      CacheEntry copy = *e;
      copy.invalidated_at.reset();
      copy.invalid_reason.reset();
      (put_locked(*db_, copy, force).winner ? result.winners : result.kept)++;
    }
  });
  return result;
}

Pack Store::export_pack(const EntryFilter& filter) {
  Pack pack;
  pack.created_at = utc_now_iso8601();
  pack.ktune_version = ktune::version();
  pack.entries = list_entries(filter);
  std::vector<std::string> names;
  for (const auto& e : pack.entries) names.push_back(e.key.op);
  if (!filter.op.empty()) names.push_back(filter.op);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const auto& n : names)
    if (auto s = read_op(*db_, n)) pack.ops.push_back(std::move(*s));
  return pack;
}

}  // namespace ktune::store
