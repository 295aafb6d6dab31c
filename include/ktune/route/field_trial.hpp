#pragma once
// A routed winner on probation inside the program: its first calls alternate between the winner
// and the call's own default algorithm, each timed on the GPU (CUDA events around the call, on the
// program's stream), and the winner stays only if it is faster than the default by more than the
// spread of both. Otherwise it is demoted: the call runs its default from then on. So a winner
// measured faster in a tuning session but slower inside this program (other data in L2, other
// clocks, other concurrent work) never stays. Plain host logic; the router supplies the times.
#include <cstdint>
#include <vector>

namespace ktune::route {

enum class Arm { winner, fallback };
enum class Verdict { trying, routed, demoted };
const char* to_string(Verdict v);  // "trying", "routed", "demoted"

class FieldTrial {
 public:
  // `per_arm` timed calls of each arm decide; a call whose time never arrives is not waited for.
  explicit FieldTrial(int per_arm = 8) : per_arm_(per_arm) {}

  // Which arm the next call runs while trying (they alternate, the winner first).
  Arm next_arm();
  // One timed call; decides once both arms have `per_arm` times.
  void add(Arm arm, double duration_ns);
  Verdict verdict() const { return verdict_; }
  // Medians of the arms (0 until both have times) and the spread the verdict used.
  double winner_ns() const { return winner_ns_; }
  double fallback_ns() const { return fallback_ns_; }
  double spread_ns() const { return spread_ns_; }

 private:
  void decide();
  int per_arm_;
  std::uint64_t calls_ = 0;
  std::vector<double> winner_, fallback_;
  Verdict verdict_ = Verdict::trying;
  double winner_ns_ = 0, fallback_ns_ = 0, spread_ns_ = 0;
};

}  // namespace ktune::route
