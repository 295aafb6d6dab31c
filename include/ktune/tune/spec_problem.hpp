#pragma once
// Binds a T1 tuning spec (spec/spec.hpp) and one configuration to a harness Problem: the kernel
// source with the configuration as -DNAME=VALUE, grid/block/shared memory from the spec's
// expressions, arguments with their fills, the reference and the FLOP and byte counts.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "ktune/bench/problem.hpp"
#include "ktune/spec/spec.hpp"
#include "ktune/tune/session.hpp"

namespace ktune::tune {

// Every parameter at its Default (else its first value).
ConfigMap default_config(const ProblemSpec& spec);

// "NAME=VALUE,..." over the defaults. ktune::Error (one sentence naming the parameter and its
// allowed values) for an unknown name or a value not in the spec.
ConfigMap parse_config(const ProblemSpec& spec, std::string_view text);

// Copies `g` into the launch `l` (each dimension clamped to what its field holds) and says whether
// CUDA can launch it (LaunchGeometry::launchable): the one check of make_problem and the dry run.
bool set_geometry(bench::KernelLaunch& l, const LaunchGeometry& g);

// The Problem for `values` (all parameters). `shape` overrides the spec's shape variables.
// ktune::Error for an argument ktune cannot fill (BinaryRaw, Generator), an unknown type, a launch
// geometry no GPU takes, or a spec ktune cannot run (OpenCL).
bench::Problem make_problem(const ProblemSpec& spec, const ConfigMap& values,
                            const std::map<std::string, std::int64_t>& shape = {});

// The shape variables that make some configuration of `spec` launch exactly `grid` and `block` (a
// kernel's launch as a trace recorded it): the first configuration (in enumeration order, at most
// `max_configs` of them) whose block is the launch's, then each shape variable the grid reads set
// to the largest value that gives the launch's grid (grid x GridDiv, the padded extent), the
// others at their defaults. nullopt when the spec has no shape variables (its problem is fixed)
// or no configuration launches that way.
std::optional<std::map<std::string, std::int64_t>> shape_from_launch(
    const ProblemSpec& spec, const std::array<std::int64_t, 3>& grid,
    const std::array<std::int64_t, 3>& block, std::size_t max_configs = 20000);

}  // namespace ktune::tune
