#pragma once
// The one front door of tuning: `tune::run(Job) -> Outcome`. A job names its target (a spec
// kernel at a shape, or a library GEMM problem), its session options and device; run() builds the
// measuring evaluator (in an isolated child, so a crashing candidate is one outcome), runs the
// session and derives the winner's cache entry, its op declaration and the default's time. The
// CLI (`ktune tune`) and the fleet's worker keep only options, folders and printing.
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#include "ktune/bench/gemm_problem.hpp"
#include "ktune/bench/pipeline.hpp"
#include "ktune/core/identity.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/store/cache_entry.hpp"
#include "ktune/tune/gemm_library.hpp"
#include "ktune/tune/isolated_evaluator.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

// A spec's kernel at a shape (SessionOptions::shape), measured through the candidate pipeline.
struct SpecKernel {
  const ProblemSpec* spec = nullptr;  // must outlive run()
  bench::PipelineSettings settings;
};

// A cuBLASLt GEMM problem: its algorithms searched, the candidates kept in the session's folder so
// a resumed session chooses among the same set.
struct LibraryGemm {
  bench::GemmProblem problem;
  LibrarySearchOptions options;
};

struct Job {
  std::variant<SpecKernel, LibraryGemm> target;
  SessionOptions session;
  int device = 0;
  IsolationSettings isolation;
  // The store's identity of this GPU (asked for after the session: the GPU is touched only by the
  // measuring child while it runs) and of this host, written into the winner's entry.
  std::function<store::Environment()> environment;
  HostIdentity host;
  // Makes the measuring evaluator from the GPU one's factory; empty: the isolated child. (The
  // worker's fake mode and tests give their own.)
  std::function<std::unique_ptr<Evaluator>(IsolatedEvaluator::Factory)> make_evaluator;
  // Seen by the caller as the session goes: once, before the first evaluation, with the number of
  // candidates the session may evaluate (a library's candidates are known only then); and after
  // every evaluation, with its result.
  std::function<void(std::size_t planned, const LibraryCandidates* candidates)> on_start;
  std::function<void(const CandidateOutcome& result)> on_result;
};

struct Outcome {
  SessionSummary session;
  std::optional<store::CacheEntry> winner;  // the verified winner's entry, when there is one
  std::optional<store::OpSpec> op;          // a spec kernel's op, declared with its winner
  std::optional<double> default_ns;         // a library GEMM: cuBLASLt's own first choice
  bool default_won = false;                 // ... and it is the winner (kept)
  std::optional<LibraryCandidates> candidates;
  std::size_t restarts = 0;  // measuring processes restarted after a candidate broke one
};

// Runs the job's session to a stop. ktune::Error for what stops it from starting (no GPU, a spec
// that cannot be built); a session that ends without a verified winner is an Outcome without one.
Outcome run(const Job& job);

}  // namespace ktune::tune
