// The tuning cache on both backends: round trips, buckets and fallback, the winner rule,
// staleness and invalidation, packs.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ktune/core/error.hpp"
#include "ktune/store/store.hpp"
#include "store_fixture.hpp"

namespace ktune::store {
namespace {

using test::StoreTest;

const Environment kH100{"sm_90", "NVIDIA H100 80GB HBM3", "13.0", 580};

CacheEntry entry(std::vector<std::int64_t> shape, double median_ns, int block,
                 const Environment& env = kH100, double noise_ns = 1.0) {
  CacheEntry e;
  e.key.op = "vector_scale";
  e.key.dtype = "f32";
  e.key.arch = env.arch;
  e.key.device_name = env.device_name;
  e.key.toolkit = env.toolkit;
  e.key.driver_major = env.driver_major;
  e.shape = std::move(shape);
  e.config = {{"block", block}};
  e.median_ns = median_ns;
  e.noise_ns = noise_ns;
  e.samples = 50;
  e.throughput = 1.5e12;
  e.throughput_unit = "bytes/s";
  e.provenance.strategy = "random";
  e.provenance.budget = {{"evaluations", 100}};
  return e;
}

OpSpec pow2_spec() {
  OpSpec s;
  s.op = "vector_scale";
  s.buckets.dims = {DimRule{BucketKind::pow2}};
  s.default_config = nlohmann::json{{"block", 256}};
  return s;
}

LookupQuery query(std::vector<std::int64_t> shape, const Environment& env = kH100) {
  return {"vector_scale", "f32", std::move(shape), env};
}

class CacheTest : public StoreTest {};

TEST_P(CacheTest, EntryRoundTripsWithProvenance) {
  auto store = Store::open(url());
  store->put_op(pow2_spec());
  auto in = entry({3000}, 1234.5678901234567, 128);
  const PutResult put = store->put_entry(in);
  EXPECT_TRUE(put.winner);
  EXPECT_EQ(put.reason, "new key");
  EXPECT_EQ(put.bucket, "2049-4096");
  in.key.bucket = put.bucket;
  const auto out = store->get_entry(in.key);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->key, in.key);
  EXPECT_EQ(out->shape, in.shape);
  EXPECT_EQ(out->config, in.config);
  EXPECT_EQ(out->median_ns, in.median_ns);
  EXPECT_EQ(out->noise_ns, in.noise_ns);
  EXPECT_EQ(out->samples, 50);
  EXPECT_EQ(out->throughput, 1.5e12);
  EXPECT_EQ(out->throughput_unit, "bytes/s");
  EXPECT_EQ(out->verification, "passed");
  EXPECT_EQ(out->provenance.strategy, "random");
  EXPECT_EQ(out->provenance.budget, in.provenance.budget);
  EXPECT_FALSE(out->provenance.created_at.empty());  // filled in by the store
  EXPECT_FALSE(out->provenance.ktune_version.empty());
  EXPECT_FALSE(out->provenance.host.empty());
  EXPECT_FALSE(out->invalidated_at.has_value());
  const auto spec = store->get_op("vector_scale");
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(nlohmann::json(*spec), nlohmann::json(pow2_spec()));
}

TEST_P(CacheTest, WinnerRuleNeedsAGainBeyondNoiseUnlessForced) {
  auto store = Store::open(url());
  ASSERT_TRUE(store->put_entry(entry({1024}, 1000, 128, kH100, 20)).winner);
  // 30 ns faster but the noise bands (20 + 20 ns) overlap: kept.
  auto slower_noise = store->put_entry(entry({1024}, 970, 256, kH100, 20));
  EXPECT_FALSE(slower_noise.winner);
  EXPECT_NE(slower_noise.reason.find("not faster beyond noise"), std::string::npos);
  ASSERT_TRUE(slower_noise.previous_median_ns.has_value());
  EXPECT_EQ(*slower_noise.previous_median_ns, 1000);
  // Slower: kept.
  EXPECT_FALSE(store->put_entry(entry({1024}, 2000, 512, kH100, 1)).winner);
  // Clearly faster: replaces.
  const auto faster = store->put_entry(entry({1024}, 900, 64, kH100, 20));
  EXPECT_TRUE(faster.winner);
  EXPECT_NE(faster.reason.find("faster beyond noise"), std::string::npos);
  // Forced: replaces even when slower.
  EXPECT_TRUE(store->put_entry(entry({1024}, 5000, 32, kH100, 1), /*force=*/true).winner);
  auto k = entry({1024}, 1, 1).key;
  k.bucket = "1024";
  EXPECT_EQ(store->get_entry(k)->config["block"], 32);
  EXPECT_EQ(store->list_entries().size(), 1u);
}

// Issue 44: an entry imported with verification "failed" replaced a verified winner and was served.
TEST_P(CacheTest, VerificationRanksBeforeTime) {
  auto store = Store::open(url());
  ASSERT_TRUE(store->put_entry(entry({1024}, 1000, 128)).winner);
  CacheEntry wrong = entry({1024}, 10, 256);
  wrong.verification = "failed";
  const auto refused = store->put_entry(wrong);
  EXPECT_FALSE(refused.winner);
  EXPECT_NE(refused.reason.find("verification is 'failed'"), std::string::npos) << refused.reason;
  CacheEntry unchecked = entry({1024}, 10, 512);
  unchecked.verification = "skipped";
  EXPECT_FALSE(store->put_entry(unchecked).winner);
  EXPECT_EQ(store->import_pack(Pack{.entries = {wrong, unchecked}}).winners, 0u);
  EXPECT_EQ(store->lookup(query({1024})).config["block"], 128);
  // A checked result replaces an unchecked one even when slower.
  ASSERT_TRUE(store->put_entry(unchecked, /*force=*/true).winner);
  EXPECT_TRUE(store->put_entry(entry({1024}, 2000, 64)).winner);
  EXPECT_EQ(store->lookup(query({1024})).config["block"], 64);
}

TEST_P(CacheTest, AnEntryThatFailedVerificationIsNeverServed) {
  auto store = Store::open(url());
  store->put_op(pow2_spec());
  CacheEntry wrong = entry({1024}, 10, 256);
  wrong.verification = "failed";
  ASSERT_TRUE(store->put_entry(wrong).winner);  // kept as data: a new key
  EXPECT_EQ(store->lookup(query({1024})).match, Match::default_config);
  store->put_entry(entry({64}, 100, 64));
  const auto nearest = store->lookup(query({1024}));  // the exact bucket's is skipped
  EXPECT_EQ(nearest.match, Match::nearest);
  EXPECT_EQ(nearest.config["block"], 64);
}

// Issue 44: a subnormal number (5e-324) in an entry made every reader fail with "internal error:
// stod" on both stores.
TEST_P(CacheTest, SubnormalNumbersRoundTrip) {
  auto store = Store::open(url());
  CacheEntry tiny = entry({4096}, 5e-324, 128, kH100, 5e-324);
  tiny.throughput = 2.5e-310;
  ASSERT_TRUE(store->put_entry(tiny).winner);
  const auto listed = store->list_entries();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].median_ns, 5e-324);
  EXPECT_EQ(listed[0].noise_ns, 5e-324);
  EXPECT_EQ(listed[0].throughput, 2.5e-310);
  EXPECT_EQ(store->lookup(query({4096})).config["block"], 128);
  const Pack pack = store->export_pack({});
  EXPECT_EQ(pack_from_json(pack_to_json(pack), "pack").entries.at(0).median_ns, 5e-324);
  EXPECT_FALSE(store->import_pack(pack).winners);
}

