/* `whatif` on a failure whose memory other processes held (verdict held_by_others): the replay
 * runs against the memory the process could have had then (its own bytes and what was free),
 * not the whole card, and the advice fits the verdict (issue 23). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "commands.h"
#include "trace_builder.h"

/* A 24 GiB device, all free at first use: 6 GiB allocated, then other processes take 14 GiB
 * (a sample says 4 GiB free) and a 12 GiB request fails with 4 GiB free. */
static const char *held_trace(void)
{
    struct tb b;
    tb_begin(&b, 24 * TB_GIB, 24 * TB_GIB);
    uint32_t s = tb_frame(&b, tb_frame(&b, 0, "main"), "train_step");
    tb_alloc(&b, 0x100000000, 6 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_BASELINE, 4 * TB_GIB, 24 * TB_GIB, b.seq);
    uint64_t seq = tb_alloc_fail(&b, 12 * TB_GIB, s);
    tb_meminfo(&b, CMT_MEMINFO_OOM, 4 * TB_GIB, 24 * TB_GIB, seq);
    tb_finish(&b, 1);
    const char *path = temp_trace(b.buf.data, b.buf.len, 0);
    tb_free_builder(&b);
    return path;
}

Test(whatif_held, replays_against_the_memory_actually_free_and_advises_what_fits)
{
    const char *path = held_trace();
    const char *oom[] = {"oom", path, NULL};
    struct captured c = capture_run(cmt_cmd_oom, oom);
    cr_assert(strstr(c.out, "held_by_others"), "the verdict this test is about: %s", c.out);
    captured_free(&c);
    const char *text[] = {"whatif", path, NULL};
    c = capture_run(cmt_cmd_whatif, text);
    cr_expect_eq(c.status, 0, "%s", c.err);
    /* 6 GiB of its own and 4 GiB free: 10 GiB, where the 18 GiB the run needs cannot fit */
    cr_expect(strstr(c.out, "10.00 GiB"), "the capacity at the failure: %s", c.out);
    cr_expect(strstr(c.out, "held by other processes"), "%s", c.out);
    cr_expect(!strstr(c.out, "export PYTORCH_CUDA_ALLOC_CONF"), "no setting to export: %s", c.out);
    cr_expect(!strstr(c.out, "max_split_size_mb at or below"), "no split rule: %s", c.out);
    captured_free(&c);
    const char *json[] = {"whatif", "--json", path, NULL};
    c = capture_run(cmt_cmd_whatif, json);
    cr_expect_eq(c.status, 0, "%s", c.err);
    cr_expect(strstr(c.out, "\"capacity_bytes\":10737418240"), "%s", c.out);
    cr_expect(strstr(c.out, "\"capacity_source\":\"oom\""), "%s", c.out);
    captured_free(&c);
}
