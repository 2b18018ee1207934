/* make_hostile.c — writes the hostile trace files of corpus/hostile (run once by hand:
 * `cmt_make_hostile tests/fuzz/corpus/hostile`; the files are committed). replay_hostile.sh
 * runs the commands on each and checks the exit status its name ends with: `.exit0.cmt` must
 * be analysed (with a warning where the file is odd), `.exit1.cmt` refused with one line.
 * `cmt_make_hostile --repeated BYTES FILE` writes one file of repeated records that big (the
 * memory measurement of docs/trace-format.md, rule 6). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile_traces.h"

static const char *dir;

static void save(const char *name, const struct cmt_membuf *b, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "make_hostile: cannot write %s\n", path);
        return;
    }
    printf("%s (%zu bytes)\n", path, len);
}

/* A fresh four-chunk trace (and its closing chunk), changed by `how`, saved as `name`. */
static void chunked(const char *name, void (*how)(struct cmt_membuf *))
{
    struct cmt_membuf b;
    hostile_chunked(&b, 4);
    if (how)
        how(&b);
    save(name, &b, b.len);
    cmt_membuf_free(&b);
}

static void duplicate_second(struct cmt_membuf *b)
{
    hostile_duplicate_chunk(b, 1);
}
static void swap_second_third(struct cmt_membuf *b)
{
    hostile_swap_chunks(b, 1, 2);
}
static void drop_second(struct cmt_membuf *b)
{
    hostile_drop_chunk(b, 1);
}
static void first_last(struct cmt_membuf *b)
{
    hostile_swap_chunks(b, 0, 3);
}
static void major2(struct cmt_membuf *b)
{
    hostile_relabel(b, 2);
}
static void major1(struct cmt_membuf *b)
{
    hostile_relabel(b, 1);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--repeated") == 0) { /* one file of repeats, that big */
        struct cmt_membuf b;
        uint64_t repeats;
        hostile_repeated(&b, (size_t)strtoull(argv[2], NULL, 10), &repeats);
        dir = ".";
        save(argv[3], &b, b.len);
        printf("%llu repeated records\n", (unsigned long long)repeats);
        cmt_membuf_free(&b);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: make_hostile DIR | make_hostile --repeated BYTES FILE\n");
        return 2;
    }
    dir = argv[1];
    chunked("chunk_duplicated.exit0.cmt", duplicate_second);
    chunked("chunks_reordered.exit0.cmt", swap_second_third);
    chunked("chunk_missing.exit0.cmt", drop_second);
    chunked("chunk_first_moved_last.exit0.cmt", first_last);
    chunked("major3_relabelled_2.exit1.cmt", major2);
    chunked("major3_relabelled_1.exit1.cmt", major1);
    struct cmt_membuf b;
    hostile_chunked(&b, 1);
    save("cut_before_any_event.exit1.cmt", &b, 16 + 16 + 40);
    cmt_membuf_free(&b);
    uint64_t repeats;
    hostile_repeated(&b, 4 << 10, &repeats);
    save("repeated_records.exit0.cmt", &b, b.len);
    cmt_membuf_free(&b);
    return 0;
}
