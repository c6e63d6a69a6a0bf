/*
 * dpakit ABI for C kernels: the C mirror of the dpakit-abi crate.
 *
 * Every struct here has the same size, alignment and field offsets as its Rust twin; the crate's
 * tests compile this header for the DPA (riscv64) and the host and check each one.
 */
#ifndef DPAKIT_ABI_H
#define DPAKIT_ABI_H

#include <stddef.h>
#include <stdint.h>

#define DPAKIT_MAX_IMM_DATA_LEN 32u
#define DPAKIT_HEADER_LEN 8u
#define DPAKIT_PAYLOAD_LEN (DPAKIT_MAX_IMM_DATA_LEN - DPAKIT_HEADER_LEN)

/* Values of doca_dpa_dev_submit_flag. */
#define DPAKIT_SUBMIT_FLAG_NONE 0u
#define DPAKIT_SUBMIT_FLAG_FLUSH (1u << 0)
#define DPAKIT_SUBMIT_FLAG_OPTIMIZE_REPORTS (1u << 1)

/* Opcodes of the kit's own messages. */
#define DPAKIT_OP_ECHO 0x0001u
#define DPAKIT_OP_PING_PONG 0x0002u
#define DPAKIT_OP_DMA_OFFLOAD 0x0003u
#define DPAKIT_OP_OFFLOAD_RESULT 0x0004u

/* Header flag of a DMA-offload descriptor: copy only; the result's checksum is 0. */
#define DPAKIT_DMA_OFFLOAD_FLAG_NO_CHECKSUM (1u << 0)

/* The status an OFFLOAD_RESULT carries for a refused request (DOCA_ERROR_INVALID_VALUE). */
#define DPAKIT_STATUS_INVALID_VALUE 6u

struct dpakit_msg_header {
	uint16_t opcode;
	uint16_t flags;
	uint32_t seq;
};

/* One MsgQ immediate: 32 bytes, 32-byte aligned so it never straddles a cache line. */
struct dpakit_imm_message {
	struct dpakit_msg_header header;
	uint8_t payload[DPAKIT_PAYLOAD_LEN];
} __attribute__((aligned(32)));

struct dpakit_echo {
	uint64_t token;
	uint64_t timestamp_ns;
	uint64_t tag;
};

struct dpakit_ping_pong {
	uint64_t count;
	uint64_t started_ns;
	uint64_t tag;
};

struct dpakit_dma_offload_desc {
	uint64_t src_offset;
	uint64_t dst_offset;
	uint64_t length;
};

struct dpakit_offload_result {
	uint32_t status; /* doca_error_t value */
	uint32_t reserved;
	uint64_t length;
	uint64_t checksum;
};

/* Argument block of the echo and ping-pong kernels (device address passed as the thread arg). */
struct dpakit_msgq_path_args {
	uint64_t consumer_completion; /* doca_dpa_dev_comch_consumer_completion_t */
	uint64_t consumer;            /* doca_dpa_dev_comch_consumer_t */
	uint64_t producer;            /* doca_dpa_dev_comch_producer_t */
	uint64_t producer_completion; /* doca_dpa_dev_completion_t */
	uint32_t cpu_consumer_id;
	uint32_t submit_flags;
};

/* Argument block of the DMA-offload kernel. */
struct dpakit_dma_offload_args {
	struct dpakit_msgq_path_args path;
	uint32_t src_mmap; /* doca_dpa_dev_mmap_t */
	uint32_t dst_mmap; /* doca_dpa_dev_mmap_t */
	uint64_t src_base;
	uint64_t src_len;
	uint64_t dst_base;
	uint64_t dst_len;
};

/* Argument block of one thread of the multi-thread (ranked echo) kernel. */
struct dpakit_ranked_path_args {
	struct dpakit_msgq_path_args path;
	uint32_t rank;
	uint32_t reserved;
};

/* Writable per-thread state of message-serving kernels (thread local storage). */
struct dpakit_serve_state {
	uint32_t report_every;
	uint32_t sends;
};

_Static_assert(sizeof(struct dpakit_msg_header) == DPAKIT_HEADER_LEN, "header is 8 bytes");
_Static_assert(sizeof(struct dpakit_imm_message) == DPAKIT_MAX_IMM_DATA_LEN, "message is 32 bytes");
_Static_assert(_Alignof(struct dpakit_imm_message) == 32, "message is 32-byte aligned");
_Static_assert(sizeof(struct dpakit_echo) <= DPAKIT_PAYLOAD_LEN, "echo fits the payload");
_Static_assert(sizeof(struct dpakit_ping_pong) <= DPAKIT_PAYLOAD_LEN, "ping-pong fits the payload");
_Static_assert(sizeof(struct dpakit_dma_offload_desc) <= DPAKIT_PAYLOAD_LEN, "descriptor fits the payload");
_Static_assert(sizeof(struct dpakit_offload_result) <= DPAKIT_PAYLOAD_LEN, "result fits the payload");

#endif /* DPAKIT_ABI_H */
