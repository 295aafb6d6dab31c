#pragma once
// Binds a T1 tuning spec (tune/spec.hpp) and one configuration to a harness Problem: the kernel
// source with the configuration as -DNAME=VALUE, grid/block/shared memory from the spec's
// expressions, arguments with their fills, the reference and the FLOP and byte counts.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ktune/bench/problem.hpp"
#include "ktune/tune/session.hpp"
#include "ktune/tune/spec.hpp"

namespace ktune::tune {

// Every parameter at its Default (else its first value).
ConfigMap default_config(const ProblemSpec& spec);

// "NAME=VALUE,..." over the defaults. ktune::Error (one sentence naming the parameter and its
// allowed values) for an unknown name or a value not in the spec.
ConfigMap parse_config(const ProblemSpec& spec, std::string_view text);

// The Problem for `values` (all parameters). `shape` overrides the spec's shape variables.
// ktune::Error for an argument ktune cannot fill (BinaryRaw, Generator), an unknown type, a launch
// geometry no GPU takes, or a spec ktune cannot run (OpenCL).
bench::Problem make_problem(const ProblemSpec& spec, const ConfigMap& values,
                            const std::map<std::string, std::int64_t>& shape = {});

}  // namespace ktune::tune
