#include "ktune/spec/space.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ktune::tune {
namespace {

// The scope enumeration evaluates constraints in: the parameters set so far by linear search
// (spaces have a handful of parameters), then the constants. Much cheaper than building a map.
class PrefixScope : public Scope {
 public:
  PrefixScope(const std::vector<Parameter>& params, const Configuration& c, std::size_t depth,
              const Scope* constants)
      : params_(params), c_(c), depth_(depth), constants_(constants) {}
  const Value* find(std::string_view name) const override {
    for (std::size_t i = 0; i <= depth_ && i < params_.size(); ++i)
      if (params_[i].name == name) return &params_[i].values[c_[i]];
    return constants_ ? constants_->find(name) : nullptr;
  }

 private:
  const std::vector<Parameter>& params_;
  const Configuration& c_;
  std::size_t depth_;
  const Scope* constants_;
};

}  // namespace

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
  checks_at_.resize(params_.size());
  for (std::size_t c = 0; c < constraints_.size(); ++c) {
    std::optional<std::size_t> deepest;
    for (const auto& name : constraints_[c].expression.names()) {
      if (auto idx = parameter_index(name)) {
        deepest = std::max(deepest.value_or(0), *idx);
      } else if (!constants_ || !constants_->find(name)) {
        throw Error(
            fmt::format("constraint \"{}\" reads '{}', which is neither a parameter nor a "
                        "known constant; fix the name.",
                        constraints_[c].expression.text(), name));
      }
    }
    if (deepest)
      checks_at_[*deepest].push_back(c);
    else
      always_.push_back(c);
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

bool SearchSpace::check(const Configuration& c, std::size_t depth) const {
  const PrefixScope scope(params_, c, depth, constants_);
  for (std::size_t id : checks_at_[depth])
    if (!constraints_[id].expression.test(scope)) return false;
  return true;
}

bool SearchSpace::valid(const Configuration& c) const {
  if (c.size() != params_.size()) return false;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (c[i] >= params_[i].values.size()) return false;
  const PrefixScope scope(params_, c, params_.size() - 1, constants_);
  for (std::size_t id : always_)
    if (!constraints_[id].expression.test(scope)) return false;
  for (std::size_t d = 0; d < params_.size(); ++d)
    if (!check(c, d)) return false;
  return true;
}

void SearchSpace::for_each(const std::function<bool(const Configuration&)>& visit) const {
  {
    const Configuration none(params_.size(), 0);
    const PrefixScope scope(params_, none, 0, constants_);
    for (std::size_t id : always_)
      if (!constraints_[id].expression.test(scope)) return;
  }
  // Depth-first over the parameters; a constraint prunes as soon as its last parameter is set.
  // Without constraints nothing prunes, so a product past the bound is refused before it starts.
  if (constraints_.empty() && cartesian_ > kMaxExaminedConfigurations)
    too_large(fmt::format("more than {} configurations to enumerate", kMaxExaminedConfigurations));
  Configuration c(params_.size(), 0);
  std::size_t depth = 0;
  std::uint64_t examined = 0;
  for (;;) {
    if (++examined > kMaxExaminedConfigurations)
      too_large(
          fmt::format("more than {} configurations to examine before its conditions leave "
                      "the valid ones",
                      kMaxExaminedConfigurations));
    if (check(c, depth)) {
      if (depth + 1 == params_.size()) {
        if (!visit(c)) return;
      } else {
        ++depth;
        c[depth] = 0;
        continue;
      }
    }
    // Advance to the next value, backtracking over exhausted parameters.
    for (;;) {
      if (++c[depth] < params_[depth].values.size()) break;
      if (depth == 0) return;
      c[depth] = 0;
      --depth;
    }
  }
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

std::uint64_t SearchSpace::count() const {
  std::uint64_t n = 0;
  for_each([&](const Configuration&) {
    ++n;
    return true;
  });
  return n;
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
  // for_each visits in lexicographic order, which is rank order: the storage comes out sorted.
  space.for_each([&](const Configuration& c) {
    if (size_ == kMaxIndexedConfigurations)
      space.too_large(fmt::format("more than {} valid configurations", kMaxIndexedConfigurations));
    if (space.ranks_fit())
      ranks_.push_back(space.rank(c));
    else
      flat_.insert(flat_.end(), c.begin(), c.end());
    ++size_;
    return true;
  });
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
  return s;
}

void IndexedSpace::sort_flat() {
  const std::size_t d = space_->parameters().size();
  auto row = [&](std::size_t i) { return flat_.begin() + static_cast<std::ptrdiff_t>(i * d); };
  std::vector<std::size_t> order(size_);
  for (std::size_t i = 0; i < size_; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::lexicographical_compare(row(a), row(a) + static_cast<std::ptrdiff_t>(d), row(b),
                                        row(b) + static_cast<std::ptrdiff_t>(d));
  });
  std::vector<std::uint32_t> sorted;
  sorted.reserve(flat_.size());
  for (std::size_t k = 0; k < size_; ++k) {
    const auto r = row(order[k]);
    if (k > 0 && std::equal(r, r + static_cast<std::ptrdiff_t>(d),
                            sorted.end() - static_cast<std::ptrdiff_t>(d)))
      continue;  // a duplicate of the previous configuration
    sorted.insert(sorted.end(), r, r + static_cast<std::ptrdiff_t>(d));
  }
  flat_ = std::move(sorted);
  flat_.shrink_to_fit();
  size_ = flat_.size() / d;
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