TEST_P(CacheTest, LookupFallsBackExactThenNearestThenDefault) {
  auto store = Store::open(url());
  // No spec, nothing stored: none.
  EXPECT_EQ(store->lookup(query({1000})).match, Match::none);
  store->put_op(pow2_spec());
  EXPECT_EQ(store->lookup(query({1000})).match, Match::default_config);
  EXPECT_EQ(store->lookup(query({1000})).config["block"], 256);

  store->put_entry(entry({1 << 20}, 1000, 128));
  store->put_entry(entry({1 << 10}, 100, 64));
  // Same pow2 bucket as 1<<20: exact.
  auto exact = store->lookup(query({1000000}));
  EXPECT_EQ(exact.match, Match::exact);
  EXPECT_EQ(exact.bucket, "524289-1048576");
  EXPECT_EQ(exact.config["block"], 128);
  EXPECT_FALSE(exact.stale);
  // 1<<12 is two octaves from 1<<10 and eight from 1<<20: nearest picks block 64.
  auto nearest = store->lookup(query({1 << 12}));
  EXPECT_EQ(nearest.match, Match::nearest);
  EXPECT_EQ(nearest.config["block"], 64);
  ASSERT_TRUE(nearest.entry.has_value());
  EXPECT_EQ(nearest.entry->shape, std::vector<std::int64_t>{1 << 10});
  // Another architecture: nothing of this op there, so the default.
  Environment a100{"sm_80", "NVIDIA A100-SXM4-80GB", "13.0", 580};
  EXPECT_EQ(store->lookup(query({1 << 20}, a100)).match, Match::default_config);
  // Another device of the same arch: the same bucket is only "nearest" (distance 0).
  Environment h100_pcie{"sm_90", "NVIDIA H100 PCIe", "13.0", 580};
  auto other = store->lookup(query({1 << 20}, h100_pcie));
  EXPECT_EQ(other.match, Match::nearest);
  EXPECT_EQ(other.config["block"], 128);
}

