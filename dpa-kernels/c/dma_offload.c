/*
 * dma_offload_c: the DMA-offload kernel in C, the twin of dpa-kernels/src/dma_offload.rs.
 *
 * For each DMA_OFFLOAD descriptor: checks that both ranges lie inside the ones the argument
 * block gives, computes the checksum of the source bytes read through the mmap's device pointer
 * (unless the header carries DPAKIT_DMA_OFFLOAD_FLAG_NO_CHECKSUM), DMA-copies them to the
 * destination and replies, as the copy's immediate, with an OFFLOAD_RESULT carrying the
 * checksum. Anything else (another opcode, a range outside) is answered with status
 * DPAKIT_STATUS_INVALID_VALUE and no copy.
 *
 * `arg` is the device address of a struct dpakit_dma_offload_args.
 */
#include <doca_dpa_dev_buf.h>
#include "dpakit_kernel.h"
#include "serve.h"

/* A little-endian 64-bit word at `p` (any alignment). */
static uint64_t load_le64(const uint8_t *p)
{
	uint64_t word;

	__builtin_memcpy(&word, p, sizeof(word));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	word = __builtin_bswap64(word);
#endif
	return word;
}

/* checksum64 of dpakit-abi: FNV-1a over little-endian 64-bit words (the tail zero-padded),
 * folded with the length. */
static uint64_t checksum64(const uint8_t *data, uint64_t len)
{
	const uint64_t prime = 0x00000100000001b3ull;
	uint64_t hash = 0xcbf29ce484222325ull;
	uint64_t i = 0;

	for (; len - i >= 8; i += 8)
		hash = (hash ^ load_le64(data + i)) * prime;
	if (i < len) {
		uint64_t word = 0;

		for (uint64_t b = 0; i + b < len; b++)
			word |= (uint64_t)data[i + b] << (8 * b);
		hash = (hash ^ word) * prime;
	}
	return (hash ^ len) * prime;
}

/* Whether [offset, offset + length) fits in [0, range) without overflowing. */
static int fits(uint64_t offset, uint64_t length, uint64_t range)
{
	uint64_t end = offset + length;

	return end >= offset && end <= range;
}

/* The 32-byte reply carrying `result`. */
static struct dpakit_imm_message result_message(uint32_t seq,
						 const struct dpakit_offload_result *result)
{
	struct dpakit_imm_message msg = {0};

	msg.header.opcode = DPAKIT_OP_OFFLOAD_RESULT;
	msg.header.seq = seq;
	__builtin_memcpy(msg.payload, result, sizeof(*result));
	return msg;
}

DPAKIT_INLINE void dma_offload_reply(const void *ctx, const struct dpakit_msgq_path_args *path,
				     doca_dpa_dev_comch_consumer_completion_element_t element,
				     uint32_t flags)
{
	const struct dpakit_dma_offload_args *args = ctx;
	struct dpakit_imm_message request = dpakit_message(element);
	struct dpakit_offload_result result = {0};
	struct dpakit_dma_offload_desc desc;
	struct dpakit_imm_message reply;

	__builtin_memcpy(&desc, request.payload, sizeof(desc));
	if (request.header.opcode != DPAKIT_OP_DMA_OFFLOAD ||
	    !fits(desc.src_offset, desc.length, args->src_len) ||
	    !fits(desc.dst_offset, desc.length, args->dst_len)) {
		result.status = DPAKIT_STATUS_INVALID_VALUE;
		reply = result_message(request.header.seq, &result);
		doca_dpa_dev_comch_producer_post_send_imm_only(path->producer, path->cpu_consumer_id,
							       (const uint8_t *)&reply,
							       sizeof(reply), flags);
		return;
	}

	uint64_t src_addr = args->src_base + desc.src_offset;
	uint64_t dst_addr = args->dst_base + desc.dst_offset;

	result.length = desc.length;
	if ((request.header.flags & DPAKIT_DMA_OFFLOAD_FLAG_NO_CHECKSUM) == 0) {
		doca_dpa_dev_uintptr_t src =
			doca_dpa_dev_mmap_get_external_ptr(args->src_mmap, src_addr);

		result.checksum = checksum64((const uint8_t *)(uintptr_t)src, desc.length);
	}
	reply = result_message(request.header.seq, &result);
	doca_dpa_dev_comch_producer_dma_copy(path->producer, path->cpu_consumer_id, args->dst_mmap,
					     dst_addr, args->src_mmap, src_addr,
					     (size_t)desc.length, (const uint8_t *)&reply,
					     sizeof(reply), flags);
}

DPAKIT_THREAD_KERNEL(dma_offload_c);

__dpa_global__ void dma_offload_c(uint64_t arg)
{
	const struct dpakit_dma_offload_args *args =
		dpakit_arg("dma_offload_c", arg, _Alignof(struct dpakit_dma_offload_args));

	if (args == NULL)
		return;
	dpakit_serve("dma_offload_c", args, &args->path, dma_offload_reply);
}
