#include "ktune/spec/space.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ktune/core/progress.hpp"

namespace ktune::tune {
namespace {

// The scope a full configuration is checked in: the parameters by linear search (spaces have a
// few dozen at most), then the constants. Much cheaper than building a map.
class ConfigurationScope : public Scope {
 public:
  ConfigurationScope(const std::vector<Parameter>& params, const Configuration& c,
                     const Scope* constants)
      : params_(params), c_(c), constants_(constants) {}
  const Value* find(std::string_view name) const override {
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i].name == name) return &params_[i].values[c_[i]];
    return constants_ ? constants_->find(name) : nullptr;
  }

 private:
  const std::vector<Parameter>& params_;
  const Configuration& c_;
  const Scope* constants_;
};

// The scope a group's enumeration checks in: the group's parameters bound so far (order[0..depth]).
class BoundScope : public Scope {
 public:
  BoundScope(const std::vector<Parameter>& params, const Configuration& c,
             const std::vector<std::size_t>& order, std::size_t depth, const Scope* constants)
      : params_(params), c_(c), order_(order), depth_(depth), constants_(constants) {}
  const Value* find(std::string_view name) const override {
    for (std::size_t i = 0; i <= depth_ && i < order_.size(); ++i)
      if (params_[order_[i]].name == name) return &params_[order_[i]].values[c_[order_[i]]];
    return constants_ ? constants_->find(name) : nullptr;
  }

 private:
  const std::vector<Parameter>& params_;
  const Configuration& c_;
  const std::vector<std::size_t>& order_;
  std::size_t depth_;
  const Scope* constants_;
};

std::uint64_t saturating_product(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
    return std::numeric_limits<std::uint64_t>::max();
  return a * b;
}

// splitmix64: a small, seedable generator whose state is one integer.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::size_t random_below(std::uint64_t& state, std::size_t n) {
  return static_cast<std::size_t>(next_random(state) % n);
}

// Sorts rows of `width` value indices each lexicographically, dropping repeated rows; moves each
// row once, through a sorted index.
void sort_rows(std::vector<std::uint32_t>& cells, std::size_t width) {
  const std::size_t n = cells.size() / width;
  const auto row = [&](std::size_t i) {
    return cells.begin() + static_cast<std::ptrdiff_t>(i * width);
  };
  const auto w = static_cast<std::ptrdiff_t>(width);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(row(a), row(a) + w, row(b), row(b) + w);
  });
  std::vector<std::uint32_t> sorted;
  sorted.reserve(cells.size());
  for (std::size_t k = 0; k < n; ++k) {
    const auto r = row(order[k]);
    if (k > 0 && std::equal(r, r + w, sorted.end() - w)) continue;  // a repeat of the previous row
    sorted.insert(sorted.end(), r, r + w);
  }
  cells = std::move(sorted);
}

// Random descents a group's estimate averages over, and the steps one random descent may take
// backing up over violated constraints before it gives up.
constexpr int kEstimateProbes = 512;
constexpr std::size_t kDescentSteps = 4096;
// Below this many products a group is enumerated without a progress line: it takes milliseconds.
constexpr std::uint64_t kQuietProducts = std::uint64_t{1} << 20;

}  // namespace

// One group's valid tuples, a row of value indices per tuple in the group's `params` order, sorted.
struct SearchSpace::Rows {
  std::vector<std::uint32_t> cells;
  std::uint64_t count = 0;  // valid tuples, counted on past the rows kept
  bool stored = true;       // every valid tuple is in cells
  bool finished = true;     // the enumeration ran to its end within kMaxExaminedConfigurations
};