TEST_P(CacheTest, EntriesOfAnotherToolkitOrDriverAreReportedStale) {
  auto store = Store::open(url());
  const Environment old_toolkit{"sm_90", kH100.device_name, "12.4", 550};
  store->put_entry(entry({4096}, 1000, 128, old_toolkit));
  auto r = store->lookup(query({4096}));
  EXPECT_EQ(r.match, Match::exact);
  EXPECT_TRUE(r.stale);
  EXPECT_NE(r.stale_reason.find("12.4"), std::string::npos);
  // A current entry of the same bucket wins over the stale one.
  store->put_entry(entry({4096}, 5000, 256));
  r = store->lookup(query({4096}));
  EXPECT_FALSE(r.stale);
  EXPECT_EQ(r.config["block"], 256);
  // Driver major matters only where the entry records one.
  auto d = entry({8192}, 10, 32, Environment{"sm_90", kH100.device_name, "13.0", 570});
  store->put_entry(d);
  EXPECT_TRUE(store->lookup(query({8192})).stale);

  // Listed for re-tuning, then invalidated: never handed out again.
  EntryFilter stale;
  stale.stale_relative_to = kH100;
  EXPECT_EQ(store->list_entries(stale).size(), 2u);
  EXPECT_EQ(store->invalidate({}, kH100, /*only_stale=*/true, "toolkit upgrade"), 2);
  EXPECT_EQ(store->list_entries(stale).size(), 0u);
  EXPECT_EQ(store->list_entries().size(), 1u);
  EntryFilter all;
  all.include_invalidated = true;
  const auto everything = store->list_entries(all);
  ASSERT_EQ(everything.size(), 3u);
  int invalid = 0;
  for (const auto& e : everything)
    if (e.invalidated_at) {
      ++invalid;
      EXPECT_EQ(e.invalid_reason.value_or(""), "toolkit upgrade");
    }
  EXPECT_EQ(invalid, 2);
  // The 8192 entry is gone from lookups; the nearest current one (4096) answers.
  auto after = store->lookup(query({8192}));
  EXPECT_EQ(after.match, Match::nearest);
  EXPECT_EQ(after.config["block"], 256);
  // A new result replaces an invalidated winner even when slower.
  auto again = store->put_entry(
      entry({8192}, 1e6, 512, Environment{"sm_90", kH100.device_name, "13.0", 570}));
  EXPECT_TRUE(again.winner);
  EXPECT_EQ(again.reason, "the stored winner was invalidated");
  EXPECT_EQ(store->remove_entries(all), 3);
  EXPECT_TRUE(store->list_entries(all).empty());
}

