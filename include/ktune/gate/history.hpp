#pragma once
// A benchmark's stored series (one point per record or check session) and its change points, by
// binary segmentation with a permutation test: split where the standardized difference of means
// is largest, keep the split when fewer than alpha of the segment's permutations reach it, recurse.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ktune/gate/statistics.hpp"
#include "ktune/store/baselines.hpp"

namespace ktune::gate {

inline constexpr int kHistorySchemaVersion = 1;

struct SeriesPoint {
  std::string session, recorded_at, commit, label, kind;
  store::GateEnvironment env;
  double p50_ns = 0;  // median of the session's run medians
  std::size_t runs = 0;
};

struct ChangePoint {
  std::size_t index = 0;                       // the first point after the change
  double before_p50_ns = 0, after_p50_ns = 0;  // medians of the segments either side
  double p_value = 1;
  std::string first_commit;                      // the commit of the first point after it
  std::vector<std::string> environment_changes;  // between the points either side
};

// Groups runs (oldest first) into sessions.
std::vector<SeriesPoint> series(const std::vector<store::GateRun>& runs);

struct ChangePointSettings {
  double alpha = 0.01;
  int permutations = 999;
  std::size_t min_segment = 2;
  std::uint64_t seed = 12;
};

// Change points of `values` (any scale; the caller passes log p50s), as indices of the first
// value after each change, ascending, with their permutation p-values.
std::vector<std::pair<std::size_t, double>> change_points(const std::vector<double>& values,
                                                          const ChangePointSettings& s = {});

std::vector<ChangePoint> history_change_points(const std::vector<SeriesPoint>& points,
                                               const ChangePointSettings& s = {});

std::string render_history(const std::string& benchmark, const std::vector<SeriesPoint>& points,
                           const std::vector<ChangePoint>& changes);
nlohmann::json history_json(const std::string& benchmark, const std::vector<SeriesPoint>& points,
                            const std::vector<ChangePoint>& changes);

}  // namespace ktune::gate
