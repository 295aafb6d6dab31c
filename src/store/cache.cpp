// The tuning cache on top of a backend: the winner rule, lookups with fallback, staleness, packs.
#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "backend.hpp"
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

constexpr const char* kEntryColumns =
    "op, dtype, bucket, arch, device_name, toolkit, driver_major, shape, config, median_ns, "
    "noise_ns, samples, throughput, throughput_unit, verification, ktune_version, ktune_commit, "
    "host, strategy, budget, created_at, invalidated_at, invalid_reason";

// Bounded like every JSON ktune reads: a shared store is input from other machines too.
nlohmann::json parse_column(const Row& row, std::size_t i, const char* what) {
  return parse_json(row.text(i),
                    fmt::format("the {} of a stored cache row of op {}", what, row.text(0)),
                    "remove the row with `ktune cache rm`");
}

CacheEntry entry_from_row(const Row& r) {
  CacheEntry e;
  e.key = {
      r.text(0), r.text(1), r.text(2), r.text(3), r.text(4), r.text(5), static_cast<int>(r.i64(6))};
  e.shape = parse_column(r, 7, "shape").get<std::vector<std::int64_t>>();
  e.config = parse_column(r, 8, "config");
  e.median_ns = r.f64(9);
  e.noise_ns = r.f64(10);
  e.samples = r.i64(11);
  e.throughput = r.f64(12);
  e.throughput_unit = r.text(13);
  e.verification = r.text(14);
  e.provenance = {r.text(15), r.text(16), r.text(17),
                  r.text(20), r.text(18), parse_column(r, 19, "budget")};
  if (!r.is_null(21)) {
    e.invalidated_at = r.text(21);
    e.invalid_reason = r.text(22);
  }
  return e;
}

Params entry_params(const CacheEntry& e) {
  return {e.key.op,
          e.key.dtype,
          e.key.bucket,
          e.key.arch,
          e.key.device_name,
          e.key.toolkit,
          std::int64_t{e.key.driver_major},
          nlohmann::json(e.shape).dump(),
          e.config.dump(),
          e.median_ns,
          e.noise_ns,
          e.samples,
          e.throughput,
          e.throughput_unit,
          e.verification,
          e.provenance.ktune_version,
          e.provenance.ktune_commit,
          e.provenance.host,
          e.provenance.strategy,
          e.provenance.budget.dump(),
          e.provenance.created_at};
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
  const auto rows =
      db.query("SELECT op, buckets, default_config FROM cache_ops WHERE op = $1", {op});
  if (rows.empty()) return std::nullopt;
  OpSpec s;
  s.op = rows[0].text(0);
  s.buckets = parse_column(rows[0], 1, "bucket policy").get<BucketPolicy>();
  if (!rows[0].is_null(2)) s.default_config = parse_column(rows[0], 2, "default config");
  return s;
}

void write_op(detail::Backend& db, const OpSpec& s) {
  db.exec(
      "INSERT INTO cache_ops (op, buckets, default_config, updated_at) VALUES ($1, $2, $3, $4) "
      "ON CONFLICT (op) DO UPDATE SET buckets = excluded.buckets, "
      "default_config = excluded.default_config, updated_at = excluded.updated_at",
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

// The winner rule, inside a write transaction.
PutResult put_locked(detail::Backend& db, const CacheEntry& offered, bool force) {
  const CacheEntry e = complete(offered, db);
  PutResult result;
  result.bucket = e.key.bucket;
  const Params params = entry_params(e);
  const std::string insert = fmt::format(
      "INSERT INTO cache_entries ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
      "$12, $13, $14, $15, $16, $17, $18, $19, $20, $21, NULL, NULL)",
      kEntryColumns);
  if (db.exec(insert + " ON CONFLICT DO NOTHING", params) == 1) {
    result.winner = true;
    result.reason = "new key";
    return result;
  }
  const auto rows = db.query(
      fmt::format("SELECT median_ns, noise_ns, invalidated_at FROM cache_entries WHERE op = $1 "
                  "AND dtype = $2 AND bucket = $3 AND arch = $4 AND device_name = $5 AND "
                  "toolkit = $6 AND driver_major = $7{}",
                  db.for_update()),
      {e.key.op, e.key.dtype, e.key.bucket, e.key.arch, e.key.device_name, e.key.toolkit,
       std::int64_t{e.key.driver_major}});
  if (rows.empty()) throw Error("internal: a cache row vanished inside its write transaction.");
  const double old_median = rows[0].f64(0), old_noise = rows[0].f64(1);
  result.previous_median_ns = old_median;
  if (force) {
    result.reason = "forced";
  } else if (!rows[0].is_null(2)) {
    result.reason = "the stored winner was invalidated";
  } else if (e.median_ns + e.noise_ns < old_median - old_noise) {
    result.reason = fmt::format("faster beyond noise ({:.6g} +- {:.3g} ns vs {:.6g} +- {:.3g} ns)",
                                e.median_ns, e.noise_ns, old_median, old_noise);
  } else {
    result.reason =
        fmt::format("not faster beyond noise ({:.6g} +- {:.3g} ns vs stored {:.6g} +- {:.3g} ns)",
                    e.median_ns, e.noise_ns, old_median, old_noise);
    return result;
  }
  db.exec(
      "UPDATE cache_entries SET shape = $8, config = $9, median_ns = $10, noise_ns = $11, "
      "samples = $12, throughput = $13, throughput_unit = $14, verification = $15, "
      "ktune_version = $16, ktune_commit = $17, host = $18, strategy = $19, budget = $20, "
      "created_at = $21, invalidated_at = NULL, invalid_reason = NULL WHERE op = $1 AND "
      "dtype = $2 AND bucket = $3 AND arch = $4 AND device_name = $5 AND toolkit = $6 AND "
      "driver_major = $7",
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
  const auto rows = db_->query(
      fmt::format("SELECT {} FROM cache_entries WHERE op = $1 AND dtype = $2 AND bucket = $3 AND "
                  "arch = $4 AND device_name = $5 AND toolkit = $6 AND driver_major = $7",
                  kEntryColumns),
      {k.op, canonical_dtype_key(k.dtype), k.bucket, k.arch, k.device_name, k.toolkit,
       std::int64_t{k.driver_major}});
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
                       kEntryColumns, where),
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
  std::vector<CacheEntry> candidates;
  for (const auto& r : db_->query(fmt::format("SELECT {} FROM cache_entries{} AND bucket = ${}",
                                              kEntryColumns, where, params.size()),
                                  params))
    candidates.push_back(entry_from_row(r));
  if (candidates.empty()) {  // fallback: every entry of the op on this arch
    f.device_name.clear();
    params.clear();
    where = where_clause(f, params);
    for (const auto& r :
         db_->query(fmt::format("SELECT {} FROM cache_entries{}", kEntryColumns, where), params))
      candidates.push_back(entry_from_row(r));
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