SearchSpace::SearchSpace(std::vector<Parameter> parameters, std::vector<Constraint> constraints,
                         const Scope* constants)
    : params_(std::move(parameters)), constraints_(std::move(constraints)), constants_(constants) {
  if (params_.empty()) throw Error("a search space needs at least one tunable parameter.");
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].values.empty())
      throw Error(
          fmt::format("parameter '{}' has no values; give it at least one.", params_[i].name));
    if (params_[i].values.size() > std::numeric_limits<std::uint32_t>::max())
      throw Error(fmt::format("parameter '{}' has too many values.", params_[i].name));
    for (std::size_t k = 0; k < i; ++k)
      if (params_[k].name == params_[i].name)
        throw Error(fmt::format("parameter '{}' is declared twice; names must be unique.",
                                params_[i].name));
    const auto n = static_cast<std::uint64_t>(params_[i].values.size());
    if (cartesian_ > std::numeric_limits<std::uint64_t>::max() / n) {
      cartesian_ = std::numeric_limits<std::uint64_t>::max();
      ranks_fit_ = false;
    } else {
      cartesian_ *= n;
    }
  }
  // The parameters each constraint reads; constraints sharing a parameter join its groups.
  std::vector<std::vector<std::size_t>> reads(constraints_.size());
  std::vector<std::size_t> root(params_.size());
  for (std::size_t i = 0; i < root.size(); ++i) root[i] = i;
  auto find_root = [&](std::size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    for (const auto& name : constraints_[c].expression.names()) {
      if (auto idx = parameter_index(name)) {
        reads[c].push_back(*idx);
      } else if (!constants_ || !constants_->find(name)) {
        throw Error(
            fmt::format("constraint \"{}\" reads '{}', which is neither a parameter nor a "
                        "known constant; fix the name.",
                        constraints_[c].expression.text(), name));
      }
    }
    if (reads[c].empty()) always_.push_back(c);
    for (std::size_t k = 1; k < reads[c].size(); ++k)
      root[find_root(reads[c][k])] = find_root(reads[c][0]);
  }
  group_of_.assign(params_.size(), 0);
  std::vector<std::size_t> group_at(params_.size(), params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    std::size_t& g = group_at[find_root(i)];
    if (g == params_.size()) {
      g = groups_.size();
      groups_.emplace_back();
    }
    group_of_[i] = g;
    groups_[g].params.push_back(i);
    groups_[g].cartesian = saturating_product(groups_[g].cartesian, params_[i].values.size());
  }
  // Each group's order: repeatedly the parameter that decides the most constraints once bound,
  // then the one read by the most constraints not yet decided, then the one with fewer values, so
  // a violation prunes as high in the tree as it can.
  std::vector<std::vector<std::size_t>> of_group(groups_.size());
  for (std::size_t c = 0; c < constraints_.size(); ++c)
    if (!reads[c].empty()) of_group[group_of_[reads[c][0]]].push_back(c);
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    Group& group = groups_[g];
    std::vector<bool> bound(params_.size(), false), decided(constraints_.size(), false);
    auto missing = [&](std::size_t c) {
      std::size_t n = 0;
      for (std::size_t p : reads[c]) n += !bound[p];
      return n;
    };
    while (group.order.size() < group.params.size()) {
      std::size_t best = params_.size();
      std::tuple<std::size_t, std::size_t, std::size_t> best_key{};
      for (std::size_t p : group.params) {
        if (bound[p]) continue;
        std::size_t decides = 0, touches = 0;
        for (std::size_t c : of_group[g]) {
          if (decided[c] || std::find(reads[c].begin(), reads[c].end(), p) == reads[c].end())
            continue;
          ++touches;
          decides += missing(c) == 1;
        }
        const std::tuple<std::size_t, std::size_t, std::size_t> key{
            decides, touches, std::numeric_limits<std::size_t>::max() - params_[p].values.size()};
        if (best == params_.size() || key > best_key) best = p, best_key = key;
      }
      bound[best] = true;
      group.order.push_back(best);
      group.checks.emplace_back();
      for (std::size_t c : of_group[g])
        if (!decided[c] && missing(c) == 0) decided[c] = true, group.checks.back().push_back(c);
    }
  }
}

