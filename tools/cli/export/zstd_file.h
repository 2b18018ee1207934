/* zstd_file.h — internal: a FILE whose bytes are written zstd-compressed, for the partitioned
 * export's .zst parts (export_partitioned.c). Any writer that takes a FILE writes through it
 * unchanged; DuckDB (read_csv, read_json_auto: by the .zst name), the zstd tool and Hadoop's
 * ZStandardCodec (Spark) read the result. */
#ifndef CMT__ZSTD_FILE_H
#define CMT__ZSTD_FILE_H

#include <stdio.h>

/* The level the partitioned export writes at. Measured on bench/fleet's events tables: level 1
 * gives 23 bytes an event of 141 at 0.4 us an event, level 3 25 (its longer window finds
 * nothing more in rows of decimal numbers), level 9 21 at 3.5 us, level 19 18 at 125 us;
 * gzip -6 gives 23.5 at 4 us. */
#define CMT__ZSTD_FILE_LEVEL 1

/* Wraps fd (open for writing) in a FILE that compresses what is written into one zstd frame
 * (with its checksum) at `level`; fclose() ends the frame and closes fd.
 * @return the FILE, or NULL when out of memory (fd is left open). A failed write makes
 * ferror() true and fclose() return EOF. */
FILE *cmt__zstd_fdopen(int fd, int level);

#endif
