/*
 * dpakit soft device: buffer pools, buffers with a fixed place each in one mmap.
 *
 * Element i always covers the same bytes: elements start at the first address of the mmap's
 * memrange aligned to the element alignment, one every element_size rounded up to it.
 */
#ifndef DOCA_BUF_POOL_H
#define DOCA_BUF_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <doca_compat.h>
#include <doca_error.h>
#include <doca_types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;
struct doca_buf_pool;
struct doca_mmap;

/* The mmap's memrange must be set; its size is checked at start. */
DOCA_STABLE
doca_error_t doca_buf_pool_create(size_t num_elements, size_t element_size,
				  const struct doca_mmap *mmap, struct doca_buf_pool **buf_pool);

/* Stops the pool if needed; IN_USE while buffers of the pool are still referenced. */
DOCA_STABLE
doca_error_t doca_buf_pool_destroy(struct doca_buf_pool *buf_pool);

/* The mmap must be started (BAD_STATE); INITIALIZATION if the elements do not fit in it. */
DOCA_STABLE
doca_error_t doca_buf_pool_start(struct doca_buf_pool *buf_pool);

/* IN_USE while buffers of the pool are still referenced. */
DOCA_STABLE
doca_error_t doca_buf_pool_stop(struct doca_buf_pool *buf_pool);

/* An empty buffer over the next free element (refcount 1); EMPTY when all are taken.
 * doca_buf_dec_refcount to 0 returns it. */
DOCA_STABLE
doca_error_t doca_buf_pool_buf_alloc(struct doca_buf_pool *buf_pool, struct doca_buf **buf);

DOCA_STABLE
doca_error_t doca_buf_pool_set_user_data(struct doca_buf_pool *buf_pool, union doca_data user_data);

/* A power of two, 1 (no alignment) by default. */
DOCA_STABLE
doca_error_t doca_buf_pool_set_element_alignment(struct doca_buf_pool *buf_pool,
						 size_t element_alignment);

DOCA_STABLE
doca_error_t doca_buf_pool_get_num_elements(const struct doca_buf_pool *buf_pool,
					    uint32_t *num_of_elements);

DOCA_STABLE
doca_error_t doca_buf_pool_get_num_free_elements(const struct doca_buf_pool *buf_pool,
						 uint32_t *num_of_free_elements);

DOCA_STABLE
doca_error_t doca_buf_pool_get_user_data(const struct doca_buf_pool *buf_pool,
					 union doca_data *user_data);

DOCA_STABLE
doca_error_t doca_buf_pool_get_element_alignment(const struct doca_buf_pool *buf_pool,
						 size_t *element_alignment);

#ifdef __cplusplus
}
#endif

#endif /* DOCA_BUF_POOL_H */