SearchSpace SearchSpace::from_spec(const ProblemSpec& spec, const Scope* constants) {
  return SearchSpace(spec.parameters, spec.constraints, constants);
}

std::optional<std::size_t> SearchSpace::parameter_index(std::string_view name) const {
  for (std::size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name) return i;
  return std::nullopt;
}

bool SearchSpace::check(const Group& g, const Configuration& c, std::size_t depth) const {
  if (g.checks[depth].empty()) return true;
  const BoundScope scope(params_, c, g.order, depth, constants_);
  for (std::size_t id : g.checks[depth])
    if (!constraints_[id].expression.test(scope)) return false;
  return true;
}

bool SearchSpace::always_hold() const {
  const Configuration none(params_.size(), 0);
  const ConfigurationScope scope(params_, none, constants_);
  for (std::size_t id : always_)
    if (!constraints_[id].expression.test(scope)) return false;
  return true;
}

bool SearchSpace::valid(const Configuration& c) const {
  if (c.size() != params_.size()) return false;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i] >= params_[i].values.size()) return false;
  const ConfigurationScope scope(params_, c, constants_);
  for (const Constraint& constraint : constraints_)
    if (!constraint.expression.test(scope)) return false;
  return true;
}

SearchSpace::Rows SearchSpace::tabulate(const Group& g, std::uint64_t max_rows) const {
  Rows rows;
  const std::size_t width = g.params.size();
  auto keep = [&](const Configuration& c) {
    ++rows.count;
    if (!rows.stored) return;
    if (rows.count > max_rows) {
      rows.stored = false;
      rows.cells = {};
      return;
    }
    for (std::size_t p : g.params) rows.cells.push_back(c[p]);
  };
  Configuration c(params_.size(), 0);
  if (g.checks.size() == 1 && g.checks[0].empty()) {
    for (std::uint32_t v = 0; v < params_[g.params[0]].values.size(); ++v)
      c[g.params[0]] = v, keep(c);
    return rows;  // one parameter no constraint reads: already sorted
  }
  std::optional<Progress> progress;
  if (g.cartesian > kQuietProducts) progress.emplace("building the search space", 0);
  // Depth-first over the group's order; a constraint prunes as soon as its last parameter is set.
  std::size_t depth = 0;
  std::uint64_t examined = 0;
  for (;;) {
    if (++examined > kMaxExaminedConfigurations) {
      rows.finished = rows.stored = false;
      rows.cells = {};
      return rows;
    }
    if (progress && examined % 65536 == 0)
      progress->update(examined, fmt::format("examined, {} valid", rows.count));
    if (check(g, c, depth)) {
      if (depth + 1 == width) {
        keep(c);
      } else {
        ++depth;
        c[g.order[depth]] = 0;
        continue;
      }
    }
    // Advance to the next value, backtracking over exhausted parameters.
    bool done = false;
    for (;;) {
      const std::size_t p = g.order[depth];
      if (++c[p] < params_[p].values.size()) break;
      if (depth == 0) {
        done = true;
        break;
      }
      c[p] = 0;
      --depth;
    }
    if (done) break;
  }
  if (rows.stored) sort_rows(rows.cells, width);  // the rows are distinct: none is dropped
  return rows;
}

namespace {

// The lexicographic walk over the product of the groups' sorted rows: parameter p takes, in turn,
// each distinct value its group's rows still in range hold in p's column, and narrows that range.
// Every path ends in a valid configuration, so the walk has no dead ends.
class ProductWalk {
 public:
  ProductWalk(const std::vector<SearchSpace::Group>& groups,
              const std::vector<std::vector<std::uint32_t>*>& cells, std::size_t n_params,
              const std::function<bool(const Configuration&)>& visit)
      : cells_(cells), visit_(visit), c_(n_params), group_(n_params), column_(n_params) {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      width_.push_back(groups[g].params.size());
      range_.emplace_back(0, cells[g]->size() / groups[g].params.size());
      for (std::size_t k = 0; k < groups[g].params.size(); ++k)
        group_[groups[g].params[k]] = g, column_[groups[g].params[k]] = k;
    }
  }
  void run() { step(0); }

