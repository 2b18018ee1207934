/* stack_fixture.h — real return addresses inside this test executable, and its MODULE record.
 * stack_fixture.c is built with -g -O0 and holds static functions, so the symbolizer must
 * read .symtab (the executable is linked without -rdynamic) and DWARF line tables. */
#ifndef CMT_TEST_STACK_FIXTURE_H
#define CMT_TEST_STACK_FIXTURE_H

#include <stdint.h>

#include "cmt_format.h"

#define CHAIN_DEPTH 3

/* ip[i] is the return address into function[i], at source line line[i] of stack_fixture.c;
 * ip[0] is the innermost frame. */
struct chain {
    uint64_t ip[CHAIN_DEPTH];
    unsigned line[CHAIN_DEPTH];
    const char *function[CHAIN_DEPTH];
};

void fixture_capture_chain(struct chain *c);

/* Return address inside code inlined (always_inline) into a static function; *name is the
 * inlined function's name, *line the line of the call in it. */
uint64_t fixture_inlined_frame(const char **name, unsigned *line);

/* The running executable as the shim would record it: path, first PT_LOAD address, mapped
 * extent and GNU build-id (copied into `build_id`, at most 64 bytes). */
void fixture_self_module(struct cmt_module *m, char *path, size_t path_size, uint8_t *build_id);

/* Return address inside a C++ function (namespace cmt_fixture, demangled name in *name) and
 * its line. @return 0 when the test was built without C++. */
uint64_t fixture_cxx_frame(const char **name, unsigned *line);

#endif
