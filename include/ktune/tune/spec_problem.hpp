#pragma once
// Binds a T1 tuning spec (tune/spec.hpp) and one configuration to a harness Problem: the kernel
// source with the configuration as -DNAME=VALUE, grid/block/shared memory from the spec's
// expressions, arguments with their fills, the reference and the FLOP and byte counts.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "ktune/bench/problem.hpp"
#include "ktune/tune/spec.hpp"

namespace ktune::bench {

using ConfigValues = std::map<std::string, tune::Value>;

// Every parameter at its Default (else its first value).
ConfigValues default_config(const tune::ProblemSpec& spec);

// "NAME=VALUE,..." over the defaults. ktune::Error (one sentence naming the parameter and its
// allowed values) for an unknown name or a value not in the spec.
ConfigValues parse_config(const tune::ProblemSpec& spec, std::string_view text);

// The Problem for `values` (all parameters). `shape` overrides the spec's shape variables.
// ktune::Error for an argument ktune cannot fill (BinaryRaw, Generator) or an unknown type.
Problem make_problem(const tune::ProblemSpec& spec, const ConfigValues& values,
                     const std::map<std::string, std::int64_t>& shape = {});

}  // namespace ktune::bench