TEST_P(CacheTest, BadEntriesAreRefusedWithTheField) {
  auto store = Store::open(url());
  auto no_op = entry({1}, 1, 1);
  no_op.key.op.clear();
  EXPECT_THROW(store->put_entry(no_op), Error);
  auto zero_time = entry({1}, 0, 1);
  try {
    store->put_entry(zero_time);
    FAIL() << "a zero time was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("median_ns"), std::string::npos) << e.what();
  }
  auto bad_shape = entry({0}, 1, 1);
  EXPECT_THROW(store->put_entry(bad_shape), Error);
  auto not_object = entry({1}, 1, 1);
  not_object.config = nlohmann::json::array({1});
  EXPECT_THROW(store->put_entry(not_object), Error);
  EXPECT_TRUE(store->list_entries().empty());
}

TEST_P(CacheTest, PackExportImportRoundTripsAndFilters) {
  Pack pack;
  {
    auto store = Store::open(url());
    store->put_op(pow2_spec());
    store->put_entry(entry({1 << 20}, 1000, 128));
    store->put_entry(entry({1 << 10}, 100, 64));
    store->put_entry(entry({1 << 10}, 100, 64, {"sm_80", "NVIDIA A100", "13.0", 580}));
    EntryFilter f;
    f.arch = "sm_90";
    pack = store->export_pack(f);
  }
  ASSERT_EQ(pack.entries.size(), 2u);
  ASSERT_EQ(pack.ops.size(), 1u);
  const auto j = pack_to_json(pack);
  EXPECT_EQ(j["schema_version"], kPackSchemaVersion);
  EXPECT_EQ(j["format"], "ktune-tuning-pack");
  const Pack back = pack_from_json(j, "pack.json");
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(nlohmann::json(back.entries), j["entries"]);

  // Into a second, empty store of the same backend.
  auto other = Store::open(url());
  const auto removed = other->remove_entries(EntryFilter{.include_invalidated = true});
  EXPECT_EQ(removed, 3);
  const ImportResult r = other->import_pack(back);
  EXPECT_EQ(r.ops, 1u);
  EXPECT_EQ(r.winners, 2u);
  EXPECT_EQ(r.kept, 0u);
  EXPECT_EQ(other->lookup(query({1000000})).config["block"], 128);
  // Importing the same pack again keeps the stored winners (not faster beyond noise).
  const ImportResult again = other->import_pack(back);
  EXPECT_EQ(again.winners, 0u);
  EXPECT_EQ(again.kept, 2u);
}

TEST_P(CacheTest, MalformedPackWritesNothing) {
  auto store = Store::open(url());
  store->put_entry(entry({64}, 100, 64));
  Pack pack;
  pack.entries = {entry({128}, 50, 32), entry({256}, 50, 32)};
  pack.entries[1].median_ns = -1;  // the second one is bad
  EXPECT_THROW(store->import_pack(pack), Error);
  EXPECT_EQ(store->list_entries().size(), 1u);  // the good first entry was not written either

  nlohmann::json j = pack_to_json(Pack{.entries = {entry({128}, 50, 32)}});
  j["entries"][0].erase("config");
  try {
    pack_from_json(j, "ship.json");
    FAIL() << "a pack entry without config was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ship.json: entries[0]"), std::string::npos) << what;
    EXPECT_NE(what.find("\"config\""), std::string::npos) << what;
  }
  j = pack_to_json(Pack{});
  j["schema_version"] = kPackSchemaVersion + 1;
  EXPECT_THROW(pack_from_json(j, "new.json"), Error);
  EXPECT_THROW(pack_from_json(nlohmann::json{{"entries", 1}}, "x.json"), Error);
}

