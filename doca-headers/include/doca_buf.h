/*
 * dpakit soft device: buffers.
 *
 * A buffer describes a region [head, head + len) inside a started mmap and, within it, the data
 * [data, data + data_len). Buffers come from a buffer inventory and return to it when their
 * reference count drops to zero.
 */
#ifndef DOCA_BUF_H
#define DOCA_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;

/* Takes one more reference. */
DOCA_STABLE
doca_error_t doca_buf_inc_refcount(struct doca_buf *buf, uint16_t *refcount);

/* Drops one reference (refcount may be NULL); at zero the buffer returns to its inventory. */
DOCA_STABLE
doca_error_t doca_buf_dec_refcount(struct doca_buf *buf, uint16_t *refcount);

DOCA_STABLE
doca_error_t doca_buf_get_refcount(const struct doca_buf *buf, uint16_t *refcount);

/* Start of the buffer's region. */
DOCA_STABLE
doca_error_t doca_buf_get_head(const struct doca_buf *buf, void **head);

/* Length of the buffer's region. */
DOCA_STABLE
doca_error_t doca_buf_get_len(const struct doca_buf *buf, size_t *len);

DOCA_STABLE
doca_error_t doca_buf_get_data(const struct doca_buf *buf, void **data);

DOCA_STABLE
doca_error_t doca_buf_get_data_len(const struct doca_buf *buf, size_t *data_len);

/* Sets the data window; it must lie inside the buffer's region. */
DOCA_STABLE
doca_error_t doca_buf_set_data(struct doca_buf *buf, void *data, size_t data_len);

DOCA_STABLE
doca_error_t doca_buf_set_data_len(struct doca_buf *buf, size_t data_len);

DOCA_STABLE
doca_error_t doca_buf_reset_data_len(struct doca_buf *buf);

/* Appends list2 to list1. The soft device keeps buffers unchained: DOCA_ERROR_NOT_SUPPORTED. */
DOCA_STABLE
doca_error_t doca_buf_chain_list(struct doca_buf *list1, struct doca_buf *list2);

/* Buffer lists: the soft device keeps every buffer a list of one. */
DOCA_STABLE
doca_error_t doca_buf_get_list_len(const struct doca_buf *buf, uint32_t *num_elements);

DOCA_STABLE
doca_error_t doca_buf_get_next_in_list(struct doca_buf *buf, struct doca_buf **next_buf);

DOCA_STABLE
doca_error_t doca_buf_get_last_in_list(struct doca_buf *buf, struct doca_buf **last_buf);

DOCA_STABLE
doca_error_t doca_buf_is_last_in_list(const struct doca_buf *buf, uint8_t *is_last);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_BUF_H */
