/*
 * model_settings.h — the PYTORCH_CUDA_ALLOC_CONF settings the model knows, in
 * one table.
 *
 * CMT_MODEL_SETTINGS(X) has one entry per setting:
 *
 *   X(field, type, conf_key, default, cli_flag, json_key, conf_rank, lo, hi, help)
 *
 *   field      the member in struct cmt_model_config and struct
 *              cmt_whatif_setting (both are generated from this table)
 *   type       one of the setting types below; says the C type, how the
 *              value is parsed, printed and written to JSON
 *   conf_key   the key in PYTORCH_CUDA_ALLOC_CONF
 *   default    PyTorch's default, in the field's unit (bytes for sizes)
 *   cli_flag   the option of `cumemtrace whatif` that takes a list of values
 *   json_key   the key of the value in `whatif --json` results
 *   conf_rank  the place of the key in the string cmt_model_config_format
 *              writes (0 first); the table's own order is the order of the
 *              struct fields, the sweep (first entry varying slowest), the
 *              JSON keys and the options in `whatif --help`
 *   lo, hi     the values a user may give, in the user's unit (MiB for sizes);
 *              see the type for which bounds are inclusive
 *   help       the option's text in `whatif --help` (lines after the first
 *              are indented by the printer)
 *
 * What each setting means (PyTorch's CUDACachingAllocator.cpp):
 *   max_split_size: bytes; UINT64_MAX (or 0) is unlimited, PyTorch's default.
 *     A finite value, even a huge one such as 2147483647 MiB, turns on
 *     release_available_cached_blocks just as it does in PyTorch.
 *   expandable_segments: expandable_segments:True.
 *   roundup_power2_divisions: one value applied to every size interval
 *     (PyTorch's single-value form). 0 or 1: off. A power of two. The
 *     per-interval list form lives beside the table's fields
 *     (cmt_model_config.roundup_power2_intervals); whatif sweeps one value.
 *   garbage_collection_threshold: in (0, 1); 0: off. Acts only together with
 *     a memory fraction cap (whatif's --memory-fraction), as in PyTorch: before a device allocation, while
 *     reserved > threshold x cap, whole free large-pool segments at least as
 *     old as the average are released. Age is exactly PyTorch's: the number
 *     of large-pool get_free_block calls (allocations) since the block was
 *     cached. Simplification: expandable-segment blocks are never collected.
 *   max_non_split_rounding: bytes (PyTorch 2.x; 20 MiB, kLargeBuffer, as 1.x
 *     hard-codes). A request at or above max_split_size takes a cached
 *     (oversize) block only if the block is smaller than request + this.
 *
 * Setting types (the value in brackets is its C type):
 *   limit_mb  [uint64_t bytes] whole MiB > lo (c10: "must be > 20"), or
 *             unlimited (UINT64_MAX; 0 reads the same). whatif takes MiB in
 *             (lo, hi] or inf/unlimited.
 *   mb        [uint64_t bytes] whole MiB > lo in the string (c10); whatif
 *             also takes lo itself, the default (which is the key left out).
 *   pow2      [unsigned] a power of two; 0 and 1 are off. whatif takes 0 or a
 *             power of two up to hi.
 *   fraction  [double] lo < v < hi; 0 is off (and what whatif's 0 means).
 *   boolean   [bool] True/False in the string, true/false/yes/no/1/0 in whatif.
 *
 * A zero field in a struct cmt_whatif_setting means the setting's default, so
 * a setting added here leaves zero-initialised settings on PyTorch's default.
 *
 * Adding a setting: docs/recipes-settings.md.
 */
#ifndef CMT_MODEL_SETTINGS_H
#define CMT_MODEL_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#define CMT_MODEL_SETTINGS(X)                                                                      \
    X(max_split_size, limit_mb, "max_split_size_mb", UINT64_MAX, "--max-split-size-mb",            \
      "max_split_size_mb", 0, 20, (double)(1ull << 40),                                            \
      "e.g. 4096,6144,8192,inf (default: unlimited and a\n"                                        \
      "ladder around the request that fails)")                                                     \
    X(expandable_segments, boolean, "expandable_segments", false, "--expandable-segments",         \
      "expandable_segments", 4, 0, 1, "true,false (default: false)")                               \
    X(roundup_power2_divisions, pow2, "roundup_power2_divisions", 0, "--roundup-power2-divisions", \
      "roundup_power2_divisions", 2, 1, 1024, "0 (off) or powers of two, e.g. 0,4 (default: 0)")   \
    X(garbage_collection_threshold, fraction, "garbage_collection_threshold", 0.0,                 \
      "--gc-threshold", "garbage_collection_threshold", 3, 0, 1,                                   \
      "0 (off) or fractions in (0,1), e.g. 0,0.8; acts only\n"                                     \
      "with --memory-fraction, as in PyTorch (default: 0)")                                        \
    X(max_non_split_rounding, mb, "max_non_split_rounding_mb", (20 * ((uint64_t)1 << 20)),         \
      "--max-non-split-rounding-mb", "max_non_split_rounding_mb", 1, 20, (double)(1ull << 40),     \
      "e.g. 20,64 (default: 20): how much larger than an\n"                                        \
      "oversize request the cached block it reuses may be")

/* The C type of each setting type. */
#define CMT__SETTING_CTYPE_limit_mb uint64_t
#define CMT__SETTING_CTYPE_mb uint64_t
#define CMT__SETTING_CTYPE_pow2 unsigned
#define CMT__SETTING_CTYPE_fraction double
#define CMT__SETTING_CTYPE_boolean bool
#define CMT__SETTING_CTYPE(type) CMT__SETTING_CTYPE_##type

/* The fields of a struct holding every setting, in table order. */
#define CMT__SETTING_FIELD(field, type, conf_key, def, flag, json, rank, lo, hi, help) \
    CMT__SETTING_CTYPE(type) field;
#define CMT_MODEL_SETTING_FIELDS CMT_MODEL_SETTINGS(CMT__SETTING_FIELD)

/* CMT_MODEL_SETTING_<field>: the index of each setting in the table. */
enum cmt_model_setting_index {
#define CMT__SETTING_INDEX(field, ...) CMT_MODEL_SETTING_##field,
    CMT_MODEL_SETTINGS(CMT__SETTING_INDEX)
#undef CMT__SETTING_INDEX
        CMT_MODEL_SETTING_COUNT
};

/* Whether a cmt_model_config value differs from the default: what
 * cmt_model_config_format names and what the whatif recommendation counts as
 * a change. */
static inline bool cmt__setting_set_limit_mb(uint64_t v, uint64_t def)
{
    return v != 0 && v != UINT64_MAX;
}
static inline bool cmt__setting_set_mb(uint64_t v, uint64_t def)
{
    return v != def;
}
static inline bool cmt__setting_set_pow2(unsigned v, unsigned def)
{
    return v > 1;
}
static inline bool cmt__setting_set_fraction(double v, double def)
{
    return v > 0.0;
}
static inline bool cmt__setting_set_boolean(bool v, bool def)
{
    return v != def;
}

#endif /* CMT_MODEL_SETTINGS_H */