 private:
  bool step(std::size_t p) {
    if (p == c_.size()) return visit_(c_);
    const std::size_t g = group_[p], k = column_[p], w = width_[g];
    const auto whole = range_[g];
    const std::vector<std::uint32_t>& cells = *cells_[g];
    for (std::size_t a = whole.first; a < whole.second;) {
      const std::uint32_t v = cells[a * w + k];
      std::size_t b = a + 1;
      while (b < whole.second && cells[b * w + k] == v) ++b;
      c_[p] = v;
      range_[g] = {a, b};
      if (!step(p + 1)) return false;
      a = b;
    }
    range_[g] = whole;
    return true;
  }
  const std::vector<std::vector<std::uint32_t>*>& cells_;
  const std::function<bool(const Configuration&)>& visit_;
  Configuration c_;
  std::vector<std::size_t> group_, column_, width_;
  std::vector<std::pair<std::size_t, std::size_t>> range_;
};

}  // namespace

void SearchSpace::for_each(const std::function<bool(const Configuration&)>& visit) const {
  if (!always_hold()) return;
  std::vector<Rows> rows;
  for (const Group& g : groups_) {
    rows.push_back(tabulate(g, kMaxIndexedConfigurations));
    const Rows& r = rows.back();
    if (!r.finished)
      too_large(
          fmt::format("more than {} configurations to examine before its conditions leave "
                      "the valid ones",
                      kMaxExaminedConfigurations));
    if (!r.stored)
      too_large(
          fmt::format("more than {} valid combinations of the {} parameters its conditions "
                      "tie together",
                      kMaxIndexedConfigurations, g.params.size()));
    if (r.count == 0) return;
  }
  std::vector<std::vector<std::uint32_t>*> cells;
  for (Rows& r : rows) cells.push_back(&r.cells);
  ProductWalk(groups_, cells, params_.size(), visit).run();
}

std::uint64_t SearchSpace::count() const {
  if (!always_hold()) return 0;
  std::uint64_t n = 1;
  for (const Group& g : groups_) {
    const Rows r = tabulate(g, 0);
    if (!r.finished)
      too_large(
          fmt::format("more than {} configurations to examine before its conditions leave "
                      "the valid ones",
                      kMaxExaminedConfigurations));
    n = saturating_product(n, r.count);
  }
  return n;
}

double SearchSpace::estimated_count() const {
  if (!always_hold()) return 0;
  std::uint64_t rng = 1;
  double total = 1;
  Configuration c(params_.size(), 0);
  for (const Group& g : groups_) {
    bool constrained = false;
    for (const auto& checks : g.checks) constrained |= !checks.empty();
    if (!constrained) {
      total *= static_cast<double>(g.cartesian);
      continue;
    }
    // Knuth's estimator: down one random path of the pruned tree, the product of the number of
    // children that pass at each level; its mean over paths is the number of leaves.
    double sum = 0;
    std::vector<std::uint32_t> passing;
    for (int probe = 0; probe < kEstimateProbes; ++probe) {
      double leaves = 1;
      for (std::size_t depth = 0; depth < g.order.size() && leaves > 0; ++depth) {
        const std::size_t p = g.order[depth];
        passing.clear();
        for (std::uint32_t v = 0; v < params_[p].values.size(); ++v) {
          c[p] = v;
          if (check(g, c, depth)) passing.push_back(v);
        }
        leaves *= static_cast<double>(passing.size());
        if (!passing.empty()) c[p] = passing[random_below(rng, passing.size())];
      }
      sum += leaves;
    }
    total *= sum / kEstimateProbes;
  }
  return total;
}

