#include "ktune/tune/run.hpp"

#include <type_traits>

#include "ktune/tune/gpu_evaluator.hpp"

namespace ktune::tune {
namespace {

// Hands every result to the job's on_result.
class Observed : public Evaluator {
 public:
  Observed(Evaluator& inner, const Job& job) : inner_(inner), job_(job) {}
  void prepare(const std::vector<ConfigMap>& upcoming) override { inner_.prepare(upcoming); }
  std::size_t next_ready(const std::vector<ConfigMap>& candidates) override {
    return inner_.next_ready(candidates);
  }
  CandidateOutcome evaluate(const ConfigMap& c, std::optional<double> best) override {
    CandidateOutcome r = inner_.evaluate(c, best);
    if (job_.on_result) job_.on_result(r);
    return r;
  }

 private:
  Evaluator& inner_;
  const Job& job_;
};

std::unique_ptr<Evaluator> measuring(const Job& job, IsolatedEvaluator::Factory factory) {
  if (job.make_evaluator) return job.make_evaluator(std::move(factory));
  return std::make_unique<IsolatedEvaluator>(std::move(factory), job.isolation);
}

store::Environment environment_of(const Job& job) {
  return job.environment ? job.environment() : store::Environment{};
}

std::size_t restarts_of(const Evaluator& e) {
  const auto* isolated = dynamic_cast<const IsolatedEvaluator*>(&e);
  return isolated ? isolated->restarts() : 0;
}

Outcome run_spec(const Job& job, const SpecKernel& t) {
  const ProblemSpec& spec = *t.spec;
  auto gpu = measuring(
      job, [&spec, shape = job.session.shape, settings = t.settings, device = job.device] {
        return std::make_unique<GpuEvaluator>(spec, shape, settings, device);
      });
  Observed ev(*gpu, job);
  if (job.on_start) job.on_start(job.session.budget, nullptr);
  Outcome out;
  out.session = Session(spec, job.session, ev).run();
  out.restarts = restarts_of(*gpu);
  if (out.session.best) {
    out.winner = winner_entry(spec, out.session, environment_of(job), job.host);
    out.op = op_spec(spec);
  }
  return out;
}

Outcome run_library(const Job& job, const LibraryGemm& t) {
  auto gpu = measuring(job, [problem = t.problem, options = t.options, device = job.device] {
    return std::make_unique<LibraryEvaluator>(problem, options, device);
  });
  Outcome out;
  out.candidates = library_candidates(*gpu, job.session.out_dir, job.session.resume);
  const LibrarySpace space(*out.candidates);
  SessionOptions options = job.session;
  options.prefetch = 1;  // nothing compiles: propose as results come
  Observed ev(*gpu, job);
  if (job.on_start)
    job.on_start(
        std::min<std::size_t>(options.budget ? options.budget : out.candidates->configs.size(),
                              out.candidates->configs.size()),
        &*out.candidates);
  out.session = Session(library_target(t.problem, *out.candidates, space), options, ev).run();
  out.restarts = restarts_of(*gpu);
  if (out.session.best) {
    out.winner = library_winner_entry(t.problem, *out.candidates, out.session, environment_of(job),
                                      job.host);
    if (const SessionRecord* d = library_default_record(*out.candidates, out.session)) {
      out.default_ns = d->result.time_ns();
      out.default_won = library_winner_record(*out.candidates, out.session) == d;
    }
  }
  return out;
}

}  // namespace

Outcome run(const Job& job) {
  return std::visit(
      [&](const auto& t) {
        if constexpr (std::is_same_v<std::decay_t<decltype(t)>, SpecKernel>)
          return run_spec(job, t);
        else
          return run_library(job, t);
      },
      job.target);
}

}  // namespace ktune::tune
