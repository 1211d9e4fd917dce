/* The shim's one event loop: epoll over fds, one callback per fd. Every
 * fd the shim watches (ttrpc listener and connections, signalfd, stdio
 * copies, inotify for OOM) goes through here, so the shim stays one thread
 * that never blocks. */
#ifndef SHIM_LOOP_H
#define SHIM_LOOP_H

#include <stdint.h>

#include "base/error.h"

struct shim_loop;

/* events: the EPOLL* bits that fired (EPOLLIN, EPOLLOUT, EPOLLHUP, EPOLLERR). */
typedef void (*shim_loop_cb)(struct shim_loop *loop, int fd, uint32_t events, void *data);

int shim_loop_new(struct shim_loop **out, brig_error_t *err);

/* Watches fd for events (EPOLLIN/EPOLLOUT; level-triggered). One
 * registration per fd: adding an fd twice fails with EEXIST. */
int shim_loop_add(struct shim_loop *l, int fd, uint32_t events, shim_loop_cb cb, void *data,
                  brig_error_t *err);
int shim_loop_mod(struct shim_loop *l, int fd, uint32_t events, brig_error_t *err);

/* Forgets fd (does not close it). Safe to call from inside any callback,
 * also for an fd whose event is still pending in the current batch: its
 * callback is then not called. Unknown fds are ignored. */
void shim_loop_del(struct shim_loop *l, int fd);

/* Runs a function once on the next turn of the loop, before waiting for fds
 * (e.g. to answer a Wait after the handler that registered it returned). */
typedef void (*shim_loop_fn)(struct shim_loop *loop, void *data);
int shim_loop_defer(struct shim_loop *l, shim_loop_fn fn, void *data, brig_error_t *err);

/* Calls fn after ms milliseconds (one shot), e.g. the grace period before
 * exiting after Shutdown. */
int shim_loop_after(struct shim_loop *l, int ms, shim_loop_fn fn, void *data, brig_error_t *err);

/* Dispatches until shim_loop_stop(); returns 0 then, -1 if epoll fails. */
int shim_loop_run(struct shim_loop *l, brig_error_t *err);
void shim_loop_stop(struct shim_loop *l);
void shim_loop_free(struct shim_loop *l);

#endif
