#pragma once
// Runs an Evaluator in a child process, so that a candidate that crashes the process, hangs, or
// breaks the GPU context (an illegal address is sticky: nothing more runs in that context) ends as
// that candidate's outcome and the session goes on with a fresh child. The parent never touches
// the GPU; the child is forked before any CUDA call and builds its evaluator itself, or is another
// program (ktune.inductor's `serve`) that speaks the same protocol on its stdin and stdout.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ktune/tune/session.hpp"

namespace ktune::tune {

struct IsolationSettings {
  double candidate_timeout_s = 60;  // compile and measure one candidate; then it is stopped
  double start_timeout_s = 600;     // build the child's evaluator (reference compile included)
};

// A measuring program: run with `argv` (argv[0] looked up in PATH) and `env` added to ktune's
// environment, in a process group of its own (stopped as a whole, compile workers included). It
// reads requests on its stdin and answers on its stdout, one JSON line each (the forked child's
// protocol: first {"ready": true} or {"error": SENTENCE}, then describe / prepare / next_ready /
// evaluate); its stderr is ktune's. It leaves when its stdin closes.
struct ChildProgram {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};

class IsolatedEvaluator : public Evaluator {
 public:
  // Called in the child to build the real evaluator. A ktune::Error it throws (no GPU, a reference
  // that does not compile) ends the session with that sentence.
  using Factory = std::function<std::unique_ptr<Evaluator>()>;
  explicit IsolatedEvaluator(Factory factory, IsolationSettings settings = {});
  // The child is `program`; its {"error": ...} line, like a Factory's throw, ends the session.
  explicit IsolatedEvaluator(ChildProgram program, IsolationSettings settings = {});
  ~IsolatedEvaluator() override;  // ends the child
  IsolatedEvaluator(const IsolatedEvaluator&) = delete;
  IsolatedEvaluator& operator=(const IsolatedEvaluator&) = delete;

  // The child's answer; ktune::Error when it dies or does not answer within the start timeout.
  nlohmann::json describe() override;
  void prepare(const std::vector<ConfigMap>& upcoming) override;
  // Asks the child; a child that does not answer within the candidate timeout is replaced, and
  // the first candidate is evaluated next (evaluate() records what happens to it).
  std::size_t next_ready(const std::vector<ConfigMap>& candidates) override;
  // Never `fatal`: a child that died, hung or lost its context is replaced, and the candidate is
  // recorded as launch_failed (died, context lost) or timeout (hung).
  CandidateOutcome evaluate(const ConfigMap& config, std::optional<double> best_ns) override;
  // How many times a child was replaced.
  std::size_t restarts() const { return restarts_; }

 private:
  struct Child;
  void start();
  void stop();
  std::variant<Factory, ChildProgram> child_kind_;
  IsolationSettings settings_;
  std::unique_ptr<Child> child_;
  std::vector<ConfigMap> prepared_;  // sent to the child, not yet evaluated: re-sent to a new one
  std::size_t restarts_ = 0;
};

}  // namespace ktune::tune
