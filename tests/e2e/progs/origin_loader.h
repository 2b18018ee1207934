/* origin_loader.h — the one function of liborigin_loader (origin_loader.c). */
#ifndef CMT_TEST_ORIGIN_LOADER_H
#define CMT_TEST_ORIGIN_LOADER_H

/* dlopens liborigin_target.so through the library's RUNPATH. @return 1 when it loaded, else 0. */
int origin_load(void);

#endif
