#pragma once
// The search space: the Cartesian product of the parameters' values, cut down by the constraints.
// A configuration is one value index per parameter.
//
// The space is built from its constraints, not filtered out of its product: parameters that no
// constraint ties together form independent groups, each group is enumerated once depth-first in
// an order that decides its constraints as early as possible (pruning as soon as a constraint's
// parameters are bound), and the valid configurations are the product of the groups' valid
// tuples, walked in lexicographic order with no dead ends. So 21 parameters and 10^12 products cost
// only what their constrained groups cost. IndexedSpace keeps the valid configurations' ranks, 8
// bytes each; a valid set too large for that is searched through a random sample of it.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/spec/spec.hpp"

namespace ktune::tune {

// Value index per parameter, in SearchSpace::parameters() order.
using Configuration = std::vector<std::uint32_t>;

// Bounds on what a space may cost: the partial configurations enumerating the constrained groups
// may examine (about a minute at the rate constraints evaluate; refused with one sentence when
// passed), the valid configurations an IndexedSpace keeps (8 bytes each: 128 MiB), and the random
// valid configurations it keeps instead when the valid set is larger than that.
inline constexpr std::uint64_t kMaxExaminedConfigurations = 100'000'000;
inline constexpr std::uint64_t kMaxIndexedConfigurations = std::uint64_t{1} << 24;
inline constexpr std::uint64_t kSampledConfigurations = std::uint64_t{1} << 20;

class SearchSpace {
 public:
  // `constants` (not owned, may be null) supplies non-parameter names the constraints read; it
  // must outlive the space. Throws ktune::Error for an empty parameter, a duplicate name or a
  // constraint reading an unknown name.
  SearchSpace(std::vector<Parameter> parameters, std::vector<Constraint> constraints,
              const Scope* constants = nullptr);
  static SearchSpace from_spec(const ProblemSpec& spec, const Scope* constants = nullptr);