KTUNE_BOTH_BACKENDS(CacheTest);

// The message of reading `j` as a pack named "p.json", or "" when it was accepted.
std::string pack_error(const nlohmann::json& j) {
  try {
    pack_from_json(j, "p.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PackJson, NumbersAreReadStrictlyAndNamed) {
  const nlohmann::json good = pack_to_json(Pack{.entries = {entry({4096}, 50, 32)}});
  ASSERT_EQ(pack_error(good), "");
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* named;
  };
  // Each used to be read as something else: 1 (2^32 + 1 cut to int), 4096, 3, 2.
  for (const Case& c : {Case{"/schema_version", 4294967297ull, "\"schema_version\""},
                        Case{"/schema_version", 1.0, "\"schema_version\""},
                        Case{"/entries/0/shape/0", 4096.7, "\"shape\"[0]"},
                        Case{"/entries/0/driver_major", 3.7, "\"driver_major\""},
                        Case{"/entries/0/driver_major", 4294967298ll, "\"driver_major\""},
                        Case{"/entries/0/samples", 18446744073709551615ull, "\"samples\""},
                        Case{"/entries/0/samples", 2.5, "\"samples\""}}) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string why = pack_error(j);
    EXPECT_NE(why.find("p.json"), std::string::npos) << c.pointer << ": " << why;
    EXPECT_NE(why.find(c.named), std::string::npos) << c.pointer << ": " << why;
    EXPECT_NE(why.find("whole number"), std::string::npos) << c.pointer << ": " << why;
  }
}

TEST(PackJson, WrongTypesNameTheField) {
  // Each used to escape as "internal error: [json.exception.type_error.302]".
  const nlohmann::json good =
      pack_to_json(Pack{.ops = {pow2_spec()}, .entries = {entry({64}, 5, 1)}});
  ASSERT_EQ(pack_error(good), "");
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* named;
  };
  for (const Case& c :
       {Case{"/format", 7, "\"format\""}, Case{"/created_at", 7, "\"created_at\""},
        Case{"/entries/0/bucket", 7, "\"bucket\""}, Case{"/entries/0/op", 7, "\"op\""},
        Case{"/entries/0/median_ns", "5", "\"median_ns\""},
        Case{"/entries/0/provenance/host", 7, "\"host\""},
        Case{"/entries/0/invalid_reason", 7, "\"invalid_reason\""},
        Case{"/ops/0/buckets/dims/0/kind", 7, "\"kind\""},
        Case{"/ops/0/op", nlohmann::json::array(), "\"op\""}}) {
    nlohmann::json j = good;
    if (std::string(c.pointer) == "/entries/0/invalid_reason")
      j["entries"][0]["invalidated_at"] = "2026-01-01T00:00:00Z";
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string why = pack_error(j);
    EXPECT_NE(why.find("p.json"), std::string::npos) << c.pointer << ": " << why;
    EXPECT_NE(why.find(c.named), std::string::npos) << c.pointer << ": " << why;
    EXPECT_EQ(why.find("json.exception"), std::string::npos) << c.pointer << ": " << why;
  }
}

TEST(PackJson, DeepNestingIsRefusedBeforeParsing) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ktune_deep_pack_" + std::to_string(::getpid()) + ".json");
  const int depth = 100'000;
  std::string text = R"({"format":"ktune-tuning-pack","schema_version":1,"ops":[],"entries":[)";
  text += std::string(depth, '[') + std::string(depth, ']') + "]}";
  std::ofstream(path) << text;
  try {
    read_pack(path);
    FAIL() << "a pack nested " << depth << " deep was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string() + " nests JSON deeper than 64 levels"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ktune::store
