/* include/cumemtrace/annotate.h compiles alone, as C99 and as C++11, with every warning an
 * error (test annotate_header); run without the shim every call is a no-op (exit 0). */
#include "cumemtrace/annotate.h"

int main(void)
{
    uint32_t id = cmt_annotate_allocator("check", "", NULL);
    cmt_annotate_alloc(id, 0, 4096, 512, 500, 0, 0, 4096, 0);
    cmt_annotate_free(id, CMT_ANNOTATE_FREE_REQUESTED, 0, 4096, 512, 0);
    cmt_annotate_segment(id, CMT_ANNOTATE_SEGMENT_ALLOC, 0, 4096, 1 << 20, 0, 0, 0);
    cmt_annotate_oom(id, 0, 1 << 20, 0, 0, 0, 0, 0);
    cmt_annotate_event(1, CMT_ANNOTATE_SNAPSHOT, -1, 0, NULL); /* id 1 without the shim */
    return id != 0;
}