  const std::vector<Parameter>& parameters() const { return params_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  std::optional<std::size_t> parameter_index(std::string_view name) const;
  // Product of the value counts, saturating at UINT64_MAX.
  std::uint64_t cartesian_size() const { return cartesian_; }
  // Whether every configuration has a distinct 64-bit rank (the product did not overflow).
  bool ranks_fit() const { return ranks_fit_; }

  bool valid(const Configuration& c) const;
  // Every valid configuration in lexicographic order (first parameter slowest). `visit` returns
  // false to stop early: every step visits a valid configuration, so the caller bounds the time.
  // Constraint evaluation errors propagate as ktune::Error, and so does a constrained group that
  // needs more than kMaxExaminedConfigurations examined or holds more than
  // kMaxIndexedConfigurations valid tuples. Shows progress on a terminal while the groups build.
  void for_each(const std::function<bool(const Configuration&)>& visit) const;
  // The number of valid configurations, saturating at UINT64_MAX; exact, and cheap when the
  // constrained groups are small whatever the product. Same errors as for_each.
  std::uint64_t count() const;
  // An estimate of count() from random descents of the pruned tree (Knuth's estimator), costing a
  // few thousand constraint checks; exact for a space without constraints.
  double estimated_count() const;
  // One valid configuration chosen by picking values at random and checking each constraint as
  // soon as its parameters are bound, backing up on a violation; nullopt when `attempts` descents
  // find none. Not exactly uniform where constraints cut unevenly.
  std::optional<Configuration> draw(std::uint64_t& rng_state, std::size_t attempts = 64) const;

  // Mixed-radix rank in the Cartesian product (first parameter most significant), and back.
  // rank() throws ktune::Error when !ranks_fit(): two configurations would share a rank.
  std::uint64_t rank(const Configuration& c) const;
  Configuration unrank(std::uint64_t r) const;

  // Binds the configuration's values by name over the constants.
  MapScope scope(const Configuration& c) const;
  // {"name": value, ...} and back. from_values returns nullopt when a name is missing or a
  // value is not among the parameter's values (numbers compare as Python does: 2 == 2.0).
  nlohmann::json to_json(const Configuration& c) const;
  std::optional<Configuration> from_values(const std::map<std::string, Value>& values) const;
  std::string describe(const Configuration& c) const;  // "a=1, b=32"
  // Throws the sentence for a space too large to enumerate or to keep: `what` it has, and the fix.
  [[noreturn]] void too_large(const std::string& what) const;

  // Parameters tied together by constraints, enumerated as one: `params` ascending, `order` the
  // same parameters in the order the depth-first enumeration binds them, and `checks[i]` the
  // constraints decided once order[i] is bound.
  struct Group {
    std::vector<std::size_t> params;
    std::vector<std::size_t> order;
    std::vector<std::vector<std::size_t>> checks;
    std::uint64_t cartesian = 1;  // saturating
  };
  const std::vector<Group>& groups() const { return groups_; }

 private:
  friend class IndexedSpace;
  struct Rows;
  enum class Descent { found, none_exist, gave_up };
  bool check(const Group& g, const Configuration& c, std::size_t depth) const;
  // Binds g's parameters in `c` to a random valid tuple (see draw()).
  Descent descend(const Group& g, Configuration& c, std::uint64_t& rng_state,
                  std::size_t attempts) const;
  bool always_hold() const;
  Rows tabulate(const Group& g, std::uint64_t max_rows) const;
  std::vector<Parameter> params_;
  std::vector<Constraint> constraints_;
  const Scope* constants_;
  std::vector<Group> groups_;
  std::vector<std::size_t> group_of_;  // parameter -> its group
  std::vector<std::size_t> always_;    // constraints reading no parameter
  std::uint64_t cartesian_ = 1;
  bool ranks_fit_ = true;
};

// The valid configurations of a space in rank (lexicographic) order, stored as ranks (8 bytes
// each); a space whose Cartesian product overflows 64 bits (many parameters with many values, as
// a recorded file without a T1 can give) stores the value indices themselves instead.
class IndexedSpace {
 public:
  // Every valid configuration; when there are more than kMaxIndexedConfigurations (estimated
  // first, so a huge valid set is never walked), kSampledConfigurations distinct ones drawn at
  // random with a fixed seed, so a resumed search sees the same sample. ktune::Error when the
  // constraints reject nearly every random draw of a space too large to enumerate.
  explicit IndexedSpace(const SearchSpace& space);
  // An explicit set of configurations (ranks in `space`), e.g. those a T4 file recorded.
  // Needs space.ranks_fit().
  IndexedSpace(const SearchSpace& space, std::vector<std::uint64_t> ranks);
  // An explicit set of configurations given as value indices, parameters() count per
  // configuration, back to back; duplicates collapse. Works whatever the space's size.
  static IndexedSpace from_flat(const SearchSpace& space, std::vector<std::uint32_t> flat);
  const SearchSpace& space() const { return *space_; }
  std::size_t size() const { return size_; }
  // Whether this is a random sample of a larger valid set, and that set's size (exact when the
  // groups could be counted, else estimated); valid_count() == size() when not sampled.
  bool sampled() const { return sampled_; }
  double valid_count() const { return valid_count_; }
  bool valid_count_exact() const { return valid_count_exact_; }
  Configuration at(std::size_t i) const;
  // Position of a configuration among the valid ones; nullopt if it is not valid.
  std::optional<std::size_t> find(const Configuration& c) const;

 private:
  explicit IndexedSpace(const SearchSpace* space) : space_(space) {}
  void sort_flat();
  const SearchSpace* space_;
  std::size_t size_ = 0;
  bool sampled_ = false;
  double valid_count_ = 0;
  bool valid_count_exact_ = true;
  std::vector<std::uint64_t> ranks_;  // when space_->ranks_fit()
  std::vector<std::uint32_t> flat_;   // otherwise: size_ configurations, sorted
};

}  // namespace ktune::tune
