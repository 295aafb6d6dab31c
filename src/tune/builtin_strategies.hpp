#pragma once
// The strategies ktune ships, each in its own file; strategy.cpp registers them on first use.
namespace ktune::tune::detail {

void register_builtin_strategies();
void register_basic_strategies();    // exhaustive, random
void register_genetic_strategy();    // genetic
void register_annealing_strategy();  // annealing
void register_model_strategy();      // model, hybrid, thompson
void register_portfolio_strategy();  // portfolio

inline void register_builtin_strategies() {
  register_basic_strategies();
  register_genetic_strategy();
  register_annealing_strategy();
  register_model_strategy();
  register_portfolio_strategy();
}

}  // namespace ktune::tune::detail
