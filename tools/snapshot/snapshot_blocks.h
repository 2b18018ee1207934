/* snapshot_blocks.h — the size of the block PyTorch's caching allocator gave each allocation
 * of a snapshot's trace.
 *
 * A snapshot's trace entries carry the sizes the program asked for; memory_stats()'
 * allocated_bytes counts the blocks, which are larger: the request rounded (round_size), or a
 * whole free block where c10 does not split it (a large-pool remainder of at most 1 MiB, a
 * request at or above max_split_size). The free blocks are not in the trace either, but c10
 * merges a free block with its free neighbours, so the free block an allocation at address A
 * takes runs from A to the next block still in use (allocated, or freed while a stream may
 * use it) or the end of its segment. This replays the entries in order to find it. Blocks of
 * expandable segments, and of segments neither made in the window nor in the state before it
 * that a ring-limited window rebuilds, are rounded only. */
#ifndef CMT_SNAPSHOT_BLOCKS_H
#define CMT_SNAPSHOT_BLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "caching_model.h"
#include "cmt_format.h"
#include "snapshot.h"

/* Sets entry_size[i] for every alloc entry i of s (the others are left as they are), under
 * the allocator settings in config, from the state before the window: its segments and blocks
 * in before[0 .. nbefore-1] (none: a window that starts empty). @return 0, or CMT_ENOMEM. */
int cmt__snapshot_block_sizes(const struct cmt_snapshot *s, const struct cmt_model_config *config,
                              const struct cmt_alloc_event *before, size_t nbefore,
                              uint64_t *entry_size);

/* The state before a ring-limited window (its events flagged before, ev[0 .. n-1]) knows
 * every block then in use, but sizes those the window frees from their requests. A large-pool
 * free block of c10 is over 1 MiB (it splits no smaller remainder off), so a gap of at most
 * 1 MiB after such a block, up to the next block or its segment's end, is the block's: this
 * widens the block to it. @return 0, or CMT_ENOMEM. */
int cmt__snapshot_before_sizes(struct cmt_alloc_event *ev, size_t n,
                               const struct cmt_model_config *config);

#endif
