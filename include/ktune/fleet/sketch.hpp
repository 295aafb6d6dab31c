#pragma once
// A mergeable quantile sketch (DDSketch: logarithmic buckets with a guaranteed relative error).
// Every quantile it answers is within `relative_accuracy` of a value of the data at that rank, and
// two sketches of the same accuracy merge by adding bucket counts, so the fleet's p50/p95 over
// thousands of runs is the merge of the runs' sketches: exact merging, no re-reading of traces.
// Values are durations in ns; values below kMinValueNs (zero-length records) count in one bucket.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ktune::fleet {

inline constexpr double kDefaultRelativeAccuracy = 0.01;  // 1 %: p50 of 10 us is 9.9..10.1 us
inline constexpr int kSketchSchemaVersion = 1;

class QuantileSketch {
 public:
  static constexpr double kMinValueNs = 1.0;

  QuantileSketch() : QuantileSketch(kDefaultRelativeAccuracy) {}
  explicit QuantileSketch(double relative_accuracy);

  void add(double value_ns, std::uint64_t count = 1);
  // Adds `other`'s buckets. ktune::Error when the two were built with different accuracies.
  void merge(const QuantileSketch& other);

  // The value at rank q (0 <= q <= 1) in the lower-rank convention (q * (count - 1), rounded
  // down), within relative_accuracy; 0 for an empty sketch.
  double quantile(double q) const;
  std::uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  double relative_accuracy() const { return alpha_; }

  // Compact binary form (varints, zig-zag bucket deltas): what the store keeps. from_bytes
  // throws ktune::Error naming `where` when the bytes are not a sketch.
  std::string to_bytes() const;
  static QuantileSketch from_bytes(std::string_view bytes, const std::string& where = "sketch");
  // to_bytes as lowercase hex: a TEXT column both backends store as is.
  std::string to_hex() const;
  static QuantileSketch from_hex(std::string_view hex, const std::string& where = "sketch");

  // {"schema_version", "relative_accuracy", "zero_count", "offset", "counts": [...]}
  nlohmann::json to_json() const;
  static QuantileSketch from_json(const nlohmann::json& j, const std::string& where = "sketch");

  bool operator==(const QuantileSketch& other) const;

 private:
  int index_of(double value_ns) const;
  double value_of(int index) const;  // the bucket's representative: relative error <= alpha

  double alpha_, gamma_, log_gamma_;
  std::uint64_t count_ = 0, zero_count_ = 0;
  int offset_ = 0;                     // bucket index of counts_[0]
  std::vector<std::uint64_t> counts_;  // dense: kernel times span a few decades, < 2,000 buckets
};

}  // namespace ktune::fleet
