// The platform sections of CPlatform.h: what differs between Linux (glibc, musl), Android
// (Bionic) and Apple (Darwin). Everything else is the same POSIX call everywhere.
#include "CPlatform.h"

#if !defined(__linux__) && !defined(__ANDROID__) && !defined(__APPLE__)
#error "CoordsCore supports Linux, Android, iOS and macOS (docs/MOBILE.md)"
#endif

int coords_errno(void) { return errno; }

void coords_set_errno(int value) { errno = value; }

int coords_open(const char *path, int flags, unsigned int mode) { return open(path, flags, (mode_t)mode); }

ssize_t coords_read(int fd, void *buffer, size_t count) { return read(fd, buffer, count); }

ssize_t coords_write(int fd, const void *buffer, size_t count) { return write(fd, buffer, count); }

int coords_sync_file(int fd) {
#if defined(__APPLE__)
    // Darwin's fsync does not flush the drive's write cache; F_FULLFSYNC does (where supported).
    if (fcntl(fd, F_FULLFSYNC) == 0) return 0;
#endif
    return fsync(fd);
}

int coords_mode_is_directory(mode_t mode) { return S_ISDIR(mode) ? 1 : 0; }

int coords_mode_is_regular(mode_t mode) { return S_ISREG(mode) ? 1 : 0; }

unsigned int coords_mode_permissions(mode_t mode) { return (unsigned int)(mode & 07777); }

struct coords_thread_start {
    void (*body)(void *);
    void *argument;
};

static void *coords_thread_main(void *start) {
    struct coords_thread_start run = *(struct coords_thread_start *)start;
    free(start);
    run.body(run.argument);
    return NULL;
}

int coords_thread_start(coords_thread *thread, void (*body)(void *), void *argument) {
    struct coords_thread_start *start = malloc(sizeof *start);
    if (start == NULL) return ENOMEM;
    start->body = body;
    start->argument = argument;
    pthread_t handle;
    int status = pthread_create(&handle, NULL, coords_thread_main, start);
    if (status != 0) {
        free(start);
        return status;
    }
    memset(thread, 0, sizeof *thread);
    memcpy(thread, &handle, sizeof handle < sizeof *thread ? sizeof handle : sizeof *thread);
    return 0;
}

static pthread_t coords_thread_handle(coords_thread thread) {
    pthread_t handle;
    memset(&handle, 0, sizeof handle);
    memcpy(&handle, &thread, sizeof handle < sizeof thread ? sizeof handle : sizeof thread);
    return handle;
}

void coords_thread_join(coords_thread thread) { pthread_join(coords_thread_handle(thread), NULL); }

void coords_thread_detach(coords_thread thread) { pthread_detach(coords_thread_handle(thread)); }

int coords_thread_is_current(coords_thread thread) { return pthread_equal(pthread_self(), coords_thread_handle(thread)) ? 1 : 0; }
