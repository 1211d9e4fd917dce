/* The runtime's own executable, kept out of the containers' reach. */
#ifndef BRIG_SELFEXE_H
#define BRIG_SELFEXE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* True when this process runs from a sealed in-memory copy of brig. */
bool brig_selfexe_is_sealed(void);

/* Makes the process's executable (/proc/self/exe) a file nobody can write,
 * unless it already is one (a read-only mount, a sealed copy): moves the
 * process in place onto a detached read-only bind mount of its file, or
 * where that can't be done re-executes brig (argv, environ) from there, or
 * from a sealed in-memory copy. Returns 0 when the process is guarded; a
 * re-execution doesn't return, unless it fails. */
int brig_selfexe_protect(char **argv, brig_error_t *err);

/* For commands that start a container's init: like brig_selfexe_protect(),
 * except that where the read-only view can be had, the move onto it is
 * left for later (brig_selfexe_deferred_fd, brig_selfexe_finish): the init
 * of a new pid namespace makes it itself, before anything can see it,
 * and the runtime, which never enters the container, runs on unmoved. */
int brig_selfexe_defer(char **argv, brig_error_t *err);
/* The read-only view left by brig_selfexe_defer(), or -1: nothing is
 * deferred (the process is guarded already, or needs no guard). */
int brig_selfexe_deferred_fd(void);
/* Moves this process onto the deferred view now (when what it is about to
 * start can't do it for itself); 0 when nothing was deferred. */
int brig_selfexe_finish(brig_error_t *err);

/* Where brig_selfexe_protect() keeps the read-only views of brig's file
 * that every brig process after the first moves onto: beside the default
 * state root, under a name no container id can have. */
#define BRIG_SELFEXE_CACHE_DIR "/run/brig/.exe-ro@"

/* A read-only view of this process's executable kept in `dir` for all
 * brigs of the same file: opened for reading when there, else made
 * (attached there as a read-only bind mount) and opened. -1 when it can't
 * be had; the caller then makes a view of its own. */
int brig_selfexe_cached_readonly(const char *dir);

/* Swaps the process's image for the same one mapped from fd (a readable
 * fd of the very same file, on a read-only mount) and makes fd's file
 * /proc/self/exe. On failure the process runs on unchanged. */
int brig_selfexe_rebind(int fd, brig_error_t *err);

/* The path of the brig file this process was started from, also after the
 * move or the re-exec; -1 when unknown. */
int brig_selfexe_path(char *buf, size_t size);

/* A file next to the running program (a build tree), or NULL. Caller
 * frees. (locate.c) */
char *brig_beside_self(const char *name);
/* The program `name`: $ENV when set, else the one beside the running
 * program (a build tree's brig takes the tree's, not an older install's),
 * else `installed` (NULL: none) when it is there; an error names the
 * variable. *out is owned. */
int brig_locate_program(const char *name, const char *env, const char *installed, char **out,
                        brig_error_t *err);

#endif
