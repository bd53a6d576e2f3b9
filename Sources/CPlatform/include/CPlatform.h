// The one place the core reaches the C library (docs/MOBILE.md, "Portable sources"). Swift files
// import this module, never Glibc, Musl, Bionic or Darwin by name (scripts/check-platform-calls.py
// fails on that in make test). The POSIX headers below are the same on every platform the core
// supports — Linux (glibc, musl), Android (Bionic) and Apple (Darwin) — and give the portable
// calls (close, fsync, rename, pthread_mutex_*, clock_gettime, …); what differs by platform, or
// what Swift cannot import (errno, variadic open), is a coords_* function below, implemented in
// CPlatform.c with one section per platform.
#ifndef COORDS_CPLATFORM_H
#define COORDS_CPLATFORM_H
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

// Hidden: these are the core's own, never exports of libcoordscore.so (whose C ABI is
// include/coordscore.h alone; scripts/check-abi.sh holds the two together).
#pragma GCC visibility push(hidden)

/// The calling thread's errno (a macro C cannot hand to Swift).
int coords_errno(void);

/// Sets the calling thread's errno.
void coords_set_errno(int value);

/// open(2) with its mode always passed (Swift cannot call the variadic one). -1 and errno on failure.
int coords_open(const char *path, int flags, unsigned int mode);

/// read(2) (named apart from the Swift methods called read).
ssize_t coords_read(int fd, void *buffer, size_t count);

/// write(2) (named apart from the Swift methods called write).
ssize_t coords_write(int fd, const void *buffer, size_t count);

/// Makes a file's contents durable before it is renamed into place or reported written: fsync(2)
/// on Linux and Android; on Apple fcntl(F_FULLFSYNC) (fsync alone leaves the data in the drive's
/// cache there), falling back to fsync where the file system does not support it. 0, or -1 and
/// errno. (A directory is synced with fsync itself.)
int coords_sync_file(int fd);

/// Whether a stat's st_mode is a directory / a regular file (S_ISDIR, S_ISREG are macros).
int coords_mode_is_directory(mode_t mode);

/// See coords_mode_is_directory.
int coords_mode_is_regular(mode_t mode);

/// The permission bits of a st_mode (mode & 07777).
unsigned int coords_mode_permissions(mode_t mode);

/// An OS thread (pthread_t is an integer on Linux and Android, a pointer on Apple).
typedef struct coords_thread { void *opaque; uintptr_t value; } coords_thread;

/// Starts `body(argument)` on a new joinable thread. 0, or pthread_create's error.
int coords_thread_start(coords_thread *thread, void (*body)(void *), void *argument);

/// Waits for the thread to end.
void coords_thread_join(coords_thread thread);

/// Lets the thread end on its own.
void coords_thread_detach(coords_thread thread);

/// Whether the calling thread is `thread`.
int coords_thread_is_current(coords_thread thread);

#pragma GCC visibility pop

#endif
