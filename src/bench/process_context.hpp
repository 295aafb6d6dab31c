#pragma once
// Keeps a device's primary context alive until the process exits.
//
// ktune::cuda keeps process-wide objects bound to the context they were created in (the module of
// fill_random, a function-local static). When the last PrimaryContext owner (a Bench, an evaluator)
// released the context, the driver destroyed it and that module was unloaded at exit from a dead
// context (CUDA_ERROR_CONTEXT_IS_DESTROYED), or used or unloaded from a later context built in the
// same process (CUDA_ERROR_INVALID_HANDLE). Retaining the primary context once per process, as the
// CUDA runtime does, removes both: nothing context-bound outlives its context.
namespace ktune::bench::detail {

// Call before anything that creates process-wide device objects (fill_random, poison). The retain
// is released after every static constructed later has been destroyed.
void retain_primary_context_for_process(int ordinal);

}  // namespace ktune::bench::detail
