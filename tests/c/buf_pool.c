/*
 * A buffer pool as DOCA programs use one: memory registered in an mmap on the first device,
 * a pool of fixed-size elements aligned to a cache line carved out of it, every element taken,
 * filled and handed back by reference count, then taken again. Checks each element's place and
 * that misuse (an empty pool, properties after start, stop or destroy with buffers out, a
 * memrange too small) is refused with DOCA's codes. Exits non-zero if anything differs.
 */
#define DOCA_ALLOW_EXPERIMENTAL_API

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <doca_buf.h>
#include <doca_buf_pool.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_log.h>
#include <doca_mmap.h>
#include <doca_version.h>

DOCA_LOG_REGISTER(BUF_POOL_TEST);

#define NUM_ELEMENTS 16
#define ELEMENT_SIZE 200
#define ALIGNMENT 64
#define STRIDE 256 /* ELEMENT_SIZE rounded up to ALIGNMENT */

static int failures;

#define CHECK(call, code)                                                                          \
	do {                                                                                       \
		doca_error_t got_ = (call);                                                        \
		if (got_ != (code)) {                                                              \
			DOCA_LOG_ERR("line %d: %s returned %s, expected %s", __LINE__, #call,      \
				     doca_error_get_name(got_), doca_error_get_name(code));        \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define EXPECT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			DOCA_LOG_ERR("line %d: %s does not hold", __LINE__, #cond);                \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Takes every element, checks where it lies and writes its index into it. */
static void take_all(struct doca_buf_pool *pool, char *aligned, struct doca_buf **bufs)
{
	int seen[NUM_ELEMENTS] = {0};
	uint32_t free_count = 0;
	int i;

	for (i = 0; i < NUM_ELEMENTS; i++) {
		void *head = NULL, *data = NULL;
		size_t len = 0, data_len = 1;
		long offset;

		CHECK(doca_buf_pool_buf_alloc(pool, &bufs[i]), DOCA_SUCCESS);
		CHECK(doca_buf_get_head(bufs[i], &head), DOCA_SUCCESS);
		CHECK(doca_buf_get_len(bufs[i], &len), DOCA_SUCCESS);
		CHECK(doca_buf_get_data(bufs[i], &data), DOCA_SUCCESS);
		CHECK(doca_buf_get_data_len(bufs[i], &data_len), DOCA_SUCCESS);
		EXPECT(len == ELEMENT_SIZE && data == head && data_len == 0);
		offset = (char *)head - aligned;
		EXPECT(offset >= 0 && offset % STRIDE == 0 && offset / STRIDE < NUM_ELEMENTS);
		if (offset >= 0 && offset % STRIDE == 0 && offset / STRIDE < NUM_ELEMENTS) {
			EXPECT(seen[offset / STRIDE] == 0);
			seen[offset / STRIDE] = 1;
		}
		memset(head, 'a' + i, ELEMENT_SIZE);
		CHECK(doca_buf_set_data_len(bufs[i], ELEMENT_SIZE), DOCA_SUCCESS);
	}
	CHECK(doca_buf_pool_get_num_free_elements(pool, &free_count), DOCA_SUCCESS);
	EXPECT(free_count == 0);
}

int main(void)
{
	struct doca_devinfo **list;
	uint32_t n = 0, count = 0;
	struct doca_dev *dev = NULL;
	struct doca_mmap *mmap = NULL, *small = NULL;
	struct doca_buf_pool *pool = NULL, *too_big = NULL;
	struct doca_buf *bufs[NUM_ELEMENTS], *extra = NULL;
	union doca_data user_data = {.u64 = 7}, got_data = {.u64 = 0};
	size_t alignment = 0, mem_len = NUM_ELEMENTS * STRIDE + ALIGNMENT;
	char *mem = malloc(mem_len), *aligned;
	int i;

	DOCA_LOG_INFO("DOCA SDK %s, runtime %s", doca_version(), doca_version_runtime());
	if (mem == NULL)
		return EXIT_FAILURE;
	aligned = (char *)(((uintptr_t)mem + ALIGNMENT - 1) & ~(uintptr_t)(ALIGNMENT - 1));

	CHECK(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
	if (n == 0) {
		DOCA_LOG_ERR("no device");
		return EXIT_FAILURE;
	}
	CHECK(doca_dev_open(list[0], &dev), DOCA_SUCCESS);
	CHECK(doca_devinfo_destroy_list(list), DOCA_SUCCESS);

	CHECK(doca_mmap_create(&mmap), DOCA_SUCCESS);
	CHECK(doca_mmap_add_dev(mmap, dev), DOCA_SUCCESS);
	CHECK(doca_mmap_set_memrange(mmap, mem, mem_len), DOCA_SUCCESS);
	CHECK(doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);

	CHECK(doca_buf_pool_create(0, ELEMENT_SIZE, mmap, &pool), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_buf_pool_create(NUM_ELEMENTS, ELEMENT_SIZE, mmap, &pool), DOCA_SUCCESS);
	CHECK(doca_buf_pool_set_element_alignment(pool, 48), DOCA_ERROR_INVALID_VALUE);
	CHECK(doca_buf_pool_set_element_alignment(pool, ALIGNMENT), DOCA_SUCCESS);
	CHECK(doca_buf_pool_set_user_data(pool, user_data), DOCA_SUCCESS);
	/* The mmap must be started first. */
	CHECK(doca_buf_pool_start(pool), DOCA_ERROR_BAD_STATE);
	CHECK(doca_mmap_start(mmap), DOCA_SUCCESS);
	CHECK(doca_buf_pool_buf_alloc(pool, &extra), DOCA_ERROR_BAD_STATE);
	CHECK(doca_buf_pool_start(pool), DOCA_SUCCESS);
	CHECK(doca_buf_pool_set_element_alignment(pool, 8), DOCA_ERROR_BAD_STATE);

	CHECK(doca_buf_pool_get_num_elements(pool, &count), DOCA_SUCCESS);
	EXPECT(count == NUM_ELEMENTS);
	CHECK(doca_buf_pool_get_element_alignment(pool, &alignment), DOCA_SUCCESS);
	EXPECT(alignment == ALIGNMENT);
	CHECK(doca_buf_pool_get_user_data(pool, &got_data), DOCA_SUCCESS);
	EXPECT(got_data.u64 == 7);

	take_all(pool, aligned, bufs);
	CHECK(doca_buf_pool_buf_alloc(pool, &extra), DOCA_ERROR_EMPTY);
	CHECK(doca_buf_pool_stop(pool), DOCA_ERROR_IN_USE);
	CHECK(doca_buf_pool_destroy(pool), DOCA_ERROR_IN_USE);

	/* A second reference keeps an element out until both are dropped. */
	CHECK(doca_buf_inc_refcount(bufs[0], NULL), DOCA_SUCCESS);
	for (i = 0; i < NUM_ELEMENTS; i++)
		CHECK(doca_buf_dec_refcount(bufs[i], NULL), DOCA_SUCCESS);
	CHECK(doca_buf_pool_get_num_free_elements(pool, &count), DOCA_SUCCESS);
	EXPECT(count == NUM_ELEMENTS - 1);
	CHECK(doca_buf_dec_refcount(bufs[0], NULL), DOCA_SUCCESS);
	CHECK(doca_buf_pool_get_num_free_elements(pool, &count), DOCA_SUCCESS);
	EXPECT(count == NUM_ELEMENTS);

	/* Elements come back in the same places. */
	take_all(pool, aligned, bufs);
	for (i = 0; i < NUM_ELEMENTS; i++)
		CHECK(doca_buf_dec_refcount(bufs[i], NULL), DOCA_SUCCESS);

	CHECK(doca_buf_pool_stop(pool), DOCA_SUCCESS);
	CHECK(doca_buf_pool_destroy(pool), DOCA_SUCCESS);

	/* A memrange smaller than the elements need fails at start. */
	CHECK(doca_mmap_create(&small), DOCA_SUCCESS);
	CHECK(doca_mmap_add_dev(small, dev), DOCA_SUCCESS);
	CHECK(doca_mmap_set_memrange(small, mem, ELEMENT_SIZE * 2), DOCA_SUCCESS);
	CHECK(doca_mmap_start(small), DOCA_SUCCESS);
	CHECK(doca_buf_pool_create(3, ELEMENT_SIZE, small, &too_big), DOCA_SUCCESS);
	CHECK(doca_buf_pool_start(too_big), DOCA_ERROR_INITIALIZATION);
	CHECK(doca_buf_pool_destroy(too_big), DOCA_SUCCESS);
	CHECK(doca_mmap_destroy(small), DOCA_SUCCESS);

	CHECK(doca_mmap_destroy(mmap), DOCA_SUCCESS);
	CHECK(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);

	if (failures != 0) {
		DOCA_LOG_ERR("%d check(s) failed", failures);
		return EXIT_FAILURE;
	}
	DOCA_LOG_INFO("buffer pool: %d elements taken, returned and taken again", NUM_ELEMENTS);
	return EXIT_SUCCESS;
}
