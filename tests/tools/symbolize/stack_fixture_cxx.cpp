// stack_fixture_cxx.cpp — a frame inside a C++ function, to check demangling.
/* A call and the __LINE__ it returns to share a line, as the test expects: */
/* clang-format off */
#include <stdint.h>

namespace cmt_fixture {

struct frame {
    uint64_t ip;
    unsigned line;
};

__attribute__((noinline)) static void inner(frame *f)
{
    f->ip = (uint64_t)(uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) void caller(frame *f, int)
{
    inner(f); f->line = __LINE__;
}

} // namespace cmt_fixture

extern "C" uint64_t fixture_cxx_frame(const char **name, unsigned *line)
{
    cmt_fixture::frame f = {0, 0};
    cmt_fixture::caller(&f, 1);
    *name = "cmt_fixture::caller(cmt_fixture::frame*, int)";
    *line = f.line;
    return f.ip;
}
/* clang-format on */
