/*
 * echo_c: the echo kernel in C, the twin of dpa-kernels/src/echo.rs. Every immediate that
 * arrives goes straight back, byte for byte.
 *
 * `arg` is the device address of a struct dpakit_msgq_path_args.
 */
#include "dpakit_kernel.h"
#include "serve.h"

DPAKIT_INLINE void echo_reply(const void *ctx, const struct dpakit_msgq_path_args *path,
			      doca_dpa_dev_comch_consumer_completion_element_t element,
			      uint32_t flags)
{
	uint32_t len;
	const uint8_t *imm = dpakit_imm(element, &len);

	(void)ctx;
	doca_dpa_dev_comch_producer_post_send_imm_only(path->producer, path->cpu_consumer_id, imm,
						       len, flags);
}

DPAKIT_THREAD_KERNEL(echo_c);

__dpa_global__ void echo_c(uint64_t arg)
{
	const struct dpakit_msgq_path_args *path =
		dpakit_arg("echo_c", arg, _Alignof(struct dpakit_msgq_path_args));

	if (path == NULL)
		return;
	dpakit_serve("echo_c", path, path, echo_reply);
}