SearchSpace::Descent SearchSpace::descend(const Group& g, Configuration& c,
                                          std::uint64_t& rng_state, std::size_t attempts) const {
  for (std::size_t attempt = 0; attempt < attempts; ++attempt) {
    // A depth-first search that tries each level's values in a random rotation, so it backs up
    // over a violation instead of starting again, and gives up after kDescentSteps checks.
    std::vector<std::uint32_t> first(g.order.size()), tried(g.order.size(), 0);
    std::size_t depth = 0;
    auto start_level = [&](std::size_t d) {
      const std::size_t n = params_[g.order[d]].values.size();
      first[d] = static_cast<std::uint32_t>(random_below(rng_state, n));
      tried[d] = 0;
      c[g.order[d]] = first[d];
    };
    start_level(0);
    for (std::size_t steps = 0; steps < kDescentSteps; ++steps) {
      if (check(g, c, depth)) {
        if (depth + 1 == g.order.size()) return Descent::found;
        start_level(++depth);
        continue;
      }
      for (;;) {
        const std::size_t p = g.order[depth], n = params_[p].values.size();
        if (++tried[depth] < n) {
          c[p] = static_cast<std::uint32_t>((first[depth] + tried[depth]) % n);
          break;
        }
        if (depth == 0) return Descent::none_exist;  // every value tried: no valid tuple
        --depth;
      }
    }
  }
  return Descent::gave_up;
}

std::optional<Configuration> SearchSpace::draw(std::uint64_t& rng_state,
                                               std::size_t attempts) const {
  if (!always_hold()) return std::nullopt;
  Configuration c(params_.size(), 0);
  for (const Group& g : groups_)
    if (descend(g, c, rng_state, attempts) != Descent::found) return std::nullopt;
  return c;
}

void SearchSpace::too_large(const std::string& what) const {
  std::string widest;
  std::size_t most = 0;
  for (const Parameter& p : params_)
    if (p.values.size() > most) most = p.values.size(), widest = p.name;
  throw Error(fmt::format(
      "the search space has {} (the Cartesian product of its {} parameters is {}); ktune does "
      "not search a space that large: narrow the parameters' Values (the widest is {} with {}) "
      "or add Conditions that prune early.",
      what, params_.size(), ranks_fit_ ? fmt::format("{}", cartesian_) : "over 2^64", widest,
      most));
}

std::uint64_t SearchSpace::rank(const Configuration& c) const {
  if (!ranks_fit_)
    throw Error(
        "the space's Cartesian product exceeds 64 bits, so configurations have no unique rank; "
        "index it by value indices (IndexedSpace::from_flat).");
  std::uint64_t r = 0;
  for (std::size_t i = 0; i < params_.size(); ++i) r = r * params_[i].values.size() + c[i];
  return r;
}

Configuration SearchSpace::unrank(std::uint64_t r) const {
  Configuration c(params_.size());
  for (std::size_t i = params_.size(); i-- > 0;) {
    const auto n = params_[i].values.size();
    c[i] = static_cast<std::uint32_t>(r % n);
    r /= n;
  }
  return c;
}

MapScope SearchSpace::scope(const Configuration& c) const {
  MapScope s(constants_);
  for (std::size_t i = 0; i < params_.size(); ++i) s.set(params_[i].name, params_[i].values[c[i]]);
  return s;
}

nlohmann::json SearchSpace::to_json(const Configuration& c) const {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < params_.size(); ++i) j[params_[i].name] = params_[i].values[c[i]];
  return j;
}

std::optional<Configuration> SearchSpace::from_values(
    const std::map<std::string, Value>& values) const {
  Configuration c(params_.size());
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto it = values.find(params_[i].name);
    if (it == values.end()) return std::nullopt;
    const auto& vs = params_[i].values;
    auto pos = std::find(vs.begin(), vs.end(), it->second);
    if (pos == vs.end()) return std::nullopt;
    c[i] = static_cast<std::uint32_t>(pos - vs.begin());
  }
  return c;
}

