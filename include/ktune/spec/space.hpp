#pragma once
// The search space: the Cartesian product of the parameters' values, cut down by the constraints.
// A configuration is one value index per parameter. Enumeration streams (no storage) and prunes a
// constraint as soon as the parameters it reads are set; IndexedSpace keeps only the valid
// configurations' ranks, 8 bytes each, so a 10^7-point space costs ~80 MB, not gigabytes.
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

// Bounds on what a space may cost, each refused with one sentence when passed: the points
// SearchSpace::for_each examines (full and partial configurations; about a minute at the rate
// enumeration runs: a 10^13-point space ran with no end), and the valid configurations an
// IndexedSpace keeps (8 bytes each: 128 MiB).
inline constexpr std::uint64_t kMaxExaminedConfigurations = 100'000'000;
inline constexpr std::uint64_t kMaxIndexedConfigurations = std::uint64_t{1} << 24;

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
  // false to stop early. Constraint evaluation errors propagate as ktune::Error, and so does a
  // space that needs more than kMaxExaminedConfigurations examined.
  void for_each(const std::function<bool(const Configuration&)>& visit) const;
  std::uint64_t count() const;

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

 private:
  bool check(const Configuration& c, std::size_t depth) const;
  std::vector<Parameter> params_;
  std::vector<Constraint> constraints_;
  const Scope* constants_;
  std::vector<std::vector<std::size_t>> checks_at_;  // constraint ids decidable at each depth
  std::vector<std::size_t> always_;                  // constraints reading no parameter
  std::uint64_t cartesian_ = 1;
  bool ranks_fit_ = true;
};

// The valid configurations of a space in rank (lexicographic) order, stored as ranks (8 bytes
// each); a space whose Cartesian product overflows 64 bits (many parameters with many values, as
// a recorded file without a T1 can give) stores the value indices themselves instead.
class IndexedSpace {
 public:
  // Every valid configuration; ktune::Error past kMaxIndexedConfigurations.
  explicit IndexedSpace(const SearchSpace& space);
  // An explicit set of configurations (ranks in `space`), e.g. those a T4 file recorded.
  // Needs space.ranks_fit().
  IndexedSpace(const SearchSpace& space, std::vector<std::uint64_t> ranks);
  // An explicit set of configurations given as value indices, parameters() count per
  // configuration, back to back; duplicates collapse. Works whatever the space's size.
  static IndexedSpace from_flat(const SearchSpace& space, std::vector<std::uint32_t> flat);
  const SearchSpace& space() const { return *space_; }
  std::size_t size() const { return size_; }
  Configuration at(std::size_t i) const;
  // Position of a configuration among the valid ones; nullopt if it is not valid.
  std::optional<std::size_t> find(const Configuration& c) const;

 private:
  explicit IndexedSpace(const SearchSpace* space) : space_(space) {}
  void sort_flat();
  const SearchSpace* space_;
  std::size_t size_ = 0;
  std::vector<std::uint64_t> ranks_;  // when space_->ranks_fit()
  std::vector<std::uint32_t> flat_;   // otherwise: size_ configurations, sorted
};

}  // namespace ktune::tune
