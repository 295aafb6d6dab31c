#include "ktune/runtime/tuned_configs.hpp"

#include <unordered_map>

#include "ktune/core/dtype.hpp"
#include "ktune/store/store.hpp"

namespace ktune::runtime {
namespace {

struct BucketKey {
  std::array<std::int64_t, TunedConfigs::kMaxRank> hi{};
  std::size_t rank = 0;
  bool operator==(const BucketKey&) const = default;
};

struct BucketKeyHash {
  std::size_t operator()(const BucketKey& k) const noexcept {
    std::size_t h = k.rank;
    for (std::size_t i = 0; i < k.rank; ++i)
      h = (h ^ static_cast<std::size_t>(k.hi[i])) * 0x100000001b3ull;  // FNV-style mix
    return h;
  }
};

// (op, dtype) with heterogeneous lookup, so a query builds no std::string.
struct OpKey {
  std::string op, dtype;
};
struct OpKeyView {
  std::string_view op, dtype;
};
struct OpKeyHash {
  using is_transparent = void;
  std::size_t operator()(const OpKeyView& k) const noexcept {
    return std::hash<std::string_view>{}(k.op) * 31 + std::hash<std::string_view>{}(k.dtype);
  }
  std::size_t operator()(const OpKey& k) const noexcept {
    return (*this)(OpKeyView{k.op, k.dtype});
  }
};
struct OpKeyEq {
  using is_transparent = void;
  static OpKeyView view(const OpKey& k) { return {k.op, k.dtype}; }
  static OpKeyView view(const OpKeyView& k) { return k; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const noexcept {
    return view(a).op == view(b).op && view(a).dtype == view(b).dtype;
  }
};

bool bucket_key(const store::BucketPolicy& policy, std::span<const std::int64_t> shape,
                BucketKey& key) {
  if (shape.size() > TunedConfigs::kMaxRank) return false;
  key.rank = shape.size();
  for (std::size_t d = 0; d < shape.size(); ++d)
    key.hi[d] = store::bucket_dim(store::rule_for(policy, d), shape[d]).hi;
  return true;
}

}  // namespace

struct TunedConfigs::Index {
  store::Environment env;
  std::unordered_map<std::string, store::OpSpec> ops;
  struct Group {
    const store::OpSpec* spec = nullptr;  // null: exact buckets, no default
    std::vector<store::CacheEntry> entries;
    std::unordered_map<BucketKey, Answer, BucketKeyHash> exact;
  };
  std::unordered_map<OpKey, Group, OpKeyHash, OpKeyEq> groups;
  std::size_t size = 0;
};

TunedConfigs::TunedConfigs(const store::Pack& pack, store::Environment env)
    : index_(std::make_unique<Index>()) {
  Index& ix = *index_;
  ix.env = std::move(env);
  for (const auto& s : pack.ops) ix.ops[s.op] = s;
  for (const auto& e : pack.entries) {
    if (e.key.arch != ix.env.arch || e.invalidated_at) continue;
    auto& g = ix.groups[OpKey{e.key.op, e.key.dtype}];
    g.entries.push_back(e);
    ++ix.size;
  }
  const store::BucketPolicy exact_policy;
  for (auto& [key, g] : ix.groups) {
    if (auto it = ix.ops.find(key.op); it != ix.ops.end()) g.spec = &it->second;
    const store::BucketPolicy& policy = g.spec ? g.spec->buckets : exact_policy;
    for (auto& e : g.entries) e.key.bucket = store::bucket_name(store::bucket_of(policy, e.shape));
    // Precompute the answer of every bucket that has an entry on this device.
    for (const auto& e : g.entries) {
      BucketKey bk;
      if (!bucket_key(policy, e.shape, bk) || g.exact.contains(bk)) continue;
      const store::Choice c = store::choose_entry(g.entries, e.key.bucket, e.shape, ix.env);
      if (c.match != store::Match::exact) continue;
      const auto& chosen = g.entries[static_cast<std::size_t>(c.index)];
      g.exact[bk] = Answer{store::Match::exact, &chosen.config, &chosen,
                           !store::stale_reason(chosen.key, ix.env).empty()};
    }
  }
}

TunedConfigs TunedConfigs::from_pack_file(const std::filesystem::path& path,
                                          store::Environment env) {
  return TunedConfigs(store::read_pack(path), std::move(env));
}

TunedConfigs TunedConfigs::from_store(const std::string& url, store::Environment env) {
  store::EntryFilter f;
  f.arch = env.arch;
  auto s = store::Store::open(url, store::Access::read_only);  // an application only reads
  store::Pack pack = s->export_pack(f);
  pack.ops = s->ops();  // defaults of ops with nothing tuned on this arch
  return TunedConfigs(pack, std::move(env));
}

TunedConfigs::~TunedConfigs() = default;
TunedConfigs::TunedConfigs(TunedConfigs&&) noexcept = default;
TunedConfigs& TunedConfigs::operator=(TunedConfigs&&) noexcept = default;

Answer TunedConfigs::lookup(std::string_view op, std::string_view dtype,
                            std::span<const std::int64_t> shape) const {
  const Index& ix = *index_;
  auto g = ix.groups.find(OpKeyView{op, dtype});
  if (g == ix.groups.end()) {
    // Off the fast path: the stored name of a dtype the caller spelled another way ("float16").
    const std::string canonical = canonical_dtype_key(dtype);
    if (canonical != dtype) g = ix.groups.find(OpKeyView{op, canonical});
  }
  const store::OpSpec* spec = nullptr;
  if (g != ix.groups.end()) {
    spec = g->second.spec;
    const store::BucketPolicy exact_policy;
    const store::BucketPolicy& policy = spec ? spec->buckets : exact_policy;
    BucketKey bk;
    if (bucket_key(policy, shape, bk))
      if (auto hit = g->second.exact.find(bk); hit != g->second.exact.end()) return hit->second;
    // Off the fast path: the nearest shape of the op on this arch.
    const std::string bucket = store::bucket_name(store::bucket_of(policy, shape));
    const store::Choice c = store::choose_entry(g->second.entries, bucket, shape, ix.env);
    if (c.index >= 0) {
      const auto& e = g->second.entries[static_cast<std::size_t>(c.index)];
      return Answer{c.match, &e.config, &e, !store::stale_reason(e.key, ix.env).empty()};
    }
  } else if (auto it = ix.ops.find(std::string(op)); it != ix.ops.end()) {
    spec = &it->second;
  }
  if (spec && spec->default_config)
    return Answer{store::Match::default_config, &*spec->default_config, nullptr, false};
  return {};
}

const store::Environment& TunedConfigs::environment() const {
  return index_->env;
}

std::size_t TunedConfigs::size() const {
  return index_->size;
}

}  // namespace ktune::runtime