std::string SearchSpace::describe(const Configuration& c) const {
  std::string s;
  for (std::size_t i = 0; i < params_.size(); ++i)
    s += fmt::format("{}{}={}", i ? ", " : "", params_[i].name, params_[i].values[c[i]].repr());
  return s;
}

IndexedSpace::IndexedSpace(const SearchSpace& space) : space_(&space) {
  if (!space.always_hold()) return;
  // The estimate decides before anything is walked: a valid set far past what an index keeps is
  // sampled at once, not enumerated for minutes first.
  const double estimate = space.estimated_count();
  const bool enumerable = estimate <= 2.0 * static_cast<double>(kMaxIndexedConfigurations);
  std::vector<SearchSpace::Rows> rows;
  std::uint64_t total = 1;
  bool counted = true, stored = true;
  for (const SearchSpace::Group& g : space.groups()) {
    // Groups cheap to tabulate are tabulated even when sampling: their rows are drawn uniformly.
    if (!enumerable && g.cartesian > kMaxExaminedConfigurations / 16) {
      rows.emplace_back();
      rows.back().stored = rows.back().finished = counted = stored = false;
      continue;
    }
    rows.push_back(space.tabulate(g, kMaxIndexedConfigurations));
    const SearchSpace::Rows& r = rows.back();
    if (r.finished && r.count == 0) return;  // no valid configuration
    counted = counted && r.finished;
    stored = stored && r.stored;
    total = saturating_product(total, r.count);
  }
  valid_count_ = counted ? static_cast<double>(total) : estimate;
  valid_count_exact_ = counted;
  auto keep = [&](const Configuration& c) {
    if (space.ranks_fit())
      ranks_.push_back(space.rank(c));
    else
      flat_.insert(flat_.end(), c.begin(), c.end());
  };
  if (stored && total <= kMaxIndexedConfigurations) {
    // The walk is lexicographic, which is rank order: the storage comes out sorted.
    std::vector<std::vector<std::uint32_t>*> cells;
    for (SearchSpace::Rows& r : rows) cells.push_back(&r.cells);
    ProductWalk(space.groups(), cells, space.parameters().size(), [&](const Configuration& c) {
      keep(c);
      return true;
    }).run();
    size_ = total;
    ranks_.shrink_to_fit();
    flat_.shrink_to_fit();
    return;
  }
  // Too many to keep: distinct valid configurations drawn at random, each group's tuple from its
  // rows where it has them, else by a random descent of its constraints. A fixed seed, so the
  // same space always gives the same sample.
  sampled_ = true;
  std::uint64_t rng = 0x6B74756E65;  // "ktune"
  const std::size_t d = space.parameters().size();
  Configuration c(d, 0);
  Progress progress("sampling the search space", kSampledConfigurations);
  for (int round = 0; round < 8 && size_ < kSampledConfigurations; ++round) {
    const std::size_t before = size_, wanted = kSampledConfigurations - size_;
    for (std::size_t n = size_; n < kSampledConfigurations; ++n) {
      for (std::size_t g = 0; g < rows.size(); ++g) {
        const SearchSpace::Group& group = space.groups()[g];
        if (rows[g].stored) {
          const std::size_t w = group.params.size();
          const std::size_t row = random_below(rng, rows[g].count);
          for (std::size_t k = 0; k < w; ++k) c[group.params[k]] = rows[g].cells[row * w + k];
          continue;
        }
        const SearchSpace::Descent found = space.descend(group, c, rng, 64);
        if (found == SearchSpace::Descent::none_exist) {  // searched through: nothing is valid
          *this = IndexedSpace(&space);
          return;
        }
        if (found == SearchSpace::Descent::gave_up) {
          space.too_large(
              estimate >= 1
                  ? fmt::format("about {:.3g} valid configurations, too many to enumerate, and its "
                                "conditions reject nearly every configuration drawn at random, so "
                                "it cannot be sampled either",
                                estimate)
                  : fmt::format("more than {} configurations to examine before its conditions "
                                "leave the valid ones, which are too rare to draw at random",
                                kMaxExaminedConfigurations));
        }
      }
      keep(c);
      if (n % 4096 == 0) progress.update(n);
    }
    if (space.ranks_fit()) {
      std::sort(ranks_.begin(), ranks_.end());
      ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
      size_ = ranks_.size();
    } else {
      size_ = flat_.size() / d;
      sort_flat();
    }
    if (size_ - before < wanted / 2) break;  // mostly repeats: the valid set is nearly drawn
  }
  progress.finish();
  ranks_.shrink_to_fit();
  flat_.shrink_to_fit();
}

