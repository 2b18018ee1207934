/* fd_hostile MODE DATA N: a program that treats every descriptor above 2 as its own, the way
 * daemons and sandboxes do, while it allocates. DATA is a file of the program's, opened
 * read-write. N allocations (each freed at once) on the main thread in rounds of 1000; after
 * the first one (and a pause, so that a tracer has opened what it keeps open) and after each
 * round:
 *   dup2   DATA's descriptor is dup2'ed over every fd from 3 to 255 (a table of copies);
 *   close  every fd >= 3 is closed (close_range), DATA opened again;
 * then a new thread makes one allocation and free and stays until the end (so a tracer maps
 * a new per-thread buffer after each round). The program never writes to DATA; the test
 * checks that nobody else did. Exits 0, or 1 when a call fails. */
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ROUND 1000
#define MAX_THREADS 256

static CUcontext ctx;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ended = PTHREAD_COND_INITIALIZER;
static int done, failed;

static int hostile(const char *mode, const char *data, int fd)
{
    if (!strcmp(mode, "dup2")) {
        for (int i = 3; i <= 255; i++)
            if (i != fd && dup2(fd, i) != i)
                return -1;
        return fd;
    }
    close_range(3, ~0u, 0);
    return open(data, O_RDWR | O_CLOEXEC);
}

static int alloc_free(long i)
{
    CUdeviceptr p;
    if (cuMemAlloc(&p, 4096 + (size_t)(i % 13) * 512) || cuMemFree(p)) {
        fprintf(stderr, "fd_hostile: allocation %ld failed\n", i);
        return -1;
    }
    return 0;
}

/* One allocation on a thread of its own, which then waits for the end. */
static void *one_more(void *arg)
{
    int bad = cuCtxSetCurrent(ctx) || alloc_free((long)arg);
    pthread_mutex_lock(&lock);
    failed |= bad;
    while (!done)
        pthread_cond_wait(&ended, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "dup2") && strcmp(argv[1], "close"))) {
        fprintf(stderr, "usage: fd_hostile dup2|close DATA N\n");
        return 2;
    }
    const char *mode = argv[1], *data = argv[2];
    long n = atol(argv[3]);
    int fd = open(data, O_RDWR | O_CLOEXEC);
    CUdevice dev;
    if (fd < 0 || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "fd_hostile: setup failed\n");
        return 1;
    }
    pthread_t threads[MAX_THREADS];
    int nthreads = 0;
    for (long i = 0; i < n; i++) {
        if (i == 1)
            usleep(200000);
        if (i % ROUND == 1) {
            if ((fd = hostile(mode, data, fd)) < 0) {
                perror("fd_hostile");
                return 1;
            }
            if (nthreads < MAX_THREADS &&
                pthread_create(&threads[nthreads], NULL, one_more, (void *)i) == 0)
                nthreads++;
        }
        if (alloc_free(i))
            return 1;
    }
    pthread_mutex_lock(&lock);
    done = 1;
    pthread_cond_broadcast(&ended);
    pthread_mutex_unlock(&lock);
    for (int t = 0; t < nthreads; t++)
        pthread_join(threads[t], NULL);
    printf("threads %d\n", nthreads);
    return failed;
}
