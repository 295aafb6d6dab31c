// libktune_python.so: the C ABI the Python package loads with ctypes (python/ktune/_native.py).
// Plain C, with no Python headers, so one build serves every CPython 3 (as XGBoost and LightGBM
// do). Data crosses as JSON text, the same versioned forms the CLI prints.
//
// Every call that can fail returns a status: KTUNE_OK, KTUNE_ERROR (a ktune::Error, malformed JSON,
// or anything else thrown) or KTUNE_NO_GPU (no driver or GPU). The failure's one sentence is then
// ktune_last_error(), per thread. No exception crosses this boundary. A string handed out through
// `char** out` is the library's, to be released with ktune_free; `*out` is set only on KTUNE_OK.
// Strings handed in are UTF-8, NUL-terminated and never NULL.
#ifndef KTUNE_PYTHON_CAPI_H
#define KTUNE_PYTHON_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Exported; libktune_python.so's version script keeps every other symbol local.
#define KTUNE_CAPI __attribute__((visibility("default")))

enum { KTUNE_OK = 0, KTUNE_ERROR = 1, KTUNE_NO_GPU = 2 };

// The sentence of this thread's last failed call; "" before any. Valid until its next call.
KTUNE_CAPI const char* ktune_last_error(void);
KTUNE_CAPI void ktune_free(char* s);

// "0.1.0 (abc1234)".
KTUNE_CAPI int ktune_version(char** out);
// The tracer this build made, for a package run from the build tree.
KTUNE_CAPI int ktune_tracer_build_path(char** out);

// `ktune report TRACE --format json` of the .ktrace at `path`, grouped by "name" or "name+launch".
KTUNE_CAPI int ktune_report_json(const char* path, const char* by, char** out);

// Store calls: `db` is a SQLite path or postgresql:// URL, "" for the default store (KTUNE_HOME).

// The answer of `ktune cache get --json`; env_json: {arch, device_name, toolkit, driver_major}.
KTUNE_CAPI int ktune_lookup_json(const char* db, const char* op, const char* dtype,
                                 const int64_t* shape, size_t shape_len, const char* env_json,
                                 char** out);
// The entry under a full key ({op, dtype, bucket, arch, device_name, toolkit, driver_major}), or
// "null".
KTUNE_CAPI int ktune_get_entry_json(const char* db, const char* key_json, char** out);
// Offers a tuning result, which wins its key as Store::put_entry decides (force: wins anyway);
// out: {winner, reason, bucket, previous_median_ns?}.
KTUNE_CAPI int ktune_put_entry_json(const char* db, const char* entry_json, int force, char** out);
// Declares `op` with its bucket policy.
KTUNE_CAPI int ktune_put_op(const char* db, const char* op, const char* policy_json);
// The name of the bucket `shape` falls in under a bucket policy; needs no store.
KTUNE_CAPI int ktune_bucket_name(const char* policy_json, const int64_t* shape, size_t shape_len,
                                 char** out);
// The entries of `op`, narrowed to an arch and a device name unless those are "".
KTUNE_CAPI int ktune_list_entries_json(const char* db, const char* op, const char* arch,
                                       const char* device_name, char** out);

// GPU 0's cache environment {arch, device_name, toolkit, driver_major}; KTUNE_NO_GPU without one.
KTUNE_CAPI int ktune_detect_environment(char** out);

// An NVTX range on this thread, as `ktune profile --range nvtx:NAME` selects.
KTUNE_CAPI int ktune_nvtx_push(const char* name);
KTUNE_CAPI int ktune_nvtx_pop(void);

// The GEMM router this build made (libktune_route.so), for a package run from the build tree.
KTUNE_CAPI int ktune_router_build_path(char** out);
// The router's table (`ktune run --write-table`'s JSON, schema_version 1) of the store's cuBLASLt
// winners for an arch and a device name.
KTUNE_CAPI int ktune_route_table_json(const char* db, const char* arch, const char* device_name,
                                      char** out);

#ifdef __cplusplus
}
#endif

#endif  // KTUNE_PYTHON_CAPI_H