IndexedSpace::IndexedSpace(const SearchSpace& space, std::vector<std::uint64_t> ranks)
    : space_(&space), ranks_(std::move(ranks)) {
  if (!space.ranks_fit())
    throw Error(
        "IndexedSpace from ranks over a space whose ranks overflow 64 bits; use "
        "IndexedSpace::from_flat.");
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  size_ = ranks_.size();
  valid_count_ = static_cast<double>(size_);
}

IndexedSpace IndexedSpace::from_flat(const SearchSpace& space, std::vector<std::uint32_t> flat) {
  const std::size_t d = space.parameters().size();
  if (flat.size() % d != 0)
    throw Error(
        "IndexedSpace::from_flat: the value indices are not a whole number of "
        "configurations.");
  if (space.ranks_fit()) {
    std::vector<std::uint64_t> ranks(flat.size() / d);
    Configuration c(d);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(i * d), d, c.begin());
      ranks[i] = space.rank(c);
    }
    return IndexedSpace(space, std::move(ranks));
  }
  IndexedSpace s(&space);
  s.flat_ = std::move(flat);
  s.size_ = s.flat_.size() / d;
  s.sort_flat();
  s.valid_count_ = static_cast<double>(s.size_);
  return s;
}

void IndexedSpace::sort_flat() {
  sort_rows(flat_, space_->parameters().size());
  flat_.shrink_to_fit();
  size_ = flat_.size() / space_->parameters().size();
}

Configuration IndexedSpace::at(std::size_t i) const {
  if (space_->ranks_fit()) return space_->unrank(ranks_[i]);
  const std::size_t d = space_->parameters().size();
  const auto r = flat_.begin() + static_cast<std::ptrdiff_t>(i * d);
  return Configuration(r, r + static_cast<std::ptrdiff_t>(d));
}

std::optional<std::size_t> IndexedSpace::find(const Configuration& c) const {
  const std::size_t d = space_->parameters().size();
  if (c.size() != d) return std::nullopt;
  for (std::size_t i = 0; i < d; ++i)
    if (c[i] >= space_->parameters()[i].values.size()) return std::nullopt;
  if (space_->ranks_fit()) {
    const std::uint64_t r = space_->rank(c);
    auto it = std::lower_bound(ranks_.begin(), ranks_.end(), r);
    if (it == ranks_.end() || *it != r) return std::nullopt;
    return static_cast<std::size_t>(it - ranks_.begin());
  }
  // Binary search over the sorted rows.
  std::size_t lo = 0, hi = size_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const auto r = flat_.begin() + static_cast<std::ptrdiff_t>(mid * d);
    if (std::lexicographical_compare(r, r + static_cast<std::ptrdiff_t>(d), c.begin(), c.end()))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == size_ ||
      !std::equal(c.begin(), c.end(), flat_.begin() + static_cast<std::ptrdiff_t>(lo * d)))
    return std::nullopt;
  return lo;
}

}  // namespace ktune::tune
