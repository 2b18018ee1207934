/* alloc_fixture.h — traces with allocator-level records for the tests: the first write-up's
 * failure (seeds/000: 24 GiB card, 11.39 GiB allocated, 17.62 GiB reserved, 3.43 GiB free, a
 * 6.18 GiB request that fails although 6.23 GiB is reserved but unallocated). */
#ifndef CMT_TEST_ALLOC_FIXTURE_H
#define CMT_TEST_ALLOC_FIXTURE_H

#include "trace_builder.h"

/* The write-up's figures, in MiB, as the fixture builds them. */
#define WU_TOTAL_MIB 24576u  /* 24.00 GiB */
#define WU_FREE_MIB 3512u    /* 3.43 GiB free at the failure */
#define WU_REQUEST_MIB 6330u /* 6.18 GiB, the rounded request */
#define WU_SEG1_MIB 6554u    /* [2970 live][3584 free] */
#define WU_SEG2_MIB 11490u   /* [4000 live][4694 live][2796 free] */
#define WU_LIVE1_MIB 2970u
#define WU_GAP1_MIB 3584u /* the largest cached block: 3.50 GiB */
#define WU_GAP2_MIB 2796u
#define WU_OUTSIDE_MIB 1024u    /* NCCL's buffer, a driver allocation outside the cache */
#define WU_ALLOCATED_MIB 11664u /* 11.39 GiB */
#define WU_RESERVED_MIB 18044u  /* 17.62 GiB */
#define WU_SEG1 UINT64_C(0x7f0000000000)
#define WU_SEG2 UINT64_C(0x7f1000000000)

/* Builds the case into b (finished). with_driver: as the shim records it (the allocator's
 * cuMemAlloc segments, NCCL's buffer, the failed cuMemAlloc and its OOM sample interleaved);
 * else as converted from a snapshot (allocator records only, the segments flagged before). */
void wu_fragmentation(struct tb *b, int with_driver, const char *conf);

#endif
